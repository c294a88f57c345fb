// PyTorch's minifier files (repro.py, minifier_launcher.py): the graph is the
// `Repro` module's forward, the inputs what `load_args` describes. Each
// `reader.storage(hash, nbytes, ...)` is read from PyTorch's content store when
// the repro's storage folder holds it (torch/utils/_content_store.py:
// `<save_dir>/storages/<hash>`, a torch.save'd storage, which is a zip whose
// `<archive>/data/0` entry is the raw bytes); otherwise it is drawn as
// InputReader draws it (rand_strided over nbytes / itemsize elements of the
// storage dtype), from a generator seeded with kDefaultInputSeed.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "compiler/capture/graph_region.h"
#include "compiler/passes/specialize_ints.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/pipeline/to_aten.h"
#include "core/trace/int_expr.h"
#include "core/trace/reader.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"
#include "minifier/repro_zip.h"
#include "core/util/limits.h"

namespace kiln::minify {

namespace fs = std::filesystem;

namespace {

// The symbols of a dynamic-shape repro, and what to say when one has no value.
struct Symbols {
  trace::SymbolBinding binding;
  std::string unbound_note(const std::vector<std::string>& used) const {
    std::string names;
    int count = 0;
    for (const std::string& u : used)
      if (!binding.values.count(u)) names += (count++ ? ", " : "") + u;
    std::string symints;
    for (const std::string& s : binding.symints) symints += (symints.empty() ? "" : ", ") + s;
    return (count == 1 ? "the symbol " + names + " has" : "the symbols " + names + " have") +
           " no value: load_args names its reader.symint inputs by placeholder" + (symints.empty() ? "" : " (" + symints + ")") +
           " and its sizes by the shape environment's symbols, and the file does not say which is which (an annotation on "
           "forward's parameter, arg: \"Sym(s0)\", would)";
  }
};

// A size, stride or storage size: a literal, a product PyTorch wrote out
// ("3136*8"), or an expression of the repro's symbols ("32*s0").
int64_t int_field(const std::string& text, const std::string& what, const trace::ReproInput& in, const std::string& file,
                  const Symbols& symbols) {
  if (auto v = trace::eval_int_expr(text, symbols.binding.values)) return *v;
  if (!text.empty() && text.find_first_not_of("-0123456789") == std::string::npos)
    throw Error("input '" + in.name + "': " + what + " " + text + " does not fit in 64 bits", {file, in.line});
  const std::vector<std::string> used = trace::expr_symbols(text);
  const bool unbound = std::any_of(used.begin(), used.end(), [&](const std::string& u) { return !symbols.binding.values.count(u); });
  throw Error("input '" + in.name + "': " + what + " '" + text + "': " +
                  (unbound ? symbols.unbound_note(used)
                           : "not an integer expression Kiln can evaluate (integers, + - * // %; a 64-bit overflow is refused)"),
              {file, in.line});
}

Shape int_list(const std::vector<std::string>& items, const std::string& what, const trace::ReproInput& in,
               const std::string& file, const Symbols& symbols) {
  Shape out;
  for (const std::string& s : items) out.push_back(int_field(s, what, in, file, symbols));
  return out;
}

// The folders a repro's content store may be in, most specific first: the
// save_dir its run block names, then beside the file (repro folders are
// often moved or shared without their absolute paths).
std::vector<fs::path> storage_folders(const std::string& path, const std::string& source) {
  std::vector<fs::path> out;
  static const std::regex save_dir(R"re(save_dir\s*=\s*(?:'([^']*)'|"([^"]*)"))re");
  std::smatch m;
  if (std::regex_search(source, m, save_dir)) {
    std::string dir = m[1].matched ? m[1].str() : m[2].str();
    if (!dir.empty()) out.push_back(fs::path(dir) / "storages");
  }
  fs::path here = fs::path(path).parent_path();
  if (here.empty()) here = ".";
  out.push_back(here / "storages");
  out.push_back(here / "checkpoints" / "storages");
  out.push_back(here / "minifier" / "checkpoints" / "storages");
  return out;
}

// The raw bytes of a torch.save'd storage.
std::string read_saved_storage(const fs::path& file) {
  ZipArchive zip = [&] {
    auto z = ZipArchive::open(file.string());
    if (!z) throw Error("not a torch.save file: " + z.status().message(), {file.string(), 0});
    return std::move(*z);
  }();
  const ZipEntry* data = nullptr;
  for (const ZipEntry& e : zip.entries()) {
    size_t slash = e.name.find('/');
    if (slash == std::string::npos) continue;
    std::string_view rest = std::string_view(e.name).substr(slash + 1);
    if (rest.starts_with("byteorder")) {
      auto order = zip.read(e);
      if (order && *order != "little")
        throw Error("the storage is saved " + *order + "-endian; Kiln reads little-endian only", {file.string(), 0});
    }
    if (!rest.starts_with("data/") || rest.size() == 5) continue;
    if (data) throw Error("holds several storages; a content-store file holds one", {file.string(), 0});
    data = &e;
  }
  if (!data) throw Error("not a saved storage: no <archive>/data/<key> entry", {file.string(), 0});
  auto bytes = zip.read(*data);
  if (!bytes) throw Error(bytes.status().message(), {file.string(), 0});
  return std::move(*bytes);
}

struct LoadedStorage {
  std::string bytes;
  std::string origin;
};

class InputLoader {
 public:
  InputLoader(std::string file, std::vector<fs::path> folders, Symbols symbols)
      : file_(std::move(file)), folders_(std::move(folders)), symbols_(std::move(symbols)), gen_(kDefaultInputSeed) {}

  Tensor tensor(const trace::ReproInput& in, std::string& origin) {
    std::optional<DType> dtype = dtype_from_name(in.dtype);
    if (!dtype) throw Error("input '" + in.name + "': dtype '" + in.dtype + "' is not one Kiln knows", {file_, in.line});
    Shape sizes = int_list(in.shape, "size", in, file_, symbols_);
    Shape strides = int_list(in.stride, "stride", in, file_, symbols_);
    int64_t offset = int_field(in.storage_offset, "storage_offset", in, file_, symbols_);
    if (strides.size() != sizes.size())
      throw Error("input '" + in.name + "': " + std::to_string(sizes.size()) + " sizes but " +
                      std::to_string(strides.size()) + " strides",
                  {file_, in.line});
    int64_t itemsize = int64_t(element_size(*dtype));
    // The last element the view reads; an empty view reads none.
    int64_t last = offset;
    bool empty = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0)
        throw Error("input '" + in.name + "': negative size or stride", {file_, in.line});
      empty = empty || sizes[d] == 0;
      int64_t reach = 0;
      if (sizes[d] > 0 && (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) || __builtin_add_overflow(last, reach, &last)))
        throw Error("input '" + in.name + "': its sizes and strides reach past a 64-bit offset", {file_, in.line});
    }
    // The 2022 args lists give no storage size: rand_strided makes one just large enough.
    int64_t needed = 0;
    if (!empty && (__builtin_add_overflow(last, 1, &needed) || __builtin_mul_overflow(needed, itemsize, &needed)))
      throw Error("input '" + in.name + "': its storage would need more bytes than a 64-bit size holds", {file_, in.line});
    const LoadedStorage& storage = storage_for(in, *dtype, needed);
    int64_t elements = int64_t(storage.bytes.size()) / itemsize;
    if (offset < 0 || (!empty && last >= elements))
      throw Error("input '" + in.name + "' reaches element " + std::to_string(last) + " of its storage, which holds " +
                      std::to_string(elements) + " " + std::string(dtype_name(*dtype)) + " elements",
                  {file_, in.line});
    // Views of one storage become separate copies: the graphs Kiln replays
    // are functional, so sharing would never be observed.
    Tensor base = Tensor::empty({elements}, *dtype);
    std::memcpy(base.raw_data(), storage.bytes.data(), size_t(elements * itemsize));
    origin = storage.origin;
    return base.as_strided(sizes, strides, offset);
  }

 private:
  // Storages are made in load_args order, so random ones draw from the
  // generator in the order InputReader would.
  const LoadedStorage& storage_for(const trace::ReproInput& in, DType dtype, int64_t needed_bytes) {
    auto it = storages_.find(in.storage);
    if (it != storages_.end()) return it->second;
    int64_t nbytes = in.storage_bytes.empty() ? needed_bytes : int_field(in.storage_bytes, "storage size", in, file_, symbols_);
    // Checked before anything is read or drawn: a file may declare terabytes.
    if (nbytes < 0) throw Error("input '" + in.name + "': negative storage size", {file_, in.line});
    declared_ = __builtin_add_overflow(declared_, nbytes, &declared_) ? -1 : declared_;
    if (Status st = check_declared_bytes(declared_, "load_args (up to input '" + in.name + "')", {file_, in.line}); !st.ok())
      throw Error(st.message(), st.where());
    LoadedStorage s;
    if (std::optional<fs::path> saved = find_saved(in.storage_hash)) {
      s.bytes = read_saved_storage(*saved);
      if (int64_t(s.bytes.size()) < nbytes)
        throw Error("holds " + std::to_string(s.bytes.size()) + " bytes but load_args (" + file_ + ":" +
                        std::to_string(in.line) + ") says " + std::to_string(nbytes),
                    {saved->string(), 0});
      s.origin = "stored";
    } else {
      // InputWriter writes the storage's dtype_hint from the first tensor on
      // it, so that tensor's dtype is the hint.
      Tensor t = rand_strided({nbytes / int64_t(element_size(dtype))}, {1}, dtype, gen_);
      s.bytes.assign(static_cast<const char*>(t.raw_data()), size_t(t.numel()) * element_size(dtype));
      s.origin = random_origin(kDefaultInputSeed);
    }
    return storages_.emplace(in.storage, std::move(s)).first->second;
  }

  std::optional<fs::path> find_saved(const std::string& hash) const {
    if (hash.empty() || hash.find('/') != std::string::npos) return std::nullopt;
    std::error_code ec;
    for (const fs::path& dir : folders_)
      if (fs::is_regular_file(dir / hash, ec)) return dir / hash;
    return std::nullopt;
  }

  std::string file_;
  std::vector<fs::path> folders_;
  Symbols symbols_;
  CpuGenerator gen_;
  std::map<std::string, LoadedStorage> storages_;
  int64_t declared_ = 0;  // bytes of the storages so far
};

// An after-dynamo graph of older PyTorch versions calls submodules and
// reads parameters that Repro.__init__ builds (`self.L__self___fc =
// Linear(...)`, `torch.nn.Parameter(torch.randn(...))`): its values and code
// are in the class, not the graph.
bool holds_module_state(const Graph& g, std::string_view source) {
  bool attributes = false;
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::CallModule) return true;
    attributes |= n.op == OpKind::GetAttr;
  }
  return attributes && source.find("Parameter(") != std::string_view::npos;
}

// The `class Repro` block, with __init__'s moves to a GPU dropped: Kiln
// replays on the CPU, as legalize() moves every device argument there.
std::string repro_class_text(std::string_view source, int& class_line) {
  std::string out;
  bool in_class = false;
  int line = 0;
  static const std::regex to_gpu(R"re(\.(cuda\(\)|to\((device\(type=)?['"]cuda[^)]*\)\)?)\s*$)re");
  for (size_t pos = 0; pos < source.size();) {
    const size_t eol = std::min(source.find('\n', pos), source.size());
    std::string text(source.substr(pos, eol - pos));
    pos = eol + 1;
    ++line;
    if (!in_class) {
      if (!text.starts_with("class Repro(")) continue;
      in_class = true;
      class_line = line;
    } else if (!text.empty() && text[0] != ' ' && text[0] != '\t' && text[0] != '#' && text.find_first_not_of(" \t\r") != std::string::npos) {
      break;
    }
    out += std::regex_replace(text, to_gpu, "") + "\n";
  }
  return out;
}

// Runs Repro's class in Kiln's interpreter and captures its forward on the
// inputs (pipeline::lower_module_class); the parameters and buffers it reads
// become inputs after the file's own, as Kiln's layers initialize them (the
// file does not hold their values, and PyTorch's own replay draws new ones).
void lower_module_repro(Repro& r, std::string_view source, int first_line) {
  int class_line = 0;
  const std::string text = repro_class_text(source, class_line);
  Expected<pipeline::LoweredModule> lowered = pipeline::lower_module_class(text, "Repro", r.inputs);
  if (!lowered)
    throw Error("a torch-level graph of submodules that Kiln cannot lower to ATen: " + lowered.status().message(),
                {r.graph_file, first_line - 1 + class_line});
  std::map<std::string, int> lines = lowered_node_lines(lowered->graph, r.node_lines);
  std::vector<std::string> origins;
  for (size_t k = 0; k < lowered->inputs.size(); ++k) {
    size_t given = r.inputs.size();
    for (size_t j = 0; j < r.inputs.size(); ++j)
      if (r.inputs[j].raw_data() == lowered->inputs[k].raw_data()) given = j;
    origins.push_back(given < r.input_origins.size() ? r.input_origins[given]
                                                     : "module state (Repro.__init__, initialized by Kiln's layers)");
  }
  r.graph = std::move(lowered->graph);
  r.inputs = std::move(lowered->inputs);
  r.input_origins = std::move(origins);
  r.node_lines = std::move(lines);
  r.lowered_from_torch = true;
}

}  // namespace

Repro repro_from_torch_source(Graph g, const std::vector<trace::ReproInput>& inputs, const std::string& source,
                              const std::string& file, int first_line) {
  // The graph is checked once its SymInt inputs are specialized: the integer
  // arithmetic Dynamo recorded on them is not ATen, and folds away below.
  Repro r;
  r.path = file;
  r.graph = std::move(g);
  r.graph_file = file;
  r.node_lines = node_lines_of(source, first_line);
  const int class_line = first_line - 1 + line_containing(source, "class Repro(");
  const int load_args_line = line_containing(source, "def load_args(");
  std::vector<NodeId> placeholders;
  std::vector<std::string> placeholder_symbols;
  for (NodeId id = 0; id < NodeId(r.graph.size()); ++id)
    if (r.graph[id].op == OpKind::Placeholder) {
      placeholders.push_back(id);
      const Val& val = r.graph[id].meta.val;
      placeholder_symbols.push_back(val.kind == Val::Kind::Sym ? val.text : std::string());
    }
  // A dynamic-shape repro's symbols, at the values the failure was recorded at.
  for (const trace::ReproInput& in : inputs)
    if (in.kind == "symint" && !trace::eval_int_expr(in.value))
      throw Error("reader.symint(" + in.value + "): no recorded value to replay at", {file, in.line});
  Symbols symbols{trace::bind_repro_symbols(inputs, placeholder_symbols)};
  InputLoader loader(file, storage_folders(file, source), symbols);
  if (inputs.size() > placeholders.size())
    throw Error("load_args describes more inputs than forward() takes (" + std::to_string(placeholders.size()) + ")",
                {file, inputs[placeholders.size()].line});
  if (inputs.size() < placeholders.size())
    throw Error("forward() takes " + std::to_string(placeholders.size()) + " inputs but load_args describes " +
                    std::to_string(inputs.size()) + (load_args_line == 0 ? " (there is no load_args)" : ""),
                {file, load_args_line ? first_line - 1 + load_args_line : class_line});
  std::map<NodeId, int64_t> fixed;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const trace::ReproInput& in = inputs[k];
    if (in.kind == "symint") {
      fixed[placeholders[k]] = *trace::eval_int_expr(in.value);
      std::string name = in.name.empty() ? r.graph[placeholders[k]].name : in.name;
      if (auto sym = symbols.binding.symbol_of.find(in.name); sym != symbols.binding.symbol_of.end() && sym->second != name)
        name += " (" + sym->second + ")";
      r.specialized.push_back({name, fixed[placeholders[k]]});
      continue;
    }
    if (in.kind != "tensor")
      throw Error("reader." + in.kind + " inputs are not supported (Kiln replays tensor and SymInt inputs)", {file, in.line});
    std::string origin;
    r.inputs.push_back(loader.tensor(in, origin));
    r.input_origins.push_back(origin);
  }
  if (!fixed.empty()) {
    std::map<NodeId, std::vector<int64_t>> sizes;
    for (size_t k = 0, t = 0; k < inputs.size() && k < placeholders.size(); ++k)
      if (inputs[k].kind == "tensor" && t < r.inputs.size()) sizes[placeholders[k]] = r.inputs[t++].sizes();
    if (Status st = pipeline::specialize_int_inputs(r.graph, fixed, sizes); !st.ok()) throw Error(st.message(), {file, class_line});
  }
  // run_repro(..., autocast=True): the graph runs under autocast, whose casts
  // are not in it; lowered without them it would compute in other dtypes.
  if (capture::is_torch_level(r.graph))
    if (const int autocast = line_containing(source, "autocast=True"); autocast > 0)
      throw Error("an after-dynamo repro run under autocast (autocast=True): autocast's casts are not in the graph, and "
                  "Kiln lowers it without them, which would compute in other dtypes than PyTorch's run",
                  {file, first_line - 1 + autocast});
  if (holds_module_state(r.graph, source)) {
    lower_module_repro(r, source, first_line);
  } else {
    constants_to_inputs(r, repro_constants(source, file, first_line));
    if (capture::is_torch_level(r.graph)) lower_torch_level(r);
  }
  check_aten_graph(r);
  propagate_meta_vals(r.graph, r.inputs);
  return r;
}

Repro read_torch_minifier_file(const std::string& path) {
  auto trace = trace::read_minifier_file(path);
  if (!trace) throw Error(trace.status().message(), trace.status().where());
  const trace::CompileEntry& entry = trace->entries.at(0);
  for (const trace::Diagnostic& d : trace->diagnostics) throw Error(d.message, {d.file, d.line});
  auto graph = trace->graph(entry, "repro");
  if (!graph) throw Error(graph.status().message(), graph.status().where());
  return repro_from_torch_source(**graph, entry.inputs, read_text_file(path), path, 1);
}

}  // namespace kiln::minify
