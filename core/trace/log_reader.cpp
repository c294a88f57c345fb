// The TORCH_TRACE indexer: one streaming pass over each log file.
//
// A log is a sequence of records. A record is one line, a glog prefix
// ("V1122 00:25:49.640000 785 torch/_dynamo/output_graph.py:2423] ") and a
// JSON envelope; when the envelope has "has_payload": "<md5>", the lines that
// follow and start with a tab are its payload, whose md5 (tabs removed, lines
// joined by '\n') must be that value. Blank lines are noise (tlparse skips
// them too). See torch/_logging/_internal.py (trace_structured and the trace
// formatter) for the writer.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "core/tensor/parallel.h"
#include "core/trace/file_data.h"
#include "core/trace/json_scan.h"
#include "core/trace/reader.h"
#include "core/trace/text_util.h"
#include "core/util/md5.h"

namespace kiln::trace {
namespace {

namespace fs = std::filesystem;

struct Line {
  std::string_view text;  // without the line end
  size_t offset = 0;
  int number = 0;
};

// Splits the file into lines; '\r\n' counts as a line end too.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}
  bool peek(Line& out) {
    if (!has_peeked_) {
      if (pos_ >= text_.size()) return false;
      const char* begin = text_.data() + pos_;
      const void* nl = std::memchr(begin, '\n', text_.size() - pos_);
      size_t end = nl ? size_t(static_cast<const char*>(nl) - text_.data()) : text_.size();
      peeked_.offset = pos_;
      peeked_.number = line_ + 1;
      peeked_.text = text_.substr(pos_, end - pos_);
      if (!peeked_.text.empty() && peeked_.text.back() == '\r') peeked_.text.remove_suffix(1);
      next_pos_ = end + 1;
      has_peeked_ = true;
    }
    out = peeked_;
    return true;
  }
  void advance() {
    Line unused;
    if (!peek(unused)) return;
    pos_ = next_pos_;
    ++line_;
    has_peeked_ = false;
  }
  size_t position() const { return pos_; }
  // True when the file ends without a final newline, i.e. it was cut off.
  bool ends_without_newline() const { return !text_.empty() && text_.back() != '\n'; }
  bool at_end() const { return pos_ >= text_.size(); }

 private:
  std::string_view text_;
  size_t pos_ = 0, next_pos_ = 0;
  int line_ = 0;
  Line peeked_;
  bool has_peeked_ = false;
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i)
    if (!is_digit(s[i])) return false;
  return true;
}

// Checks "L" "MMDD HH:MM:SS.ffffff" " " thread " " path ":" line "] " and
// returns the offset of the envelope, or npos with the reason in `why`.
size_t parse_glog_prefix(std::string_view s, std::string& why) {
  if (s.empty() || !std::strchr("VIWEC", s[0]) || s[0] == 0) {
    why = "expected a glog prefix such as 'V1122 00:25:49.640000 785 file.py:123] '";
    return std::string_view::npos;
  }
  if (!(digits(s, 1, 4) && s.size() > 21 && s[5] == ' ' && digits(s, 6, 2) && s[8] == ':' && digits(s, 9, 2) &&
        s[11] == ':' && digits(s, 12, 2) && s[14] == '.' && digits(s, 15, 6) && s[21] == ' ')) {
    why = "bad glog timestamp (expected 'MMDD HH:MM:SS.ffffff')";
    return std::string_view::npos;
  }
  size_t p = 22;
  size_t t = p;
  while (p < s.size() && is_digit(s[p])) ++p;
  if (p == t || p >= s.size() || s[p] != ' ') {
    why = "bad glog prefix: expected a thread id after the time";
    return std::string_view::npos;
  }
  size_t close = s.find("] ", p);
  if (close == std::string_view::npos) {
    why = "bad glog prefix: no '] ' after the source location";
    return std::string_view::npos;
  }
  size_t colon = s.rfind(':', close);
  if (colon == std::string_view::npos || colon <= p + 1 || colon + 1 == close || !digits(s, colon + 1, close - colon - 1)) {
    why = "bad glog prefix: expected 'file:line] ' after the thread id";
    return std::string_view::npos;
  }
  return close + 2;
}

// The md5 of a payload as PyTorch computed it.
Md5Digest payload_md5(std::string_view text, const PayloadRef& ref, Md5& h) {
  h.reset();
  bool first = true;
  for_each_payload_line(text.substr(ref.offset, ref.length), [&](std::string_view line) {
    if (!first) h.update("\n", 1);
    first = false;
    h.update(line);
  });
  return h.finish();
}

struct Md5Check {
  PayloadRef payload;
  Md5Digest expected;
  int line = 0;         // the envelope's
  bool at_eof = false;  // the payload runs to the end of a file with no final newline
};

struct Key {
  int64_t ca = -1, frame = -1, fc = -1;
  bool operator<(const Key& o) const { return std::tie(ca, frame, fc) < std::tie(o.ca, o.frame, o.fc); }
};

// What one envelope says, before it is attributed to an entry.
struct Record {
  std::string_view tag;
  json::Value meta;
  CompileId id;
  int attempt = 0;
  std::optional<int64_t> rank;
  bool wants_payload = false;
  bool has_payload = false;  // payload lines were found and read
  PayloadRef payload;
  int line = 0;
  size_t envelope_offset = 0;  // file offset of the envelope's first byte
  std::string_view envelope;
};

enum class Role { Start, Recompile, Chromium, Normal };

class LogIndexer {
 public:
  LogIndexer(Trace& trace, uint32_t file, const FileData& data, const ReadOptions& options)
      : trace_(trace), file_(file), path_(trace.files[file].path), data_(data), text_(data.text()), lines_(text_), options_(options) {}

  Status run();

 private:
  using Handler = void (LogIndexer::*)(Record&);

  void diag(int line, std::string message) { trace_.diagnostics.push_back({path_, line, std::move(message)}); }
  bool read_envelope(const Line& line, size_t env_start, Record& r);
  void read_payload(Record& r, std::string_view expected_md5, int envelope_line);
  void verify_payloads();
  void skip_payload_lines();
  void dispatch(Record& r);
  int entry_for(const Record& r, Role role);
  CompileEntry& new_entry(const Key& key, const Record& r);
  void flush_pending(const Key& key, int entry);
  void finish();

  // Handlers, one per kind of record.
  void on_str(Record& r);
  void on_dynamo_start(Record& r);
  void on_stage(Record& r);
  void on_artifact(Record& r);
  void on_output_code(Record& r);
  void on_metrics(Record& r);
  void on_other_metrics(Record& r);
  void on_chromium(Record& r);
  void on_shape_event(Record& r);
  void on_counted(Record& r);
  void on_unknown(Record& r);

  Artifact& add_artifact(CompileEntry& e, std::string_view base, const Record& r);
  std::vector<StackFrame> read_stack(const json::Value& v, int line);
  std::string interned(const json::Value& v, int line, bool& ok);
  void read_graph_break(CompileEntry& e, const Artifact& a);
  void read_recompile_reasons(CompileEntry& e, const Artifact& a);
  // Where the record's metadata object lies in the file.
  PayloadRef meta_ref(const Record& r) const {
    return {file_, r.envelope_offset + size_t(r.meta.text.data() - r.envelope.data()), r.meta.text.size(), r.line, 1,
            PayloadEncoding::Plain};
  }
  void count_tag(CompileEntry* e, std::string_view tag);
  static const std::unordered_map<std::string_view, Handler>& handlers();

  Trace& trace_;
  uint32_t file_;
  std::string path_;
  const FileData& data_;
  std::string_view text_;
  LineReader lines_;
  const ReadOptions& options_;
  std::vector<json::Member> members_;  // reused for every envelope
  std::unordered_map<int64_t, std::string> strings_;  // the {"str": [text, id]} intern table
  std::map<Key, int> current_;                        // the latest entry of each compile id
  std::map<Key, std::vector<PayloadRef>> pending_;    // chromium events not yet attributed
  std::vector<Md5Check> checks_;                      // payload md5s to verify after the scan
};

Status LogIndexer::run() {
  constexpr size_t kProgressStep = size_t(4) << 20;
  // Every 64 MB the payloads read so far are hashed and their pages let go,
  // so a log of any size is indexed in a bounded window of memory.
  constexpr size_t kWindow = size_t(64) << 20;
  size_t next_progress = kProgressStep;
  size_t next_window = kWindow;
  size_t first_diagnostic = trace_.diagnostics.size();
  Line line;
  while (lines_.peek(line)) {
    if (lines_.position() >= next_progress) {
      next_progress += kProgressStep;
      if (options_.cancel && options_.cancel->load()) return Status::error("reading cancelled", {path_, line.number});
      if (options_.progress) options_.progress(double(lines_.position()) / double(std::max<size_t>(text_.size(), 1)));
    }
    if (lines_.position() >= next_window) {
      next_window += kWindow;
      verify_payloads();
      data_.release_before(lines_.position());
    }
    lines_.advance();
    if (line.text.empty()) continue;
    if (line.text[0] == '\t') {
      diag(line.number, "payload line outside a payload: the record before it has no has_payload");
      skip_payload_lines();
      continue;
    }
    std::string why;
    size_t env_start = parse_glog_prefix(line.text, why);
    if (env_start == std::string_view::npos) {
      diag(line.number, "not a TORCH_TRACE record: " + why);
      skip_payload_lines();
      continue;
    }
    Record r;
    if (!read_envelope(line, env_start, r)) {
      skip_payload_lines();
      continue;
    }
    ++trace_.records;
    dispatch(r);
  }
  finish();
  verify_payloads();
  // Keep this file's diagnostics in line order (the md5 checks come last).
  std::stable_sort(trace_.diagnostics.begin() + long(first_diagnostic), trace_.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  if (options_.progress) options_.progress(1.0);
  return {};
}

// The tab lines after a record that cannot be read belong to it; one
// diagnostic for the record is enough.
void LogIndexer::skip_payload_lines() {
  Line l;
  while (lines_.peek(l) && (l.text.empty() || l.text[0] == '\t')) lines_.advance();
}

bool LogIndexer::read_envelope(const Line& line, size_t env_start, Record& r) {
  r.line = line.number;
  r.envelope = line.text.substr(env_start);
  r.envelope_offset = line.offset + env_start;
  json::ParseError err;
  if (!json::parse_object(r.envelope, members_, err)) {
    diag(line.number, "bad JSON envelope: " + err.message + " at column " + std::to_string(env_start + err.offset + 1));
    return false;
  }
  std::string_view md5_hex;
  bool bad_id = false;
  auto id_field = [&](const json::Value& v, std::optional<int64_t>& out) {
    int64_t n = 0;
    if (json::to_int(v, n) && n >= 0) out = n;
    else if (!v.is_null()) bad_id = true;
  };
  for (const json::Member& m : members_) {
    std::string_view k = m.key;
    if (k == "frame_id") id_field(m.value, r.id.frame_id);
    else if (k == "frame_compile_id") id_field(m.value, r.id.frame_compile_id);
    else if (k == "compiled_autograd_id") id_field(m.value, r.id.compiled_autograd_id);
    else if (k == "attempt") {
      std::optional<int64_t> a;
      id_field(m.value, a);
      r.attempt = int(std::min<int64_t>(a.value_or(0), 1 << 30));
    } else if (k == "rank") {
      int64_t n = 0;
      if (json::to_int(m.value, n)) r.rank = n;
    } else if (k == "has_payload") {
      r.wants_payload = true;
      if (auto s = json::plain_string(m.value)) md5_hex = *s;
    } else if (k == "stack") {
      // The writer's own stack, logged when it had no compile id; not the user's.
    } else if (r.tag.empty()) {
      r.tag = k;
      r.meta = m.value;
    }
  }
  if (r.wants_payload) read_payload(r, md5_hex, line.number);
  if (bad_id) {
    diag(line.number, "bad compile id: frame_id, frame_compile_id, compiled_autograd_id and attempt must be non-negative integers");
    r.id = {};
  } else if (r.id.frame_id.has_value() != r.id.frame_compile_id.has_value()) {
    diag(line.number, std::string("bad compile id: ") + (r.id.frame_id ? "frame_id without frame_compile_id" : "frame_compile_id without frame_id"));
    r.id = {};
  }
  if (r.tag.empty()) {
    diag(line.number, "record has no tag: the envelope names no kind of event");
    return false;
  }
  return true;
}

// Collects the payload lines after the envelope; their md5 is checked after the scan.
void LogIndexer::read_payload(Record& r, std::string_view expected_md5, int envelope_line) {
  Md5Digest expected{};
  bool md5_ok = parse_md5_hex(expected_md5, expected);
  if (!md5_ok)
    diag(envelope_line, "bad has_payload value: expected 32 hex digits, got '" + std::string(expected_md5.substr(0, 40)) + "'");
  Line l;
  int count = 0;
  size_t begin = 0, end = 0;
  int first_line = 0;
  while (lines_.peek(l)) {
    if (l.text.empty()) {  // noise between payload lines
      lines_.advance();
      continue;
    }
    if (l.text[0] != '\t') break;
    if (count == 0) {
      begin = l.offset;
      first_line = l.number;
    }
    end = l.offset + l.text.size();
    ++count;
    lines_.advance();
  }
  if (count == 0) {
    diag(envelope_line, "truncated payload: the record has has_payload but no payload lines follow it");
    return;
  }
  r.has_payload = true;
  r.payload = {file_, begin, end - begin, first_line, count, PayloadEncoding::TabIndented};
  if (md5_ok) checks_.push_back({r.payload, expected, envelope_line, lines_.at_end() && lines_.ends_without_newline()});
}

// Hashing is most of the indexing time, and payloads hash independently, so
// the checks run after the scan, in parallel.
void LogIndexer::verify_payloads() {
  std::vector<Md5Digest> got(checks_.size());
  parallel_for(0, int64_t(checks_.size()), 64, [&](int64_t b, int64_t e) {
    Md5 h;
    for (int64_t i = b; i < e; ++i) got[size_t(i)] = payload_md5(text_, checks_[size_t(i)].payload, h);
  });
  for (size_t i = 0; i < checks_.size(); ++i) {
    const Md5Check& c = checks_[i];
    if (got[i] == c.expected) continue;
    diag(c.line, std::string(c.at_eof ? "truncated payload (the file ends inside it)" : "payload md5 mismatch") +
                     ": has_payload is " + to_hex(c.expected) + ", the " + std::to_string(c.payload.line_count) +
                     " payload lines hash to " + to_hex(got[i]));
  }
  checks_.clear();
}

const std::unordered_map<std::string_view, LogIndexer::Handler>& LogIndexer::handlers() {
  static const std::unordered_map<std::string_view, Handler> table = {
      {"str", &LogIndexer::on_str},
      {"dynamo_start", &LogIndexer::on_dynamo_start},
      {"dynamo_output_graph", &LogIndexer::on_stage},
      {"aot_inference_graph", &LogIndexer::on_stage},
      {"aot_joint_graph", &LogIndexer::on_stage},
      {"aot_forward_graph", &LogIndexer::on_stage},
      {"aot_backward_graph", &LogIndexer::on_stage},
      {"inductor_pre_grad_graph", &LogIndexer::on_stage},
      {"inductor_post_grad_graph", &LogIndexer::on_stage},
      {"compiled_autograd_graph", &LogIndexer::on_stage},
      {"optimize_ddp_split_graph", &LogIndexer::on_stage},
      {"optimize_ddp_split_child", &LogIndexer::on_stage},
      {"dynamo_cpp_guards_str", &LogIndexer::on_stage},
      {"dynamo_guards", &LogIndexer::on_stage},
      {"exported_program", &LogIndexer::on_stage},
      {"graph_dump", &LogIndexer::on_stage},
      {"dump_file", &LogIndexer::on_stage},
      {"artifact", &LogIndexer::on_artifact},
      {"inductor_output_code", &LogIndexer::on_output_code},
      {"compilation_metrics", &LogIndexer::on_metrics},
      {"bwd_compilation_metrics", &LogIndexer::on_other_metrics},
      {"compilation_metrics_runtime", &LogIndexer::on_other_metrics},
      {"bwd_compilation_metrics_runtime", &LogIndexer::on_other_metrics},
      {"aot_autograd_backward_compilation_metrics", &LogIndexer::on_other_metrics},
      {"chromium_event", &LogIndexer::on_chromium},
      {"create_symbol", &LogIndexer::on_shape_event},
      {"create_unbacked_symbol", &LogIndexer::on_shape_event},
      {"guard_added_fast", &LogIndexer::on_shape_event},
      {"guard_added", &LogIndexer::on_shape_event},
      {"symbolic_shape_specialization", &LogIndexer::on_shape_event},
      {"propagate_real_tensors_provenance", &LogIndexer::on_shape_event},
      {"expression_created", &LogIndexer::on_shape_event},
      {"describe_tensor", &LogIndexer::on_counted},
      {"describe_storage", &LogIndexer::on_counted},
      {"describe_source", &LogIndexer::on_counted},
      {"link", &LogIndexer::on_counted},
      {"missing_fake_kernel", &LogIndexer::on_counted},
      {"mismatched_fake_kernel", &LogIndexer::on_counted},
  };
  return table;
}

void LogIndexer::dispatch(Record& r) {
  auto it = handlers().find(r.tag);
  (this->*(it == handlers().end() ? &LogIndexer::on_unknown : it->second))(r);
}

void LogIndexer::count_tag(CompileEntry* e, std::string_view tag) {
  auto bump = [&](std::map<std::string, int64_t, std::less<>>& m) {
    auto it = m.find(tag);
    if (it == m.end()) m.emplace(std::string(tag), 1);
    else ++it->second;
  };
  bump(trace_.tag_counts);
  if (e) bump(e->tag_counts);
}

CompileEntry& LogIndexer::new_entry(const Key& key, const Record& r) {
  CompileEntry e;
  e.id = r.id;
  e.attempt = r.attempt;
  e.file = file_;
  e.rank = r.rank;
  e.first_line = r.line;
  trace_.entries.push_back(std::move(e));
  current_[key] = int(trace_.entries.size() - 1);
  return trace_.entries.back();
}

void LogIndexer::flush_pending(const Key& key, int entry) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  CompileEntry& e = trace_.entries[size_t(entry)];
  e.chromium_events.insert(e.chromium_events.end(), it->second.begin(), it->second.end());
  e.tag_counts["chromium_event"] += int64_t(it->second.size());
  pending_.erase(it);
}

// Which entry a record belongs to. A compile id names a new entry when it
// starts again (dynamo_start after the last one started, or recompile_reasons,
// which PyTorch logs just before the dynamo_start of the recompile). Chromium
// events that come before a compile starts, or after it ended, wait in
// `pending_` until it is clear whether a new compile with that id follows.
int LogIndexer::entry_for(const Record& r, Role role) {
  Key key{r.id.compiled_autograd_id.value_or(-1), r.id.frame_id.value_or(-1), r.id.frame_compile_id.value_or(-1)};
  auto it = current_.find(key);
  CompileEntry* cur = it == current_.end() ? nullptr : &trace_.entries[size_t(it->second)];
  if (role == Role::Chromium && (!cur || cur->metrics)) return -1;
  bool fresh = false;
  if (role == Role::Start) fresh = !cur || (cur->started && r.attempt <= cur->attempt);
  else if (role == Role::Recompile) fresh = !cur || cur->started;
  else if (!cur) {
    fresh = true;
    if (r.id.frame_id)
      diag(r.line, "record for compile id " + r.id.str() + ", which no dynamo_start introduced (" + std::string(r.tag) + ")");
  }
  if (fresh) cur = &new_entry(key, r);
  int index = current_[key];
  flush_pending(key, index);
  cur->attempt = std::max(cur->attempt, r.attempt);
  if (!cur->rank && r.rank) cur->rank = r.rank;
  if (role == Role::Start) cur->started = true;
  return index;
}

void LogIndexer::finish() {
  for (auto& [key, events] : pending_) {
    auto it = current_.find(key);
    int index;
    if (it != current_.end()) {
      index = it->second;
    } else if (key.ca < 0 && key.frame < 0) {
      // No compile id: the run's own phases, not a compile.
      trace_.run_chromium_events.insert(trace_.run_chromium_events.end(), events.begin(), events.end());
      continue;
    } else {
      Record r;
      if (key.ca >= 0) r.id.compiled_autograd_id = key.ca;
      if (key.frame >= 0) r.id.frame_id = key.frame, r.id.frame_compile_id = key.fc;
      r.line = events.front().first_line - 1;
      index = int(&new_entry(key, r) - trace_.entries.data());
    }
    CompileEntry& e = trace_.entries[size_t(index)];
    e.chromium_events.insert(e.chromium_events.end(), events.begin(), events.end());
    e.tag_counts["chromium_event"] += int64_t(events.size());
  }
  pending_.clear();
}

// ---- handlers ----

void LogIndexer::on_str(Record& r) {
  count_tag(nullptr, r.tag);
  std::vector<json::Value> parts;
  json::elements(r.meta, parts);
  int64_t id = 0;
  if (parts.size() != 2 || !parts[0].is_string() || !json::to_int(parts[1], id)) {
    diag(r.line, "bad string-table record: expected {\"str\": [text, id]}");
    return;
  }
  strings_[id] = json::to_string(parts[0]);
}

std::string LogIndexer::interned(const json::Value& v, int line, bool& ok) {
  if (v.is_string()) return json::to_string(v);
  int64_t id = 0;
  if (json::to_int(v, id)) {
    auto it = strings_.find(id);
    if (it != strings_.end()) return it->second;
    if (ok) diag(line, "stack frame names file #" + std::to_string(id) + ", which no {\"str\": ...} record defined");
  }
  ok = false;
  return "(unknown)";
}

std::vector<StackFrame> LogIndexer::read_stack(const json::Value& v, int line) {
  std::vector<StackFrame> out;
  std::vector<json::Value> frames;
  std::vector<json::Member> ms;
  json::elements(v, frames);
  bool ok = true;
  for (const json::Value& f : frames) {
    json::members(f, ms);
    StackFrame sf;
    int64_t n = 0;
    if (const auto* x = json::find(ms, "line"); x && json::to_int(*x, n)) sf.line = int(n);
    if (const auto* x = json::find(ms, "name")) sf.function = json::to_string(*x);
    if (const auto* x = json::find(ms, "loc")) sf.code = json::to_string(*x);
    if (const auto* x = json::find(ms, "filename")) sf.file = interned(*x, line, ok);
    if (const auto* x = json::find(ms, "uninterned_filename"); x && x->is_string()) sf.file = json::to_string(*x);
    out.push_back(std::move(sf));
  }
  return out;
}

void LogIndexer::on_dynamo_start(Record& r) {
  int index = entry_for(r, Role::Start);
  CompileEntry& e = trace_.entries[size_t(index)];
  count_tag(&e, r.tag);
  if (auto stack = json::find(r.meta, "stack")) e.stack = read_stack(*stack, r.line);
}

Artifact& LogIndexer::add_artifact(CompileEntry& e, std::string_view base, const Record& r) {
  int same = 0;
  for (const Artifact& a : e.artifacts) same += a.base == base;
  Artifact a;
  a.base = std::string(base);
  a.name = same == 0 ? a.base : a.base + "#" + std::to_string(same + 1);
  a.tag = std::string(r.tag);
  a.attempt = r.attempt;
  a.line = r.line;
  a.payload = r.payload;
  // Sniffed from the payload's opening, which the indexer holds anyway.
  if (r.has_payload && r.payload.offset < text_.size())
    a.graph = looks_like_fx_graph(text_.substr(r.payload.offset, std::min<uint64_t>(r.payload.length, 16384)));
  e.artifacts.push_back(std::move(a));
  return e.artifacts.back();
}

void LogIndexer::on_stage(Record& r) {
  CompileEntry& e = trace_.entries[size_t(entry_for(r, Role::Normal))];
  count_tag(&e, r.tag);
  if (!r.has_payload) return;
  std::string_view name = r.tag;
  // optimize_ddp_split_child and dump_file records name their payload.
  std::string sub;
  if (auto n = json::find(r.meta, "name"); n && n->is_string()) sub = json::to_string(*n);
  if (!sub.empty() && r.tag != "graph_dump") sub = std::string(r.tag) + ":" + sub;
  add_artifact(e, sub.empty() ? name : std::string_view(sub), r);
}

void LogIndexer::on_artifact(Record& r) {
  std::string name, encoding;
  std::vector<json::Member> ms;
  json::members(r.meta, ms);
  if (const auto* v = json::find(ms, "name")) name = json::to_string(*v);
  if (const auto* v = json::find(ms, "encoding")) encoding = json::to_string(*v);
  if (name.empty()) {
    diag(r.line, "artifact record without a name");
    return;
  }
  bool recompile = name == "recompile_reasons";
  CompileEntry& e = trace_.entries[size_t(entry_for(r, recompile ? Role::Recompile : Role::Normal))];
  count_tag(&e, r.tag);
  if (!r.has_payload) return;
  Artifact& a = add_artifact(e, name, r);
  a.encoding = encoding;
  if (name == "dynamo_graph_break_reason") read_graph_break(e, a);
  else if (recompile) read_recompile_reasons(e, a);
}

void LogIndexer::on_output_code(Record& r) {
  CompileEntry& e = trace_.entries[size_t(entry_for(r, Role::Normal))];
  count_tag(&e, r.tag);
  if (!r.has_payload) return;
  Artifact& a = add_artifact(e, r.tag, r);
  if (auto f = json::find(r.meta, "filename"); f && f->is_string()) a.filename = json::to_string(*f);
}

void LogIndexer::read_graph_break(CompileEntry& e, const Artifact& a) {
  auto text = trace_.text(a.payload);
  if (!text) return;
  GraphBreak gb = parse_graph_break_text(*text);
  gb.record_line = a.line;
  e.graph_breaks.push_back(std::move(gb));
}

void LogIndexer::read_recompile_reasons(CompileEntry& e, const Artifact& a) {
  auto text = trace_.text(a.payload);
  if (!text) return;
  // A list of reasons is written as a JSON array, one string per line; a
  // single reason may come as bare text.
  json::Value v;
  json::ParseError err;
  if (json::parse(*text, v, err) && v.is_array()) {
    std::vector<json::Value> items;
    json::elements(v, items);
    for (const json::Value& item : items) e.recompile_reasons.push_back(json::to_string(item));
  } else if (!text->empty()) {
    e.recompile_reasons.push_back(*text);
  }
}

// The compilation_metrics fields Kiln reads, by type; the rest stay in the JSON.
using Metrics = CompilationMetrics;
constexpr std::pair<std::string_view, std::string Metrics::*> kMetricStrings[] = {
    {"compile_id", &Metrics::compile_id}, {"co_name", &Metrics::co_name}, {"co_filename", &Metrics::co_filename}};
constexpr std::pair<std::string_view, std::optional<std::string> Metrics::*> kMetricOptStrings[] = {
    {"fail_type", &Metrics::fail_type},
    {"fail_reason", &Metrics::fail_reason},
    {"fail_user_frame_filename", &Metrics::fail_user_frame_filename}};
constexpr std::pair<std::string_view, std::optional<int64_t> Metrics::*> kMetricInts[] = {
    {"co_firstlineno", &Metrics::co_firstlineno},
    {"cache_size", &Metrics::cache_size},
    {"accumulated_cache_size", &Metrics::accumulated_cache_size},
    {"guard_count", &Metrics::guard_count},
    {"shape_env_guard_count", &Metrics::shape_env_guard_count},
    {"graph_op_count", &Metrics::graph_op_count},
    {"graph_node_count", &Metrics::graph_node_count},
    {"graph_input_count", &Metrics::graph_input_count},
    {"fail_user_frame_lineno", &Metrics::fail_user_frame_lineno}};
constexpr std::pair<std::string_view, std::optional<double> Metrics::*> kMetricDoubles[] = {
    {"start_time", &Metrics::start_time},
    {"entire_frame_compile_time_s", &Metrics::entire_frame_compile_time_s},
    {"backend_compile_time_s", &Metrics::backend_compile_time_s},
    {"inductor_compile_time_s", &Metrics::inductor_compile_time_s},
    {"code_gen_time_s", &Metrics::code_gen_time_s},
    {"dynamo_time_before_restart_s", &Metrics::dynamo_time_before_restart_s}};

void read_metric(Metrics& m, std::string_view key, const json::Value& v) {
  for (const auto& [name, field] : kMetricStrings)
    if (key == name) m.*field = json::to_string(v);
  for (const auto& [name, field] : kMetricOptStrings)
    if (key == name && v.is_string()) m.*field = json::to_string(v);
  for (const auto& [name, field] : kMetricInts)
    if (int64_t n = 0; key == name && json::to_int(v, n)) m.*field = n;
  for (const auto& [name, field] : kMetricDoubles)
    if (double d = 0; key == name && json::to_double(v, d)) m.*field = d;
  if (key == "restart_reasons") {
    std::vector<json::Value> items;
    json::elements(v, items);
    for (const json::Value& item : items) m.restart_reasons.push_back(json::to_string(item));
  }
}

void LogIndexer::on_metrics(Record& r) {
  CompileEntry& e = trace_.entries[size_t(entry_for(r, Role::Normal))];
  count_tag(&e, r.tag);
  std::vector<json::Member> ms;
  json::members(r.meta, ms);
  Metrics m;
  m.line = r.line;
  m.json = meta_ref(r);
  for (const json::Member& mem : ms) read_metric(m, mem.key, mem.value);
  // A failed compile is where the frame fell back to eager: list it with the breaks.
  if (m.fail_type) {
    GraphBreak gb;
    gb.failure = true;
    gb.reason = *m.fail_type;
    gb.detail = m.fail_reason.value_or("");
    gb.file = m.fail_user_frame_filename.value_or("");
    gb.line = int(m.fail_user_frame_lineno.value_or(0));
    gb.record_line = r.line;
    e.graph_breaks.push_back(std::move(gb));
  }
  if (e.metrics) e.other_metrics.push_back({std::string(r.tag), e.metrics->line, e.metrics->json});
  e.metrics = std::move(m);
}

void LogIndexer::on_other_metrics(Record& r) {
  CompileEntry& e = trace_.entries[size_t(entry_for(r, Role::Normal))];
  count_tag(&e, r.tag);
  e.other_metrics.push_back({std::string(r.tag), r.line, meta_ref(r)});
}

void LogIndexer::on_chromium(Record& r) {
  int index = entry_for(r, Role::Chromium);
  count_tag(index < 0 ? nullptr : &trace_.entries[size_t(index)], r.tag);
  if (!r.has_payload) return;
  if (index >= 0) {
    trace_.entries[size_t(index)].chromium_events.push_back(r.payload);
    return;
  }
  Key key{r.id.compiled_autograd_id.value_or(-1), r.id.frame_id.value_or(-1), r.id.frame_compile_id.value_or(-1)};
  pending_[key].push_back(r.payload);
}

void LogIndexer::on_shape_event(Record& r) {
  CompileEntry& e = trace_.entries[size_t(entry_for(r, Role::Normal))];
  count_tag(&e, r.tag);
  std::vector<json::Member> ms;
  json::members(r.meta, ms);
  ShapeEvent ev;
  ev.kind = std::string(r.tag);
  ev.line = r.line;
  for (const json::Member& m : ms) {
    std::string_view k = m.key;
    if (k == "symbol") ev.symbol = json::to_string(m.value);
    else if (k == "val" || k == "value") ev.value = json::to_string(m.value);
    else if (k == "vr") ev.range = json::to_string(m.value);
    else if (k == "source") ev.source = json::to_string(m.value);
    else if (k == "sources") {
      std::vector<json::Value> items;
      json::elements(m.value, items);
      for (const json::Value& s : items) ev.source += (ev.source.empty() ? "" : ", ") + json::to_string(s);
    } else if (k == "expr") ev.expr = json::to_string(m.value);
    else if (k == "reason") ev.reason = json::to_string(m.value);
    else if (k == "user_stack") {
      ev.user_stack = read_stack(m.value, r.line);
      if (!ev.user_stack.empty()) ev.user_file = ev.user_stack.back().file, ev.user_line = ev.user_stack.back().line;
    } else if (k == "prefix") ev.prefix = json::to_string(m.value);
    else if (k == "result") ev.value = json::to_string(m.value);
    else if (k == "method") ev.method = json::to_string(m.value);
    else if (k == "arguments") {
      std::vector<json::Value> items;
      json::elements(m.value, items);
      for (const json::Value& a : items) ev.arguments.push_back(json::to_string(a));
    } else if (k == "symbol_to_sources" || k == "frame_locals") {
      // {"s0": "L['x'].size()[0]"}, or frame_locals' {"symbols": {...}}.
      std::vector<json::Member> pairs;
      json::members(m.value, pairs);
      if (k == "frame_locals") {
        const json::Value* symbols = json::find(pairs, "symbols");
        pairs.clear();
        if (symbols) json::members(*symbols, pairs);
      }
      for (const json::Member& p : pairs) {
        std::pair<std::string, std::string> sym{std::string(p.key), json::to_string(p.value)};
        if (std::find(ev.symbol_sources.begin(), ev.symbol_sources.end(), sym) == ev.symbol_sources.end())
          ev.symbol_sources.push_back(std::move(sym));
      }
    }
  }
  e.shape_events.push_back(std::move(ev));
}

void LogIndexer::on_counted(Record& r) { count_tag(&trace_.entries[size_t(entry_for(r, Role::Normal))], r.tag); }

void LogIndexer::on_unknown(Record& r) {
  CompileEntry& e = trace_.entries[size_t(entry_for(r, Role::Normal))];
  count_tag(&e, r.tag);
  auto it = trace_.unknown_tags.find(r.tag);
  if (it == trace_.unknown_tags.end()) trace_.unknown_tags.emplace(std::string(r.tag), 1);
  else ++it->second;
  if (r.has_payload) add_artifact(e, r.tag, r);
}

Status index_file(Trace& t, uint32_t file, std::shared_ptr<const FileData> data, const ReadOptions& options) {
  t.keep_file_data(file, data);
  t.bytes += data->text().size();
  LogIndexer indexer(t, file, *data, options);
  return indexer.run();
}

std::vector<std::string> list_logs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec))
    if (de.path().extension() == ".log" && de.is_regular_file(ec) && is_trace_log_file(de.path().string()))
      out.push_back(de.path().string());
  // Rank files by rank (rank_2 before rank_10), then by name.
  auto rank = [](const std::string& p) { return rank_of_log_name(fs::path(p).filename().string()).value_or(-1); };
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return std::pair(rank(a), a) < std::pair(rank(b), b);
  });
  return out;
}

// The file name's rank decides (PyTorch names each rank's file; envelopes of
// older logs carry no rank, and some carry another one); a disagreement is said once.
void apply_file_rank(Trace& t, uint32_t file, size_t first_entry) {
  const std::optional<int64_t> rank = t.files[file].rank;
  if (!rank) return;
  bool said = false;
  for (size_t i = first_entry; i < t.entries.size(); ++i) {
    CompileEntry& e = t.entries[i];
    if (e.rank && *e.rank != *rank && !said) {
      t.diagnostics.push_back({t.files[file].path, e.first_line,
                               "records say rank " + std::to_string(*e.rank) + ", the file name says rank " + std::to_string(*rank) +
                                   "; the file name is used"});
      said = true;
    }
    e.rank = rank;
  }
}

// Every file's compiles and payload references point at file `file`.
void move_to_file(Trace& part, uint32_t file) {
  auto at = [file](PayloadRef& ref) { ref.file = file; };
  for (CompileEntry& e : part.entries) {
    e.file = file;
    for (Artifact& a : e.artifacts) at(a.payload);
    if (e.metrics) at(e.metrics->json);
    for (OtherMetrics& m : e.other_metrics) at(m.json);
    for (PayloadRef& ref : e.chromium_events) at(ref);
  }
  for (PayloadRef& ref : part.run_chromium_events) at(ref);
}

// The files of a folder (one per rank) are indexed side by side, each into a
// trace of its own, then joined in file order: one rank's log is independent
// of the others, and a thousand of them are no longer a thousand waits.
Status index_files_in_parallel(Trace& t, const std::vector<std::string>& paths, const ReadOptions& options) {
  const size_t n = paths.size();
  std::vector<std::shared_ptr<const FileData>> data(n);
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    auto mapped = FileData::map(paths[i]);
    if (!mapped) return mapped.status();
    data[i] = *mapped;
    total += data[i]->text().size();
    t.files.push_back({paths[i], uint64_t(data[i]->text().size()), rank_of_log_name(fs::path(paths[i]).filename().string())});
  }
  // Progress is the bytes indexed over all files, reported from whichever
  // thread gets there, one call at a time and never going back.
  std::atomic<uint64_t> done{0};
  std::mutex progress_mu;
  double reported = 0;
  std::vector<Trace> parts(n);
  std::vector<Status> statuses(n);
  parallel_for(0, int64_t(n), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      Trace& part = parts[size_t(i)];
      part.files.push_back(t.files[size_t(i)]);
      const uint64_t size = data[size_t(i)]->text().size();
      uint64_t counted = 0;
      ReadOptions mine;
      mine.cancel = options.cancel;
      if (options.progress)
        mine.progress = [&, size](double f) {
          const uint64_t now = uint64_t(f * double(size));
          const uint64_t all = done.fetch_add(now > counted ? now - counted : 0) + (now > counted ? now - counted : 0);
          counted = std::max(counted, now);
          std::lock_guard<std::mutex> lock(progress_mu);
          const double fraction = double(all) / double(std::max<uint64_t>(total, 1));
          if (fraction > reported) {
            reported = fraction;
            options.progress(fraction);
          }
        };
      statuses[size_t(i)] = index_file(part, 0, data[size_t(i)], mine);
      if (statuses[size_t(i)].ok()) apply_file_rank(part, 0, 0);
    }
  });
  for (const Status& s : statuses)
    if (!s.ok()) return s;
  for (size_t i = 0; i < n; ++i) {
    Trace& part = parts[i];
    move_to_file(part, uint32_t(i));
    t.keep_file_data(uint32_t(i), data[i]);
    t.bytes += part.bytes;
    t.records += part.records;
    for (auto& e : part.entries) t.entries.push_back(std::move(e));
    for (auto& d : part.diagnostics) t.diagnostics.push_back(std::move(d));
    for (const auto& [tag, count] : part.tag_counts) t.tag_counts[tag] += count;
    for (const auto& [tag, count] : part.unknown_tags) t.unknown_tags[tag] += count;
    for (const PayloadRef& ref : part.run_chromium_events) t.run_chromium_events.push_back(ref);
  }
  return Status();
}

}  // namespace

bool is_trace_log_file(const std::string& path) {
  if (fs::path(path).filename().string().rfind("dedicated_log_torch_trace", 0) == 0) return true;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line) && (line.empty() || line == "\r")) {
  }
  std::string why;
  size_t env = parse_glog_prefix(line, why);
  return env != std::string_view::npos && env < line.size() && line[env] == '{';
}

Expected<Trace> read_trace_log(const std::string& path, const ReadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::error("no such file or folder", {path, 0});
  std::vector<std::string> paths;
  if (fs::is_directory(path, ec)) {
    paths = list_logs(path);
    if (paths.empty()) return Status::error("folder has no TORCH_TRACE *.log files", {path, 0});
  } else {
    paths.push_back(path);
  }
  Trace t;
  t.kind = TraceKind::TraceLog;
  t.path = path;
  if (paths.size() == 1) {
    auto data = FileData::map(paths[0]);
    if (!data) return data.status();
    t.files.push_back({paths[0], uint64_t((*data)->text().size()), rank_of_log_name(fs::path(paths[0]).filename().string())});
    if (Status s = index_file(t, 0, *data, options); !s.ok()) return s;
    apply_file_rank(t, 0, 0);
  } else if (Status s = index_files_in_parallel(t, paths, options); !s.ok()) {
    return s;
  }
  assign_labels(t);
  return t;
}

Trace read_trace_text(std::string text, const std::string& name) {
  Trace t;
  t.kind = TraceKind::TraceLog;
  t.path = name;
  auto data = FileData::from_string(std::move(text));
  t.files.push_back({name, uint64_t(data->text().size()), std::nullopt});
  (void)index_file(t, 0, data, ReadOptions{});
  assign_labels(t);
  return t;
}

}  // namespace kiln::trace
