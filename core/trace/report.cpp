#include "core/trace/report.h"

#include <kainjow/mustache.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <unistd.h>

#include "core/trace/ranks.h"
#include "core/trace/report_templates.h"
#include "core/trace/summary.h"
#include "core/trace/text_util.h"

namespace kiln::trace {
namespace {

namespace fs = std::filesystem;
namespace mu = kainjow::mustache;

mu::data text_item(const std::string& text) {
  mu::data d;
  d.set("text", text);
  return d;
}

mu::data text_list(const std::vector<std::string>& items) {
  mu::data l{mu::data::type::list};
  for (const std::string& s : items) l.push_back(text_item(s));
  return l;
}

std::string frame_text(const StackFrame& f) {
  std::string s = f.file + ":" + std::to_string(f.line) + " in " + f.function;
  if (!f.code.empty()) s += ": " + f.code;
  return s;
}

std::string size_text(uint64_t bytes) {
  char buf[32];
  if (bytes >= (uint64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MB", double(bytes) / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1f kB", double(bytes) / 1e3);
  return buf;
}

// A page: the template with the shared partials, written whole or not at all.
class PageWriter {
 public:
  explicit PageWriter(fs::path root) : root_(std::move(root)) {}

  Status write(const std::string& relative, const char* tmpl, mu::data& page) {
    page.set("head", mu::basic_partial<std::string>([] { return std::string(report_templates::kHead); }));
    page.set("foot", mu::basic_partial<std::string>([] { return std::string(report_templates::kFoot); }));
    page.set("trie_node", mu::basic_partial<std::string>([] { return std::string(report_templates::kTrieNode); }));
    mu::mustache m{std::string(tmpl)};
    if (!m.is_valid()) return Status::error("report template: " + m.error_message());
    const std::string html = m.render(page);
    if (!m.error_message().empty()) return Status::error("report template: " + m.error_message());
    const fs::path path = root_ / relative;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary);
    out << html;
    if (!out.flush()) return Status::error("cannot write", {path.string(), 0});
    ++pages;
    return {};
  }

  size_t pages = 0;

 private:
  fs::path root_;
};

struct Builder {
  const Trace& t;
  const ReportOptions& options;
  ReportStats& stats;
  PageWriter& writer;
  std::string source;

  std::string page(size_t entry) const { return "c/" + std::to_string(entry) + ".html"; }

  mu::data base(const std::string& title) const {
    mu::data d;
    d.set("page_title", title);
    d.set("source", source);
    return d;
  }

  std::string heading(const CompileEntry& e) const {
    std::string h = e.id.known() ? display_id(e.id, e.attempt) : "[" + e.label + "]";
    if (std::string_view rank = rank_part(e.label); !rank.empty()) h = std::string(rank) + h;
    return h;
  }

  // Where the compiles came from: a trie of their dynamo_start stacks,
  // outermost frame first; each compile hangs under its innermost frame.
  struct TrieNode {
    std::string frame;
    std::vector<size_t> compiles;
    std::map<std::string, std::unique_ptr<TrieNode>> children;  // by frame text
    std::vector<std::string> order;                             // first-seen order
  };

  mu::data trie_data(const TrieNode& n) const {
    mu::data d;
    d.set("frame", n.frame);
    mu::data compiles{mu::data::type::list};
    for (size_t i : n.compiles) {
      mu::data c;
      c.set("label", t.entries[i].label);
      c.set("status", entry_status(t.entries[i]));
      c.set("href", page(i));
      compiles.push_back(c);
    }
    d.set("compiles", compiles);
    mu::data children{mu::data::type::list};
    for (const std::string& key : n.order) children.push_back(trie_data(*n.children.at(key)));
    d.set("children", children);
    d.set("has_children", !n.order.empty());
    return d;
  }

  mu::data trie() const {
    TrieNode root;
    for (size_t i = 0; i < t.entries.size(); ++i) {
      const CompileEntry& e = t.entries[i];
      if (!e.id.known()) continue;
      TrieNode* at = &root;
      std::vector<std::string> frames;
      for (const StackFrame& f : e.stack) frames.push_back(frame_text(f));
      if (frames.empty()) frames.push_back("(no stack logged)");
      for (const std::string& f : frames) {
        auto& child = at->children[f];
        if (!child) {
          child = std::make_unique<TrieNode>();
          child->frame = f;
          at->order.push_back(f);
        }
        at = child.get();
      }
      at->compiles.push_back(i);
    }
    mu::data l{mu::data::type::list};
    for (const std::string& key : root.order) l.push_back(trie_data(*root.children.at(key)));
    return l;
  }

  mu::data compile_row(size_t i) const {
    const CompileEntry& e = t.entries[i];
    mu::data r;
    r.set("label", heading(e));
    r.set("href", page(i));
    r.set("function", e.function().empty() ? "-" : e.function());
    r.set("where", e.function_file().empty() ? "" : e.function_file() + ":" + std::to_string(e.function_line()));
    r.set("status", entry_status(e));
    int breaks = 0;
    std::string failure;
    for (const GraphBreak& gb : e.graph_breaks) {
      if (gb.failure) failure = gb.reason;
      else ++breaks;
    }
    r.set("breaks", std::to_string(breaks));
    r.set("failure", failure);
    r.set("restarts", std::to_string(e.metrics ? e.metrics->restart_reasons.size() : 0));
    r.set("recompiles", std::to_string(e.recompile_reasons.size()));
    std::string cache;
    for (const CacheOutcome& c : cache_outcomes(e)) cache += (cache.empty() ? "" : ", ") + c.cache + " " + c.state;
    r.set("cache", cache);
    r.set("time", e.metrics ? seconds_text(e.metrics->entire_frame_compile_time_s) : "-");
    auto guards = guard_count(t, e);
    r.set("guards", guards ? std::to_string(*guards) : "-");
    return r;
  }

  Status index_page() {
    mu::data d = base("Kiln report: " + t.path);
    d.set("title", t.path);
    d.set("kind", t.kind == TraceKind::TraceLog ? "TORCH_TRACE log" : t.kind == TraceKind::CompileDebug ? "TORCH_COMPILE_DEBUG folder" : "minifier file");
    d.set("file_count", plural(t.files.size(), "file", "files"));
    d.set("size", size_text(t.bytes));
    d.set("records", std::to_string(t.records));
    const TraceTotals totals = trace_totals(t);
    d.set("totals", plural(t.entries.size(), "compile id", "compile ids") + ", " + plural(size_t(totals.graphs), "graph", "graphs") + ", " +
                        plural(size_t(totals.graph_breaks), "graph break", "graph breaks") + ", " +
                        plural(size_t(totals.compile_failures), "compile failure", "compile failures") + ", " +
                        plural(size_t(totals.restarts), "restart", "restarts") + ", " +
                        plural(size_t(totals.recompiles), "recompile", "recompiles"));
    // Ranks: the comparison, and a table per rank.
    std::map<std::string, std::vector<size_t>> by_rank;
    std::vector<std::string> rank_order;
    for (size_t i = 0; i < t.entries.size(); ++i) {
      const CompileEntry& e = t.entries[i];
      const std::string name = e.rank ? "rank " + std::to_string(*e.rank) : "";
      if (!by_rank.count(name)) rank_order.push_back(name);
      by_rank[name].push_back(i);
    }
    const bool ranks = rank_order.size() > 1 || t.files.size() > 1;
    d.set("has_ranks", ranks);
    if (ranks) d.set("rank_text", rank_report_text(rank_report(t)));
    mu::data sections{mu::data::type::list};
    for (const std::string& name : rank_order) {
      mu::data s;
      s.set("name", name);
      s.set("has_name", !name.empty());
      mu::data rows{mu::data::type::list};
      for (size_t i : by_rank[name]) rows.push_back(compile_row(i));
      s.set("compiles", rows);
      sections.push_back(s);
    }
    d.set("rank_sections", sections);
    mu::data trie_list = trie();
    d.set("has_trie", !trie_list.list_value().empty());
    d.set("trie", trie_list);
    mu::data failures{mu::data::type::list};
    for (size_t i = 0; i < t.entries.size(); ++i) {
      const CompileEntry& e = t.entries[i];
      auto add = [&](const std::string& kind, const std::string& text, const std::string& where) {
        mu::data f;
        f.set("label", heading(e));
        f.set("href", page(i));
        f.set("kind", kind);
        f.set("text", text);
        f.set("where", where);
        failures.push_back(f);
      };
      for (const GraphBreak& gb : e.graph_breaks)
        if (gb.failure) add("failure: " + gb.reason, gb.detail.empty() ? "(no reason logged)" : gb.detail,
                            gb.file.empty() ? "no user frame" : gb.file + ":" + std::to_string(gb.line));
      if (e.metrics)
        for (const std::string& r : e.metrics->restart_reasons) add("restart", r, "");
    }
    d.set("has_failures", !failures.list_value().empty());
    d.set("failures", failures);
    mu::data diagnostics{mu::data::type::list};
    for (const Diagnostic& x : t.diagnostics) {
      mu::data item;
      item.set("file", x.file);
      item.set("line", std::to_string(x.line));
      item.set("message", x.message);
      diagnostics.push_back(item);
    }
    d.set("has_diagnostics", !t.diagnostics.empty());
    d.set("diagnostics", diagnostics);
    mu::data unknown{mu::data::type::list};
    for (const auto& [tag, count] : t.unknown_tags) {
      mu::data item;
      item.set("tag", tag);
      item.set("count", std::to_string(count));
      unknown.push_back(item);
    }
    d.set("has_unknown", !t.unknown_tags.empty());
    d.set("unknown", unknown);
    return writer.write("index.html", report_templates::kIndex, d);
  }

  // compilation_metrics as key/value rows, the configuration dumps left out.
  mu::data metrics_rows(const CompileEntry& e) const {
    mu::data rows{mu::data::type::list};
    if (!e.metrics) return rows;
    nlohmann::json m = nlohmann::json::parse(t.metrics_json(e), nullptr, false);
    if (m.is_discarded() || !m.is_object()) {
      mu::data r;
      r.set("key", "(metrics)");
      r.set("value", "the compilation_metrics record is not JSON Kiln can read (NaN or Infinity?)");
      rows.push_back(r);
      return rows;
    }
    for (const auto& [key, value] : m.items()) {
      if (key == "dynamo_config" || key == "inductor_config" || key == "compiler_config") continue;
      std::string v = value.is_string() ? value.get<std::string>() : value.is_null() ? "-" : value.dump();
      if (v.size() > 4000) v = v.substr(0, 4000) + " ...";
      mu::data r;
      r.set("key", key);
      r.set("value", v);
      rows.push_back(r);
    }
    return rows;
  }

  Status payload_page(size_t entry, size_t k, const Artifact& a, const StageSummary* summary) {
    const CompileEntry& e = t.entries[entry];
    mu::data d = base(a.name + " of " + e.label);
    d.set("compile_page", std::to_string(entry) + ".html");
    d.set("label", heading(e));
    d.set("name", a.name);
    d.set("kind", a.graph ? std::string("FX graph (") + stage_role_name(stage_role(a.base)) + ")" : a.tag == "artifact" ? "artifact (" + a.encoding + ")" : a.tag);
    d.set("log", t.files[a.payload.file].path);
    d.set("line", std::to_string(a.line));
    std::string note;
    auto text = t.text(a.payload);
    ++stats.payloads;
    std::string body;
    if (!text) {
      ++stats.unreadable;
      note = "The payload could not be read: " + text.status().to_string();
    } else {
      body = std::move(*text);
      if (body.size() > options.max_payload_bytes) {
        ++stats.truncated;
        body.resize(options.max_payload_bytes);
        body.resize(body.rfind('\n') == std::string::npos ? body.size() : body.rfind('\n'));
        note = "Cut at " + size_text(options.max_payload_bytes) + "; the whole payload is at " + t.files[a.payload.file].path + ":" +
               std::to_string(a.payload.first_line) + ".";
      }
    }
    if (summary && !summary->error.empty()) note += (note.empty() ? "" : " ") + ("Kiln's graph parser does not read it: " + summary->error);
    d.set("has_note", !note.empty());
    d.set("note", note);
    mu::data lines{mu::data::type::list};
    size_t n = 0;
    std::vector<std::string_view> body_lines = split_lines(body);
    if (!body_lines.empty() && body_lines.back().empty()) body_lines.pop_back();  // the final newline ends a line, it starts none
    for (std::string_view line : body_lines) {
      mu::data l;
      l.set("n", std::to_string(++n));
      l.set("text", std::string(line));
      lines.push_back(l);
    }
    d.set("lines", lines);
    d.set("line_count", std::to_string(n));
    return writer.write("c/" + std::to_string(entry) + "/" + std::to_string(k) + ".html", report_templates::kPayload, d);
  }

  Status compile_page(size_t i) {
    const CompileEntry& e = t.entries[i];
    mu::data d = base(heading(e) + " " + e.function());
    d.set("heading", heading(e) + " " + e.function());
    d.set("function", e.function().empty() ? "-" : e.function());
    d.set("where", e.function_file().empty() ? "" : e.function_file() + ":" + std::to_string(e.function_line()));
    d.set("status", entry_status(e));
    d.set("log", t.files.empty() ? std::string() : t.files[e.file].path);
    d.set("log_line", std::to_string(e.first_line));
    std::vector<std::string> stack;
    for (const StackFrame& f : e.stack) stack.push_back(frame_text(f));
    d.set("has_stack", !stack.empty());
    d.set("stack", text_list(stack));

    const std::vector<StageSummary> summaries = stage_summaries(t, e);
    mu::data stages{mu::data::type::list};
    for (size_t k = 0; k < e.artifacts.size(); ++k) {
      const Artifact& a = e.artifacts[k];
      const StageSummary* s = nullptr;
      for (const StageSummary& x : summaries)
        if (x.name == a.name) s = &x;
      mu::data row;
      row.set("name", a.name);
      row.set("href", std::to_string(i) + "/" + std::to_string(k) + ".html");
      row.set("kind", a.graph ? stage_role_name(stage_role(a.base)) : a.tag == "artifact" ? "artifact" : a.tag);
      row.set("nodes", s && s->graph ? std::to_string(s->nodes) : "");
      row.set("ops", s && s->graph ? std::to_string(s->ops) : "");
      row.set("line", std::to_string(a.line));
      row.set("note", s && !s->error.empty() ? "does not parse" : "");
      stages.push_back(row);
      if (Status st = payload_page(i, k, a, s); !st.ok()) return st;
    }
    d.set("stages", stages);

    mu::data breaks{mu::data::type::list};
    for (const GraphBreak& gb : e.graph_breaks) {
      mu::data b;
      b.set("kind", gb.failure ? "compile failure" : "graph break");
      b.set("reason", gb.reason);
      b.set("where", gb.file.empty() ? "no user frame" : gb.file + ":" + std::to_string(gb.line));
      b.set("log_line", std::to_string(gb.record_line));
      b.set("detail", gb.detail);
      b.set("has_detail", !gb.detail.empty());
      std::vector<std::string> frames;
      for (const StackFrame& f : gb.user_stack) frames.push_back(frame_text(f));
      b.set("has_user_stack", !frames.empty());
      b.set("user_stack", text_list(frames));
      breaks.push_back(b);
    }
    d.set("has_breaks", !e.graph_breaks.empty());
    d.set("breaks", breaks);
    const std::vector<std::string> restarts = e.metrics ? e.metrics->restart_reasons : std::vector<std::string>{};
    d.set("has_restarts", !restarts.empty());
    d.set("restarts", text_list(restarts));
    d.set("has_recompile_reasons", !e.recompile_reasons.empty());
    d.set("recompile_reasons", text_list(e.recompile_reasons));
    std::vector<std::string> cache;
    for (const CacheOutcome& c : cache_outcomes(e)) cache.push_back(c.cache + " " + c.state + " (" + c.artifact + ")");
    d.set("has_cache", !cache.empty());
    d.set("cache", text_list(cache));
    auto guards = guard_count(t, e);
    d.set("has_guards", guards.has_value());
    d.set("guards", guards ? std::to_string(*guards) : "");
    mu::data shapes{mu::data::type::list};
    for (const ShapeEvent& ev : e.shape_events) {
      mu::data s;
      s.set("kind", ev.kind);
      std::string what = !ev.expr.empty() ? ev.expr : ev.symbol;
      if (!ev.value.empty()) what += " = " + ev.value;
      if (!ev.source.empty()) what += " (" + ev.source + ")";
      for (const auto& [symbol, source] : ev.symbol_sources) what += "; " + symbol + " = " + source;
      if (ev.prefix == "eval") what += " (evaluated by export: a failure)";
      s.set("text", what);
      s.set("where", ev.user_file.empty() ? "" : ev.user_file + ":" + std::to_string(ev.user_line));
      shapes.push_back(s);
    }
    d.set("has_shapes", !e.shape_events.empty());
    d.set("shapes", shapes);
    mu::data metrics = metrics_rows(e);
    d.set("has_metrics", !metrics.list_value().empty());
    d.set("metrics", metrics);
    mu::data phases{mu::data::type::list};
    for (const ChromiumEvent& ev : t.chromium_events(e)) {
      mu::data p;
      p.set("name", ev.name);
      p.set("phase", ev.phase);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f", ev.ts_us);
      p.set("ts", buf);
      if (ev.dur_us) std::snprintf(buf, sizeof buf, "%.0f", *ev.dur_us);
      p.set("dur", ev.dur_us ? std::string(buf) : "");
      p.set("line", std::to_string(ev.line));
      phases.push_back(p);
    }
    d.set("has_phases", !phases.list_value().empty());
    d.set("phases", phases);
    return writer.write(page(i), report_templates::kCompile, d);
  }
};

}  // namespace

Status write_report(const Trace& t, const std::string& out_dir, const ReportOptions& options, ReportStats* stats_out) {
  std::error_code ec;
  const fs::path out = fs::path(out_dir).lexically_normal();
  if (out.empty()) return Status::error("no output folder given");
  if (fs::exists(out, ec) && !options.overwrite)
    return Status::error("the folder exists; --overwrite replaces it", {out.string(), 0});
  // Written beside the target and renamed into place: an interrupted or failed
  // report never leaves a half-written folder where a finished one was.
  const fs::path staging = fs::path(out.string() + ".kiln-tmp-" + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec) return Status::error("cannot create folder: " + ec.message(), {staging.string(), 0});
  ReportStats stats;
  PageWriter writer(staging);
  Builder b{t, options, stats, writer, t.path};
  Status st = b.index_page();
  for (size_t i = 0; st.ok() && i < t.entries.size(); ++i) {
    st = b.compile_page(i);
    ++stats.compiles;
    if (options.progress) options.progress(double(i + 1) / double(t.entries.size()));
  }
  if (!st.ok()) {
    fs::remove_all(staging, ec);
    return st;
  }
  stats.pages = writer.pages;
  const fs::path old = fs::path(out.string() + ".kiln-old-" + std::to_string(::getpid()));
  if (fs::exists(out, ec)) {
    fs::rename(out, old, ec);
    if (ec) {
      fs::remove_all(staging, ec);
      return Status::error("cannot replace the folder: " + ec.message(), {out.string(), 0});
    }
  }
  fs::rename(staging, out, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::rename(old, out, ec);  // put the old report back
    fs::remove_all(staging, ec);
    return Status::error("cannot move the report into place: " + why, {out.string(), 0});
  }
  fs::remove_all(old, ec);
  if (stats_out) *stats_out = stats;
  return {};
}

}  // namespace kiln::trace
