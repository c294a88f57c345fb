#include "core/io/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <new>
#include <set>

#include <nlohmann/json.hpp>

namespace kiln {
namespace {

// Tensor bytes are copied as they are in the file, which is little-endian.
static_assert(std::endian::native == std::endian::little);

using json = nlohmann::json;

// The reference implementation's limit; a longer header is taken as hostile.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr uint64_t kMaxInt64 = uint64_t(std::numeric_limits<int64_t>::max());

struct Entry {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<Entry> entries;  // by data offset, covering the data buffer exactly
  std::map<std::string, std::string> metadata;
};

// Names and values come from the file: keep a hostile 50 MB name out of messages.
std::string in_quotes(std::string_view s) {
  constexpr size_t kMax = 200;
  if (s.size() <= kMax) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kMax)) + "...'";
}

std::string entry_str(std::string_view name) { return "entry " + in_quotes(name); }

// data_offsets as the header writes them.
std::string range_str(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}
// A half-open byte range of the data buffer.
std::string bytes_str(uint64_t begin, uint64_t end) {
  return "bytes [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// ---- reading ----

// The header length N from the first 8 bytes, checked against the file size.
uint64_t header_length(const std::byte* prefix, uint64_t file_size) {
  KILN_USER_CHECK(file_size >= 8, "file too short: ", file_size,
                  " bytes, but a safetensors file starts with an 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, prefix, 8);
  // The messages leave the field's value out: for a file that is not a
  // safetensors file, it is the file's first 8 bytes.
  KILN_USER_CHECK(n <= kMaxHeaderBytes, "not a safetensors file: its header length field is over the limit of ",
                  kMaxHeaderBytes, " bytes");
  KILN_USER_CHECK(n <= file_size - 8, "not a safetensors file: its header length field is larger than the file (",
                  file_size - 8, " bytes follow the length field)");
  return n;
}

// nlohmann keeps the last of duplicate keys without a word; the reference
// rejects them, and silently dropping a tensor would hide a broken writer.
json parse_json(std::string_view text) {
  // nlohmann stops at a NUL as if the text ended there; JSON never holds a raw
  // one, and the reference rejects it.
  if (auto p = text.find('\0'); p != text.npos)
    KILN_FAIL("header is not valid JSON: NUL byte at offset ", p);
  std::vector<std::set<std::string>> open;  // keys seen, per object being parsed
  std::string entry, duplicate;             // current top-level key; first duplicate
  auto note = [&](int, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open.pop_back();
    } else if (event == json::parse_event_t::key) {
      const auto& key = value.get_ref<const std::string&>();
      if (open.size() == 1) entry = key;
      if (!open.back().insert(key).second && duplicate.empty())
        duplicate = open.size() == 1 ? "duplicate tensor name " + in_quotes(key)
                                     : entry_str(entry) + ": duplicate key " + in_quotes(key);
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), note);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for huge numbers
    std::string_view what = e.what();  // "[json.exception.parse_error.101] parse error at ..."
    if (auto p = what.find("] "); p != what.npos) what.remove_prefix(p + 2);
    // The message quotes the last token read, which a hostile file can make huge.
    KILN_FAIL("header is not valid JSON: ", what.substr(0, 300), what.size() > 300 ? "..." : "");
  }
  KILN_USER_CHECK(duplicate.empty(), duplicate);
  return j;
}

const json& field(const json& entry, const char* key, const std::string& name) {
  auto it = entry.find(key);
  KILN_USER_CHECK(it != entry.end(), entry_str(name), ": missing \"", key, "\"");
  return *it;
}

DType parse_dtype(const json& v, const std::string& name) {
  KILN_USER_CHECK(v.is_string(), entry_str(name), ": \"dtype\" must be a string, got ",
                  v.type_name());
  const auto& s = v.get_ref<const std::string&>();
  auto dtype = dtype_from_safetensors(s);
  KILN_USER_CHECK(dtype, entry_str(name), ": unknown dtype ", in_quotes(s),
                  " (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
  return *dtype;
}

// Also checks that the tensor's byte size (with size-0 dims counted as 1, as
// its strides are) fits in int64, so nothing downstream can overflow.
Shape parse_shape(const json& v, DType dtype, const std::string& name) {
  KILN_USER_CHECK(v.is_array(), entry_str(name), ": \"shape\" must be a list of integers, got ",
                  v.type_name());
  Shape shape;
  std::string text = "[";
  uint64_t extent = element_size(dtype);
  bool overflow = false;
  for (const json& d : v) {
    if (d.is_number_integer() && !d.is_number_unsigned())
      KILN_FAIL(entry_str(name), ": negative size ", d.get<int64_t>(), " in \"shape\"");
    KILN_USER_CHECK(d.is_number_unsigned(), entry_str(name),
                    ": \"shape\" must be a list of non-negative integers, found a ",
                    d.type_name());
    uint64_t s = d.get<uint64_t>();
    overflow |= s > kMaxInt64 || __builtin_mul_overflow(extent, std::max<uint64_t>(s, 1), &extent);
    shape.push_back(int64_t(s));
    if (text.size() < 200) text += (text.size() > 1 ? ", " : "") + std::to_string(s);
  }
  KILN_USER_CHECK(!overflow && extent <= kMaxInt64, entry_str(name), ": shape ", text,
                  "] is too large: its size in bytes overflows");
  return shape;
}

Entry parse_entry(const std::string& name, const json& v, uint64_t data_size) {
  KILN_USER_CHECK(v.is_object(), entry_str(name), " is not an object (got ", v.type_name(), ")");
  Entry e;
  e.name = name;
  e.dtype = parse_dtype(field(v, "dtype", name), name);
  e.shape = parse_shape(field(v, "shape", name), e.dtype, name);
  const json& off = field(v, "data_offsets", name);
  KILN_USER_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
                      off[1].is_number_unsigned(),
                  entry_str(name), ": \"data_offsets\" must be a list of two non-negative integers");
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  KILN_USER_CHECK(e.begin <= e.end, entry_str(name), ": data_offsets ", range_str(e.begin, e.end),
                  " begin after they end");
  KILN_USER_CHECK(e.end <= data_size, entry_str(name), ": data_offsets ",
                  range_str(e.begin, e.end), " end beyond the data buffer (", data_size, " bytes)");
  uint64_t nbytes = uint64_t(shape_numel(e.shape)) * element_size(e.dtype);
  KILN_USER_CHECK(e.end - e.begin == nbytes, entry_str(name), ": data_offsets ",
                  range_str(e.begin, e.end), " hold ", e.end - e.begin, " bytes, but ",
                  safetensors_name(e.dtype), " with shape ", shape_str(e.shape), " needs ",
                  nbytes);
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v) {
  std::map<std::string, std::string> out;
  if (v.is_null()) return out;  // the reference writes no key, but accepts null
  KILN_USER_CHECK(v.is_object(), "\"__metadata__\" must be an object of strings, got ",
                  v.type_name());
  for (const auto& [key, value] : v.items()) {
    KILN_USER_CHECK(value.is_string(), "\"__metadata__\" value for ", in_quotes(key),
                    " must be a string, got ", value.type_name());
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// Like the reference: tensors must tile the data buffer, with no shared bytes,
// no holes and nothing after the last one. Sorts the entries into file order.
void check_layout(std::vector<Entry>& entries, uint64_t data_size) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  uint64_t cursor = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < cursor)
      KILN_FAIL(entry_str(e.name), ": data_offsets ", range_str(e.begin, e.end), " overlap ",
                entry_str(prev->name), " ", range_str(prev->begin, prev->end));
    KILN_USER_CHECK(e.begin == cursor, bytes_str(cursor, e.begin),
                    " of the data buffer belong to no tensor (a hole before ", entry_str(e.name),
                    ")");
    cursor = e.end;
    prev = &e;
  }
  KILN_USER_CHECK(cursor == data_size, bytes_str(cursor, data_size),
                  " of the data buffer belong to no tensor (", data_size - cursor,
                  " bytes after the last tensor)");
}

Header parse_header(std::string_view text, uint64_t data_size) {
  json j = parse_json(text);
  KILN_USER_CHECK(j.is_object(), "header is not a JSON object (got ", j.type_name(), ")");
  Header h;
  for (const auto& [key, value] : j.items()) {
    if (key == kMetadataKey) h.metadata = parse_metadata(value);
    else h.entries.push_back(parse_entry(key, value, data_size));
  }
  check_layout(h.entries, data_size);
  return h;
}

// Gives each entry its own storage; fill(entry, dst) copies its bytes in, in
// file order. Only called once the header passed every check, so every
// allocation is bounded by the size of the data buffer.
template <class Fill>
SafetensorsFile materialize(Header& h, Fill&& fill) {
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  out.tensors.reserve(h.entries.size());
  for (Entry& e : h.entries) {
    Tensor t = Tensor::empty(std::move(e.shape), e.dtype);
    size_t nbytes = e.end - e.begin;
    if (nbytes > 0) fill(e, t.raw_data());
    if (e.dtype == DType::Bool) {
      // Any byte but 0 or 1 in a C++ bool is undefined behaviour; read it as true.
      auto* p = static_cast<unsigned char*>(t.raw_data());
      for (size_t i = 0; i < nbytes; ++i) p[i] = p[i] != 0;
    }
    out.tensors.emplace_back(std::move(e.name), std::move(t));
  }
  return out;
}

// Runs fn, turning a user error into a Status that names `file`.
template <class Fn>
auto guarded(const std::string& file, Fn&& fn) -> Expected<decltype(fn())> {
  try {
    return fn();
  } catch (const Error& e) {
    return Status::error(e.what(), SourceLocation{file, 0});
  } catch (const std::bad_alloc&) {
    return Status::error("out of memory", SourceLocation{file, 0});
  }
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

void read_exact(std::FILE* f, void* dst, size_t n) {
  if (std::fread(dst, 1, n, f) == n) return;
  KILN_FAIL(std::ferror(f) ? "read error: " + std::string(std::strerror(errno))
                           : std::string("file ended early (changed while being read?)"));
}

// ---- writing ----

// The reference orders tensors by its Dtype enum, descending (which sorts by
// alignment), then by name; this is that order restricted to our dtypes.
int layout_rank(DType t) {
  switch (t) {
    case DType::Int64: return 0;
    case DType::Float64: return 1;
    case DType::Float32: return 2;
    case DType::Int32: return 3;
    case DType::BFloat16: return 4;
    case DType::Float16: return 5;
    case DType::Int16: return 6;
    case DType::Int8: return 7;
    case DType::UInt8: return 8;
    case DType::Bool: return 9;
  }
  return 10;
}

struct Layout {
  std::string header;  // the JSON, padded with spaces to a multiple of 8 bytes
  std::vector<std::pair<const std::string*, const Tensor*>> order;  // file order
  uint64_t data_size = 0;
};

std::string json_string(const std::string& s) {
  try {
    return json(s).dump();  // strict: a name that is not UTF-8 is refused, not replaced
  } catch (const json::type_error& e) {  // invalid UTF-8
    KILN_FAIL("a tensor name or metadata string is not valid UTF-8 (", e.what(), ")");
  }
}

Layout plan(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  Layout l;
  std::set<std::string_view> names;
  for (const auto& [name, t] : tensors) {
    KILN_USER_CHECK(name != kMetadataKey, "a tensor cannot be named \"__metadata__\"");
    KILN_USER_CHECK(names.insert(name).second, "duplicate tensor name ", in_quotes(name));
    KILN_USER_CHECK(!t.is_meta(), "tensor ", in_quotes(name), " has no data (",
                    t.defined() ? "a meta tensor" : "undefined", ")");
    l.order.emplace_back(&name, &t);
  }
  std::stable_sort(l.order.begin(), l.order.end(), [](const auto& a, const auto& b) {
    int ra = layout_rank(a.second->dtype()), rb = layout_rank(b.second->dtype());
    return ra != rb ? ra < rb : *a.first < *b.first;
  });
  std::string& h = l.header;
  h = "{";
  if (!metadata.empty()) {
    for (const auto& [k, v] : metadata) {  // dump() would throw a bare type_error
      json_string(k);
      json_string(v);
    }
    h += "\"__metadata__\":" + json(metadata).dump();
  }
  for (const auto& [name, t] : l.order) {
    uint64_t nbytes = uint64_t(t->numel()) * t->itemsize();
    std::string shape;
    for (int64_t s : t->sizes()) {
      if (!shape.empty()) shape += ',';
      shape += std::to_string(s);
    }
    if (h.size() > 1) h += ',';
    h += json_string(*name) + ":{\"dtype\":\"" + std::string(safetensors_name(t->dtype())) +
         "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(l.data_size) + "," +
         std::to_string(l.data_size + nbytes) + "]}";
    l.data_size += nbytes;
  }
  h += '}';
  h.append((8 - h.size() % 8) % 8, ' ');
  return l;
}

// Hands sink(pointer, size) the file's bytes in order.
template <class Sink>
void emit(const Layout& l, Sink&& sink) {
  uint64_t n = l.header.size();
  sink(&n, 8);
  sink(l.header.data(), l.header.size());
  for (const auto& [name, t] : l.order) {
    Tensor c = t->contiguous();
    if (c.numel() > 0) sink(c.raw_data(), size_t(c.numel()) * c.itemsize());
  }
}

// Removes the temporary file on every way out but a successful rename.
struct TempFile {
  std::string path;
  bool keep = false;
  ~TempFile() {
    if (!keep) std::remove(path.c_str());
  }
};

}  // namespace

const Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

Expected<SafetensorsFile> parse_safetensors(std::span<const std::byte> bytes,
                                            const std::string& display_name) {
  return guarded(display_name, [&] {
    uint64_t n = header_length(bytes.data(), bytes.size());
    std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, n);
    std::span<const std::byte> data = bytes.subspan(8 + n);
    Header h = parse_header(text, data.size());
    return materialize(h, [&](const Entry& e, void* dst) {
      std::memcpy(dst, data.data() + e.begin, e.end - e.begin);
    });
  });
}

Expected<SafetensorsFile> read_safetensors(const std::string& path) {
  return guarded(path, [&] {
    std::error_code ec;
    uint64_t size = std::filesystem::file_size(path, ec);
    KILN_USER_CHECK(!ec, "cannot read file: ", ec.message());
    File f(std::fopen(path.c_str(), "rb"));
    KILN_USER_CHECK(f, "cannot open file: ", std::strerror(errno));
    std::byte prefix[8];
    read_exact(f.get(), prefix, std::min<uint64_t>(size, 8));
    uint64_t n = header_length(prefix, size);
    std::string text(n, '\0');
    read_exact(f.get(), text.data(), n);
    Header h = parse_header(text, size - 8 - n);
    // Entries tile the data buffer in order, so reading straight on is right.
    return materialize(h, [&](const Entry& e, void* dst) {
      read_exact(f.get(), dst, e.end - e.begin);
    });
  });
}

Expected<std::vector<std::byte>> serialize_safetensors(
    const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  return guarded("", [&] {
    Layout l = plan(tensors, metadata);
    std::vector<std::byte> out;
    out.reserve(8 + l.header.size() + l.data_size);
    emit(l, [&](const void* p, size_t n) {
      auto* b = static_cast<const std::byte*>(p);
      out.insert(out.end(), b, b + n);
    });
    return out;
  });
}

Status write_safetensors(const std::string& path, const NamedTensors& tensors,
                         const std::map<std::string, std::string>& metadata) {
  auto written = guarded(path, [&] {
    Layout l = plan(tensors, metadata);
    TempFile tmp{path + ".tmp"};
    File f(std::fopen(tmp.path.c_str(), "wb"));
    KILN_USER_CHECK(f, "cannot create ", in_quotes(tmp.path), ": ", std::strerror(errno));
    emit(l, [&](const void* p, size_t n) {
      KILN_USER_CHECK(std::fwrite(p, 1, n, f.get()) == n, "write failed: ", std::strerror(errno));
    });
    // fsync before the rename, so a crash cannot leave a renamed but empty file.
    KILN_USER_CHECK(std::fflush(f.get()) == 0 && ::fsync(fileno(f.get())) == 0,
                    "write failed: ", std::strerror(errno));
    KILN_USER_CHECK(std::fclose(f.release()) == 0, "write failed: ", std::strerror(errno));
    std::error_code ec;
    std::filesystem::rename(tmp.path, path, ec);
    KILN_USER_CHECK(!ec, "cannot rename ", in_quotes(tmp.path), " to the file: ", ec.message());
    tmp.keep = true;
    return true;
  });
  return written.status();
}

}  // namespace kiln
