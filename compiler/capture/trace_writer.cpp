#include "compiler/capture/trace_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/graph/printer.h"
#include "core/python/code.h"
#include "core/python/vm.h"
#include "core/util/md5.h"
#include "core/util/utf8.h"

namespace kiln::capture {

namespace {

namespace fs = std::filesystem;

// The PyTorch 2.11 call site that writes each record, for the glog prefix:
// tools that group records by where they were logged see Kiln's as PyTorch's.
constexpr const char* kSiteString = "torch/_logging/structured.py:28";
constexpr const char* kSiteStart = "torch/_dynamo/convert_frame.py:276";
constexpr const char* kSiteBreak = "torch/_dynamo/symbolic_convert.py:5101";
constexpr const char* kSiteGraph = "torch/_dynamo/output_graph.py:2423";
constexpr const char* kSiteGuards = "torch/_dynamo/guards.py:3977";
constexpr const char* kSiteRecompile = "torch/_dynamo/guards.py:4764";
constexpr const char* kSiteMetrics = "torch/_dynamo/utils.py:1796";

// ---- JSON as Python's json.dumps writes it: ", " and ": ", ASCII only ----

void append_utf16_escape(std::string& out, unsigned unit) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

std::string json_str(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7F) append_utf16_escape(out, c);
          else out += char(c);
      }
      continue;
    }
    // A byte that is not UTF-8 reads as its surrogateescape code point, which
    // json.dumps writes as that surrogate's escape.
    char32_t cp;
    i += utf8_decode(s, i, cp);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      append_utf16_escape(out, 0xD800 + (cp >> 10));
      append_utf16_escape(out, 0xDC00 + (cp & 0x3FF));
    } else {
      append_utf16_escape(out, cp);
    }
  }
  return out + "\"";
}

// repr(float): the shortest digits that read back, in fixed notation for
// exponents -4..15 and as 1.5e-05 / 1e+16 outside, always with a '.' or 'e'.
std::string py_float(double v) {
  if (!std::isfinite(v)) return "null";  // Python writes NaN/Infinity, which is not JSON
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp) + 1 >= digits.size()) {
      out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return (neg ? "-" : "") + out;
}

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

// An object whose members keep the order they were added in, as a Python dict does.
class JsonObject {
 public:
  JsonObject& raw(std::string_view key, const std::string& json) {
    body_ += (body_.empty() ? "" : ", ") + json_str(key) + ": " + json;
    return *this;
  }
  JsonObject& str(std::string_view key, std::string_view v) { return raw(key, json_str(v)); }
  JsonObject& num(std::string_view key, int64_t v) { return raw(key, std::to_string(v)); }
  JsonObject& real(std::string_view key, double v) { return raw(key, py_float(v)); }
  JsonObject& boolean(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& null(std::string_view key) { return raw(key, "null"); }
  template <class T>
  JsonObject& opt(std::string_view key, const std::optional<T>& v) {
    if (!v) return null(key);
    if constexpr (std::is_same_v<T, std::string>) return str(key, *v);
    else if constexpr (std::is_floating_point_v<T>) return real(key, *v);
    else return num(key, int64_t(*v));
  }
  std::string text() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

// ---- clock and glog prefix ----

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "V1122 00:26:46.005000 1018 torch/_dynamo/convert_frame.py:276] ": level,
// local month/day and time, microseconds, process id, call site.
std::string glog_prefix(const char* site) {
  int64_t us = wall_us();
  std::time_t secs = std::time_t(us / 1000000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "V%02d%02d %02d:%02d:%02d.%06d %d ", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                tm.tm_sec, int(us % 1000000), int(getpid()));
  return std::string(buf) + site + "] ";
}

// ---- graph facts Dynamo reports ----

// OutputGraph.get_graph_sizes_structured(): the sizes of every node whose
// value is a tensor; symbolic sizes as their expression.
std::vector<std::pair<std::string, std::vector<SymInt>>> graph_sizes(const Graph& g) {
  std::vector<std::pair<std::string, std::vector<SymInt>>> out;
  for (const Node& n : g.nodes)
    if (n.op != OpKind::Output && n.meta.val.is_tensor()) out.emplace_back(n.name, n.meta.val.tensor.sizes);
  return out;
}

std::string sizes_json(const Graph& g) {
  JsonObject o;
  for (const auto& [name, sizes] : graph_sizes(g)) {
    std::vector<std::string> items;
    for (const SymInt& s : sizes) items.push_back(s.is_symbolic() ? json_str(s.expr) : std::to_string(s.value));
    o.raw(name, json_list(items));
  }
  return o.text();
}

// str() of the same dict, as compilation_metrics.graph_node_shapes holds it.
std::string sizes_python_repr(const Graph& g) {
  std::string out = "{";
  bool first = true;
  for (const auto& [name, sizes] : graph_sizes(g)) {
    out += (first ? "'" : ", '") + name + "': [";
    first = false;
    for (size_t i = 0; i < sizes.size(); ++i)
      out += (i ? ", " : "") + (sizes[i].is_symbolic() ? "'" + sizes[i].expr + "'" : std::to_string(sizes[i].value));
    out += "]";
  }
  return out + "}";
}

std::string trim_right(std::string s) {
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

}  // namespace

std::string TraceCompileId::str() const { return std::to_string(frame_id) + "/" + std::to_string(frame_compile_id); }

// ---- opening ----

std::unique_ptr<TraceWriter> TraceWriter::open(const std::string& dir, WarningSink warn) {
  if (!warn) warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  auto refuse = [&](const std::string& why) {
    warn("kiln: KILN_TRACE: cannot write a trace log in '" + dir + "': " + why + "; running without a trace");
    return nullptr;
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) {
    std::error_code ignored;
    if (fs::exists(dir, ignored)) return refuse("it is a file, not a folder");
    return refuse(ec ? ec.message() : "it is not a folder");
  }
  // Time first so that a folder of several runs lists them in run order.
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char name[96];
  std::snprintf(name, sizeof name, "dedicated_log_kiln_rank_0_%04d%02d%02d_%02d%02d%02d_%d.log", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, int(getpid()));
  std::string path = (fs::path(dir) / name).string();
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (!f) return refuse(std::strerror(errno));
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(path), f, std::move(warn)));
}

std::unique_ptr<TraceWriter> TraceWriter::from_env(WarningSink warn) {
  const char* dir = std::getenv("KILN_TRACE");
  if (!dir || !*dir) return nullptr;
  return open(dir, std::move(warn));
}

TraceWriter::TraceWriter(std::string path, std::FILE* file, WarningSink warn)
    : path_(std::move(path)), file_(file), warn_(std::move(warn)) {}

TraceWriter::~TraceWriter() {
  if (file_) std::fclose(file_);
  // A run that compiled nothing leaves no empty log behind (a folder of logs
  // with an empty one would not read as a trace).
  std::error_code ec;
  if (!wrote_ && fs::exists(path_, ec) && fs::file_size(path_, ec) == 0) fs::remove(path_, ec);
}

void TraceWriter::fail(const std::string& why) {
  warn_("kiln: KILN_TRACE: writing '" + path_ + "' failed: " + why + "; the rest of the run is not traced");
  std::fclose(file_);
  file_ = nullptr;
}

// ---- records ----

void TraceWriter::write_record(const char* site, const std::string& tag, const std::string& metadata_json, const TraceCompileId* id,
                       const std::optional<std::string>& payload) {
  if (!file_) return;
  int64_t t0 = steady_us();
  std::string rec = glog_prefix(site) + "{" + json_str(tag) + ": " + metadata_json;
  if (id)
    rec += ", \"frame_id\": " + std::to_string(id->frame_id) + ", \"frame_compile_id\": " +
           std::to_string(id->frame_compile_id) + ", \"attempt\": " + std::to_string(id->attempt);
  if (payload) rec += ", \"has_payload\": \"" + md5_hex(*payload) + "\"";
  rec += "}";
  if (payload) {
    // Each payload line behind a tab, "x\n" giving a last line of just a tab, as PyTorch writes them.
    size_t pos = 0;
    for (;;) {
      size_t nl = payload->find('\n', pos);
      rec += "\n\t";
      rec.append(*payload, pos, nl == std::string::npos ? std::string::npos : nl - pos);
      if (nl == std::string::npos) break;
      pos = nl + 1;
    }
  }
  rec += "\n";
  errno = 0;
  size_t n = std::fwrite(rec.data(), 1, rec.size(), file_);
  if (n != rec.size() || std::fflush(file_) != 0) {
    fail(errno ? std::strerror(errno) : "short write");
    return;
  }
  wrote_ = true;
  overhead_us_ += steady_us() - t0;
}

int TraceWriter::intern(const std::string& filename) {
  auto it = strings_.find(filename);
  if (it != strings_.end()) return it->second;
  int id = int(strings_.size());
  strings_.emplace(filename, id);
  write_record(kSiteString, "str", json_list({json_str(filename), std::to_string(id)}), nullptr, std::nullopt);
  return id;
}

std::string TraceWriter::stack_json(const std::vector<StackFrame>& stack) {
  std::vector<std::string> frames;
  for (const StackFrame& f : stack) {
    JsonObject o;
    o.num("line", f.line).str("name", f.function).num("filename", intern(f.file));
    if (!f.code.empty()) o.str("loc", f.code);
    frames.push_back(o.text());
  }
  return json_list(frames);
}

void TraceWriter::dynamo_start(const TraceCompileId& id, const std::vector<StackFrame>& callers, const CompiledFrame& frame) {
  Pending p;
  p.start_wall_us = wall_us();
  p.start_steady_us = steady_us();
  p.overhead_start_us = overhead_us_;
  p.frame_key = ++frame_key_;
  p.stack = callers;
  p.stack.push_back({frame.file, frame.first_line, frame.name, {}});
  std::string stack = stack_json(p.stack);
  pending_[{id.frame_id, id.frame_compile_id}] = std::move(p);
  write_record(kSiteStart, "dynamo_start", JsonObject().raw("stack", stack).text(), &id, std::nullopt);
}

void TraceWriter::output_graph(const TraceCompileId& id, const Graph& graph) {
  write_record(kSiteGraph, "dynamo_output_graph", JsonObject().raw("sizes", sizes_json(graph)).text(), &id,
       print_graph_module(graph));
}

void TraceWriter::guards(const TraceCompileId& id, const std::vector<Guard>& guards) {
  if (guards.empty()) return;  // PyTorch writes no guard records without guards either
  // dynamo_guards: one JSON object per guard, one per line (trace_structured's list form).
  std::string list = "[\n";
  for (size_t i = 0; i < guards.size(); ++i) {
    const Guard& g = guards[i];
    std::string user_stack = "null";
    if (!g.user_file.empty()) user_stack = stack_json({{g.user_file, g.user_line, g.user_function, trim_right(g.user_code)}});
    list += (i ? ",\n" : "") + JsonObject().str("code", g.text()).null("stack").raw("user_stack", user_stack).text();
  }
  list += "\n]";
  write_record(kSiteGuards, "dynamo_guards", "{}", &id, list);
  // dynamo_cpp_guards_str: the guard tree 2.11 logs, flat under the root as Kiln
  // has no guard managers; each guard line "KIND: code  # user line  # file:line in fn".
  std::string tree = "\nTREE_GUARD_MANAGER:\n+- RootGuardManager\n";
  for (const Guard& g : guards) {
    tree += "| +- " + g.kind_name() + ": " + g.text();
    if (!g.user_file.empty())
      tree += "  # " + trim_right(g.user_code) + "  # " + g.user_file + ":" + std::to_string(g.user_line) + " in " +
              g.user_function;
    tree += "\n";
  }
  write_record(kSiteGuards, "dynamo_cpp_guards_str", "{}", &id, tree);
}

void TraceWriter::graph_break(const TraceCompileId& id, const BreakRecord& record, const std::vector<StackFrame>& callers) {
  std::string text = "Graph break in user code at " + record.file + ":" + std::to_string(record.line) + "\n";
  text += "Graph Break Reason: " + record.reason + "\n";
  std::string detail = trim_right(record.explanation);
  if (!detail.empty()) text += detail + "\n";
  text += "\nUser code traceback:\n";
  std::vector<StackFrame> stack = callers;
  stack.push_back({record.file, record.line, record.function, trim_right(record.code)});
  for (const StackFrame& f : stack) {
    text += "  File \"" + f.file + "\", line " + std::to_string(f.line) + ", in " + f.function + "\n";
    if (!f.code.empty()) text += "    " + f.code + "\n";
  }
  // num_graph_breaks counts distinct breaks, as Dynamo's counters["graph_break"] does.
  break_texts_.insert(record.reason + "\n" + detail);
  write_record(kSiteBreak, "artifact", JsonObject().str("name", "dynamo_graph_break_reason").str("encoding", "string").text(), &id,
       text);
}

void TraceWriter::recompile_reasons(const TraceCompileId& id, const std::vector<std::string>& reasons) {
  if (reasons.empty()) return;
  // One reason is logged as its text, several as a JSON list (what 2.11 writes).
  std::string payload;
  if (reasons.size() == 1) {
    payload = reasons[0];
  } else {
    payload = "[\n";
    for (size_t i = 0; i < reasons.size(); ++i) payload += (i ? ",\n" : "") + json_str(reasons[i]);
    payload += "\n]";
  }
  write_record(kSiteRecompile, "artifact", JsonObject().str("name", "recompile_reasons").str("encoding", "json").text(), &id,
       payload);
}

void TraceWriter::compilation_metrics(const CompileMetrics& m) {
  Pending p;
  auto it = pending_.find({m.id.frame_id, m.id.frame_compile_id});
  if (it != pending_.end()) {
    p = std::move(it->second);
    pending_.erase(it);
  } else {
    p.start_wall_us = wall_us();
    p.start_steady_us = steady_us();
    p.overhead_start_us = overhead_us_;
    p.frame_key = ++frame_key_;
  }
  int64_t start_us = m.start_time_s ? int64_t(std::llround(*m.start_time_s * 1e6)) : p.start_wall_us;
  int64_t duration_us = m.entire_frame_compile_time_s ? int64_t(std::llround(*m.entire_frame_compile_time_s * 1e6))
                                                      : steady_us() - p.start_steady_us;
  std::optional<double> before_restart = m.dynamo_time_before_restart_s;
  if (!before_restart && m.restart_reasons.empty()) before_restart = 0.0;
  int64_t overhead_us = overhead_us_ - p.overhead_start_us;
  std::vector<std::string> stack_trace, restart_reasons;
  for (const StackFrame& f : p.stack)
    stack_trace.push_back(json_str("Line: " + std::to_string(f.line) + ", Name: " + f.function + ", Filename: " + f.file));
  for (const std::string& r : m.restart_reasons) restart_reasons.push_back(json_str(trim_right(r)));

  JsonObject o;
  o.str("compile_id", m.id.str()).str("frame_key", std::to_string(p.frame_key));
  o.str("co_name", m.frame.name).str("co_filename", m.frame.file).num("co_firstlineno", m.frame.first_line);
  o.num("cache_size", m.cache_size).num("accumulated_cache_size", m.accumulated_cache_size);
  o.opt("guard_count", m.guard_count).num("shape_env_guard_count", 0);
  if (m.graph) {
    const Graph& g = *m.graph;
    o.num("graph_op_count", int64_t(count_nodes(g, OpKind::CallFunction) + count_nodes(g, OpKind::CallMethod) +
                                    count_nodes(g, OpKind::CallModule)));
    o.num("graph_node_count", int64_t(g.size())).num("graph_input_count", int64_t(count_nodes(g, OpKind::Placeholder)));
  } else {
    o.null("graph_op_count").null("graph_node_count").null("graph_input_count");
  }
  o.real("start_time", double(start_us) / 1e6).real("entire_frame_compile_time_s", double(duration_us) / 1e6);
  o.null("backend_compile_time_s").null("inductor_compile_time_s").null("code_gen_time_s");
  std::optional<std::string> fail_reason;
  if (m.fail_reason) fail_reason = trim_right(*m.fail_reason);
  o.opt("fail_type", m.fail_type).opt("fail_reason", fail_reason);
  o.opt("fail_user_frame_filename", m.fail_user_frame_filename).opt("fail_user_frame_lineno", m.fail_user_frame_lineno);
  o.raw("non_compliant_ops", "[]").raw("compliant_custom_ops", "[]");
  o.raw("restart_reasons", json_list(restart_reasons)).opt("dynamo_time_before_restart_s", before_restart);
  o.raw("stack_trace", json_list(stack_trace)).null("exception_stack_trace");
  if (m.graph) o.str("graph_node_shapes", sizes_python_repr(*m.graph));
  else o.null("graph_node_shapes");
  o.boolean("has_guarded_code", m.has_guarded_code).null("remote_cache_time_saved_s");
  o.real("structured_logging_overhead_s", double(overhead_us) / 1e6);
  o.boolean("config_suppress_errors", false).boolean("is_forward", true);
  o.num("start_time_us", start_us).num("duration_us", duration_us).num("dynamo_cumulative_compile_time_us", duration_us);
  if (before_restart) o.num("dynamo_compile_time_before_restart_us", int64_t(std::llround(*before_restart * 1e6)));
  else o.null("dynamo_compile_time_before_restart_us");
  o.num("structured_logging_overhead_us", overhead_us).num("end_time_us", start_us + duration_us);
  o.num("log_format_version", 3).boolean("is_runtime", false);
  o.opt("recompile_reason", m.recompile_reason).num("num_graph_breaks", int64_t(break_texts_.size()));
  write_record(kSiteMetrics, "compilation_metrics", o.text(), &m.id, std::nullopt);
}

std::vector<StackFrame> python_callers(const py::Frame& frame) {
  std::vector<StackFrame> out;
  for (const py::Frame* f = frame.parent; f; f = f->parent) {
    if (!f->code || f->code->code.empty()) continue;
    int line = f->line();
    out.push_back({f->code->filename, line, f->code->name, trim_right(py::source_line(*f->code, line))});
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace kiln::capture
