#include "core/trace/trace.h"

#include <mutex>

#include "core/graph/parser.h"
#include "core/trace/file_data.h"
#include "core/trace/int_expr.h"
#include "core/trace/json_scan.h"
#include "core/trace/module_scopes.h"
#include "core/trace/text_util.h"

namespace kiln::trace {

// File contents, mapped on first use and shared by copies of a Trace.
struct TraceCache {
  std::mutex mu;
  std::vector<std::shared_ptr<const FileData>> data;
  // Parsed stage graphs by "<entry label>\n<stage>"; a failed parse is kept as its status.
  std::map<std::string, Expected<std::shared_ptr<const Graph>>, std::less<>> graphs;
};

std::string CompileId::str() const {
  std::string s;
  if (compiled_autograd_id) {
    s = "!";
    s += std::to_string(*compiled_autograd_id);
    if (frame_id) s += "/";
  }
  if (frame_id) s += std::to_string(*frame_id) + "/" + (frame_compile_id ? std::to_string(*frame_compile_id) : "-");
  return s.empty() ? "unknown" : s;
}

std::string display_id(const CompileId& id, int attempt) {
  if (!id.known()) return "[unknown]";
  std::string s = "[";
  s += id.str();
  if (attempt != 0) {
    s += '_';
    s += std::to_string(attempt);
  }
  s += ']';
  return s;
}

bool looks_like_fx_graph(std::string_view head) {
  size_t pos = 0;
  bool first = true;
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 1;
    size_t indent = line.find_first_not_of(" \t");
    if (indent == std::string_view::npos) continue;
    line.remove_prefix(indent);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (first && line == "ExportedProgram:") return true;
    first = false;
    if (!line.starts_with("class ") || !line.ends_with("):")) continue;
    size_t open = line.find('(');
    if (open == std::string_view::npos) continue;
    std::string_view base = line.substr(open + 1, line.size() - open - 3);
    if (base == "torch.nn.Module" || base == "nn.Module" || base == "torch.fx.GraphModule") return true;
  }
  return false;
}

StageRole stage_role(std::string_view base) {
  auto has = [&](std::string_view part) { return base.find(part) != std::string_view::npos; };
  if (base == "dynamo_output_graph" || base == "compiled_autograd_graph" || has("optimize_ddp_split")) return StageRole::Dynamo;
  if (has("pre_grad")) return StageRole::PreGrad;
  if (has("joint")) return StageRole::Joint;
  if (base == "aot_forward_graph") return StageRole::Forward;
  if (base == "aot_backward_graph") return StageRole::Backward;
  if (base == "aot_inference_graph") return StageRole::Inference;
  if (has("post_grad") || has("recompile") || base == "fx_graph_readable" || base == "fx_graph_transformed" ||
      base == "fx_graph_runnable")
    return StageRole::PostGrad;
  if (has("output_code")) return StageRole::OutputCode;
  if (has("exported_program") || has("export")) return StageRole::Export;
  if (base == "repro") return StageRole::Repro;
  return StageRole::Other;
}

const char* stage_role_name(StageRole role) {
  switch (role) {
    case StageRole::Dynamo: return "dynamo";
    case StageRole::PreGrad: return "pre-grad";
    case StageRole::Joint: return "joint";
    case StageRole::Forward: return "forward";
    case StageRole::Backward: return "backward";
    case StageRole::Inference: return "inference";
    case StageRole::PostGrad: return "post-grad";
    case StageRole::OutputCode: return "output code";
    case StageRole::Export: return "export";
    case StageRole::Repro: return "repro";
    case StageRole::Other: return "other";
  }
  return "other";
}

const Artifact* CompileEntry::artifact(std::string_view name) const {
  for (const Artifact& a : artifacts)
    if (a.name == name) return &a;
  return nullptr;
}

std::string CompileEntry::function() const {
  if (!stack.empty()) return stack.back().function;
  return metrics ? metrics->co_name : std::string();
}
std::string CompileEntry::function_file() const {
  if (!stack.empty()) return stack.back().file;
  return metrics ? metrics->co_filename : std::string();
}
int CompileEntry::function_line() const {
  if (!stack.empty()) return stack.back().line;
  return metrics && metrics->co_firstlineno ? int(*metrics->co_firstlineno) : 0;
}

Trace::Trace() : cache_(std::make_shared<TraceCache>()) {}

namespace {
// "[0/1_2]" -> "0/1": the forms tlparse prints are accepted too.
std::string_view strip_display(std::string_view id) {
  if (id.size() >= 2 && id.front() == '[' && id.back() == ']') {
    id = id.substr(1, id.size() - 2);
    size_t us = id.rfind('_');
    if (us != std::string_view::npos && id.find('/') != std::string_view::npos && us > id.rfind('/')) id = id.substr(0, us);
  }
  return id;
}
}  // namespace

std::optional<int64_t> rank_of_log_name(std::string_view name) {
  constexpr std::string_view kPrefix = "dedicated_log_torch_trace_rank_";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  size_t digits = 0;
  while (digits < name.size() && digits < 9 && name[digits] >= '0' && name[digits] <= '9') ++digits;
  if (digits == 0 || (digits < name.size() && name[digits] != '_' && name[digits] != '.')) return std::nullopt;
  return std::stoll(std::string(name.substr(0, digits)));
}

std::string_view rank_part(std::string_view label) {
  if (label.size() < 3 || label[0] != 'r') return {};
  size_t i = 1;
  while (i < label.size() && label[i] >= '0' && label[i] <= '9') ++i;
  return i > 1 && i < label.size() && label[i] == ':' ? label.substr(0, i + 1) : std::string_view{};
}

const CompileEntry* Trace::find(std::string_view id) const {
  for (const CompileEntry& e : entries)
    if (e.label == id) return &e;
  std::string_view plain = strip_display(id);
  for (const CompileEntry& e : entries)
    if (e.label == plain || e.id.str() == plain) return &e;
  return nullptr;
}

void Trace::keep_file_data(uint32_t file, std::shared_ptr<const FileData> data) {
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (cache_->data.size() <= file) cache_->data.resize(file + 1);
  cache_->data[file] = std::move(data);
}

Expected<std::shared_ptr<const FileData>> Trace::file_data(uint32_t file) const {
  if (file >= files.size()) return Status::error("payload refers to file #" + std::to_string(file) + ", which the trace does not have");
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (cache_->data.size() <= file) cache_->data.resize(file + 1);
  if (!cache_->data[file]) {
    auto mapped = FileData::map(files[file].path);
    if (!mapped) return mapped.status();
    cache_->data[file] = *mapped;
  }
  return cache_->data[file];
}

Expected<std::string> Trace::text(const PayloadRef& ref) const {
  auto data = file_data(ref.file);
  if (!data) return data.status();
  std::string_view all = (*data)->text();
  if (ref.offset > all.size() || ref.length > all.size() - ref.offset)
    return Status::error("the file changed since it was indexed (payload lies past its end)",
                         {files[ref.file].path, ref.first_line});
  std::string_view region = all.substr(ref.offset, ref.length);
  if (ref.encoding == PayloadEncoding::Plain) return std::string(region);
  std::string out;
  out.reserve(region.size());
  bool first = true;
  for_each_payload_line(region, [&](std::string_view line) {
    if (!first) out += '\n';
    first = false;
    out.append(line);
  });
  return out;
}

Expected<std::string> Trace::payload_text(const CompileEntry& entry, std::string_view stage) const {
  if (const Artifact* a = entry.artifact(stage)) return text(a->payload);
  std::string have;
  for (const Artifact& a : entry.artifacts) have += (have.empty() ? "" : ", ") + a.name;
  return Status::error(entry.label + " has no stage '" + std::string(stage) + "'" +
                       (have.empty() ? std::string(" (it has no payloads)") : "; it has: " + have));
}

std::string Trace::metrics_json(const CompileEntry& entry) const {
  if (!entry.metrics) return {};
  auto t = text(entry.metrics->json);
  return t ? *t : std::string();
}

namespace {

// "8", "3136*8", "32*s0" with s0 bound by a reader.symint (its recorded hint),
// else the text as a symbol ("s77" when load_args does not bind it).
SymInt size_of(const std::string& text, const SymbolValues& symbols) {
  if (auto v = eval_int_expr(text, symbols)) return SymInt::of(*v);
  return SymInt::symbol(text);
}

// A repro's forward() carries no annotations; its load_args says what each
// input is. Placeholders take their tensor's dtype, sizes, strides and device
// from it (in order, when the counts agree), so the graph can be lowered and
// measured like an annotated dump.
void annotate_from_load_args(Graph& g, const std::vector<ReproInput>& inputs) {
  std::vector<Node*> placeholders;
  for (Node& n : g.nodes)
    if (n.op == OpKind::Placeholder) placeholders.push_back(&n);
  if (placeholders.size() != inputs.size()) return;
  std::vector<std::string> placeholder_symbols;
  for (const Node* n : placeholders) placeholder_symbols.push_back(n->meta.val.kind == Val::Kind::Sym ? n->meta.val.text : std::string());
  const SymbolValues symbols = bind_repro_symbols(inputs, placeholder_symbols).values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ReproInput& in = inputs[i];
    Node& n = *placeholders[i];
    if (in.kind != "tensor" || n.meta.val.kind != Val::Kind::None) continue;
    TensorMeta m;
    m.dtype = in.dtype;
    m.device = in.device;
    for (const std::string& d : in.shape) m.sizes.push_back(size_of(d, symbols));
    if (!in.stride.empty()) {
      m.strides.emplace();
      for (const std::string& d : in.stride) m.strides->push_back(size_of(d, symbols));
    }
    n.meta.val = Val::of_tensor(std::move(m));
  }
}

}  // namespace

Expected<std::shared_ptr<const Graph>> Trace::graph(const CompileEntry& entry, std::string_view stage) const {
  std::string key = entry.label + "\n" + std::string(stage);
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->graphs.find(key);
    if (it != cache_->graphs.end()) return it->second;
  }
  const Artifact* a = entry.artifact(stage);
  Expected<std::shared_ptr<const Graph>> result = Status::error("");
  if (!a) {
    result = payload_text(entry, stage).status();
  } else if (auto text = this->text(a->payload); !text) {
    result = text.status();
  } else {
    try {
      auto g = parse_graph_module(*text, files[a->payload.file].path, a->payload.first_line);
      // The inputs are the load_args of the file the Repro class came from (add_repro).
      if (g && !entry.inputs.empty() && (a->base == "repro" || a->base == "fx_graph_runnable"))
        annotate_from_load_args(*g, entry.inputs);
      // PyTorch's dumps print no module scopes: infer them from parameter names and source lines.
      if (g) {
        std::vector<std::string> dynamo_inputs;
        if (stage != "dynamo_output_graph" && entry.artifact("dynamo_output_graph"))
          if (auto d = graph(entry, "dynamo_output_graph"); d && *d) dynamo_inputs = input_state_paths(**d);
        infer_module_scopes(*g, dynamo_inputs);
      }
      if (g) result = std::shared_ptr<const Graph>(std::make_shared<Graph>(std::move(*g)));
      else result = g.status();
    } catch (const Error& e) {  // bad input must not escape as an exception
      result = e.to_status();
    }
  }
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->graphs.emplace(std::move(key), std::move(result)).first->second;
}

std::vector<ChromiumEvent> Trace::chromium_events(const CompileEntry& entry) const {
  std::vector<ChromiumEvent> out;
  std::vector<json::Member> ms, args;
  json::ParseError err;
  for (const PayloadRef& ref : entry.chromium_events) {
    auto t = text(ref);
    if (!t || !json::parse_object(*t, ms, err)) continue;
    ChromiumEvent ev;
    ev.line = ref.first_line - 1;
    if (const auto* v = json::find(ms, "name")) ev.name = json::to_string(*v);
    if (const auto* v = json::find(ms, "ph")) ev.phase = json::to_string(*v);
    if (const auto* v = json::find(ms, "cat")) ev.category = json::to_string(*v);
    if (const auto* v = json::find(ms, "ts")) json::to_double(*v, ev.ts_us);
    double dur = 0;
    if (const auto* v = json::find(ms, "dur"); v && json::to_double(*v, dur)) ev.dur_us = dur;
    if (const auto* v = json::find(ms, "args")) {
      json::members(*v, args);
      if (const auto* f = json::find(args, "fn_name")) ev.fn_name = json::to_string(*f);
    }
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace kiln::trace
