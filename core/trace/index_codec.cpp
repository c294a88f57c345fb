#include "core/trace/index_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kiln::trace {
namespace {

constexpr char kMagic[4] = {'K', 'L', 'N', 'X'};

// One list of fields per struct, walked by both the writer and the reader, so
// the two directions cannot drift apart.
template <class Ar>
void fields(Ar& ar, StackFrame& f) { ar(f.file, f.line, f.function, f.code); }
template <class Ar>
void fields(Ar& ar, Diagnostic& d) { ar(d.file, d.line, d.message); }
template <class Ar, class A, class B>
void fields(Ar& ar, std::pair<A, B>& p) { ar(p.first, p.second); }
template <class Ar>
void fields(Ar& ar, SourceFile& f) { ar(f.path, f.size, f.rank); }
template <class Ar>
void fields(Ar& ar, PayloadRef& p) { ar(p.file, p.offset, p.length, p.first_line, p.line_count, p.encoding); }
template <class Ar>
void fields(Ar& ar, CompileId& id) { ar(id.compiled_autograd_id, id.frame_id, id.frame_compile_id); }
template <class Ar>
void fields(Ar& ar, Artifact& a) {
  ar(a.name, a.base, a.tag, a.encoding, a.filename, a.attempt, a.line, a.payload, a.graph);
}
template <class Ar>
void fields(Ar& ar, GraphBreak& g) {
  ar(g.reason, g.detail, g.file, g.line, g.user_stack, g.record_line, g.failure);
}
template <class Ar>
void fields(Ar& ar, CompilationMetrics& m) {
  ar(m.compile_id, m.co_name, m.co_filename, m.co_firstlineno, m.cache_size, m.accumulated_cache_size,
     m.guard_count, m.shape_env_guard_count, m.graph_op_count, m.graph_node_count, m.graph_input_count,
     m.fail_user_frame_lineno, m.start_time, m.entire_frame_compile_time_s, m.backend_compile_time_s,
     m.inductor_compile_time_s, m.code_gen_time_s, m.dynamo_time_before_restart_s, m.fail_type, m.fail_reason,
     m.fail_user_frame_filename, m.restart_reasons, m.line, m.json);
}
template <class Ar>
void fields(Ar& ar, OtherMetrics& m) { ar(m.tag, m.line, m.json); }
template <class Ar>
void fields(Ar& ar, ShapeEvent& s) {
  ar(s.kind, s.symbol, s.value, s.range, s.source, s.expr, s.reason, s.user_file, s.user_line, s.line, s.prefix,
     s.symbol_sources, s.user_stack, s.method, s.arguments);
}
template <class Ar>
void fields(Ar& ar, ReproInput& r) {
  ar(r.name, r.kind, r.shape, r.stride, r.dtype, r.device, r.storage_offset, r.requires_grad, r.is_leaf,
     r.storage, r.storage_bytes, r.storage_hash, r.value, r.line);
}
template <class Ar>
void fields(Ar& ar, CompileEntry& e) {
  ar(e.id, e.attempt, e.occurrence, e.label, e.file, e.rank, e.first_line, e.started, e.stack, e.artifacts,
     e.graph_breaks, e.recompile_reasons, e.metrics, e.other_metrics, e.shape_events, e.chromium_events, e.inputs,
     e.tag_counts);
}
template <class Ar>
void fields(Ar& ar, Trace& t) {
  ar(t.kind, t.path, t.files, t.entries, t.diagnostics, t.tag_counts, t.unknown_tags, t.records, t.bytes, t.run_chromium_events);
}

// Integers as LEB128 varints (zigzag for signed ones): most are small line
// numbers and offsets, so the blob stays a fraction of the log's size.
class Writer {
 public:
  std::vector<uint8_t> out;

  template <class... Ts>
  void operator()(Ts&... vs) { (put(vs), ...); }

  void varint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    out.push_back(uint8_t(v));
  }

 private:
  void put(bool& v) { out.push_back(v ? 1 : 0); }
  void put(double& v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(bits >> (8 * i)));
  }
  void put(std::string& s) {
    varint(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  template <class T>
    requires std::is_enum_v<T>
  void put(T& v) { varint(uint64_t(v)); }
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  void put(T& v) {
    if constexpr (std::is_signed_v<T>) varint((uint64_t(int64_t(v)) << 1) ^ uint64_t(int64_t(v) >> 63));
    else varint(uint64_t(v));
  }
  template <class T>
  void put(std::optional<T>& v) {
    out.push_back(v ? 1 : 0);
    if (v) put(*v);
  }
  template <class T>
  void put(std::vector<T>& v) {
    varint(v.size());
    for (T& x : v) put(x);
  }
  template <class K, class V, class C>
  void put(std::map<K, V, C>& m) {
    varint(m.size());
    for (auto& [k, v] : m) {
      K key = k;
      put(key);
      put(v);
    }
  }
  template <class T>
    requires std::is_class_v<T>
  void put(T& v) { fields(*this, v); }
};

// Every read is checked against the end; the first failure sticks and the
// rest of the walk reads nothing, so a damaged blob costs one pass at most.
class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool failed = false;
  std::string why;

  template <class... Ts>
  void operator()(Ts&... vs) { (get(vs), ...); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!need(1)) return 0;
      uint8_t b = *p_++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint too long");
    return 0;
  }
  bool at_end() const { return p_ == end_; }

 private:
  void fail(const char* what) {
    if (!failed) why = what;
    failed = true;
    p_ = end_;
  }
  bool need(size_t n) {
    if (failed) return false;
    if (size_t(end_ - p_) < n) {
      fail("truncated");
      return false;
    }
    return true;
  }
  // A count can be no larger than the bytes left (every element takes one at
  // least), so damage never turns into a huge allocation.
  size_t count() {
    uint64_t n = varint();
    if (n > uint64_t(end_ - p_)) {
      fail("count past the end");
      return 0;
    }
    return size_t(n);
  }
  void get(bool& v) {
    if (!need(1)) return;
    uint8_t b = *p_++;
    if (b > 1) fail("bad boolean");
    v = b == 1;
  }
  void get(double& v) {
    if (!need(8)) return;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= uint64_t(p_[i]) << (8 * i);
    p_ += 8;
    std::memcpy(&v, &bits, 8);
  }
  void get(std::string& s) {
    size_t n = count();
    if (failed) return;
    s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
  }
  void get(PayloadEncoding& v) {
    uint64_t x = varint();
    if (x > uint64_t(PayloadEncoding::Plain)) fail("bad payload encoding");
    v = PayloadEncoding(x);
  }
  void get(TraceKind& v) {
    uint64_t x = varint();
    if (x > uint64_t(TraceKind::Minifier)) fail("bad trace kind");
    v = TraceKind(x);
  }
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  void get(T& v) {
    uint64_t x = varint();
    if constexpr (std::is_signed_v<T>) {
      int64_t w = int64_t(x >> 1) ^ -int64_t(x & 1);
      if (w < int64_t(std::numeric_limits<T>::min()) || w > int64_t(std::numeric_limits<T>::max()))
        fail("integer out of range");
      v = T(w);
    } else {
      if (x > uint64_t(std::numeric_limits<T>::max())) fail("integer out of range");
      v = T(x);
    }
  }
  template <class T>
  void get(std::optional<T>& v) {
    bool present = false;
    get(present);
    if (!present || failed) {
      v.reset();
      return;
    }
    v.emplace();
    get(*v);
  }
  template <class T>
  void get(std::vector<T>& v) {
    size_t n = count();
    v.clear();
    // Elements are far larger in memory than in the blob: a damaged count must
    // not reserve gigabytes up front, so growth beyond a little is on demand.
    v.reserve(std::min<size_t>(n, 256));
    for (size_t i = 0; i < n && !failed; ++i) get(v.emplace_back());
  }
  template <class K, class V, class C>
  void get(std::map<K, V, C>& m) {
    size_t n = count();
    m.clear();
    for (size_t i = 0; i < n && !failed; ++i) {
      K k{};
      V v{};
      get(k);
      get(v);
      m.emplace_hint(m.end(), std::move(k), std::move(v));
    }
  }
  template <class T>
    requires std::is_class_v<T>
  void get(T& v) { fields(*this, v); }

  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace

std::vector<uint8_t> encode_index(const Trace& trace) {
  Writer w;
  w.out.reserve(1 << 16);
  w.out.insert(w.out.end(), kMagic, kMagic + 4);
  w.varint(kIndexFormatVersion);
  // The walk is shared with the reader, which needs non-const access; the
  // writer only reads.
  fields(w, const_cast<Trace&>(trace));
  return std::move(w.out);
}

Expected<Trace> decode_index(const uint8_t* data, size_t size) {
  if (size < 4 || std::memcmp(data, kMagic, 4) != 0) return Status::error("stored trace index: not a Kiln index");
  Reader r(data + 4, data + size);
  uint64_t version = r.varint();
  if (r.failed) return Status::error("stored trace index: truncated header");
  if (version != kIndexFormatVersion)
    return Status::error("stored trace index has format version " + std::to_string(version) + ", this Kiln reads " +
                         std::to_string(kIndexFormatVersion));
  Trace t;
  fields(r, t);
  if (!r.failed && !r.at_end()) r.failed = true, r.why = "bytes after the end";
  if (r.failed) return Status::error("stored trace index is damaged (" + r.why + ")");
  for (const CompileEntry& e : t.entries) {
    auto bad_ref = [&](const PayloadRef& p) { return p.file >= t.files.size(); };
    bool bad = e.file >= t.files.size() && !t.files.empty();
    for (const Artifact& a : e.artifacts) bad |= bad_ref(a.payload);
    if (e.metrics) bad |= bad_ref(e.metrics->json);
    for (const OtherMetrics& m : e.other_metrics) bad |= bad_ref(m.json);
    for (const PayloadRef& p : e.chromium_events) bad |= bad_ref(p);
    if (bad) return Status::error("stored trace index is damaged (payload refers to a missing file)");
  }
  return t;
}

}  // namespace kiln::trace
