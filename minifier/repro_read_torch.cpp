// PyTorch's minifier files (repro.py, minifier_launcher.py): the graph is the
// `Repro` module's forward, the inputs what `load_args` describes. Each
// `reader.storage(hash, nbytes, ...)` is read from PyTorch's content store when
// the repro's storage folder holds it (torch/utils/_content_store.py:
// `<save_dir>/storages/<hash>`, a torch.save'd storage, which is a zip whose
// `<archive>/data/0` entry is the raw bytes); otherwise it is drawn as
// InputReader draws it (rand_strided over nbytes / itemsize elements of the
// storage dtype), from a generator seeded with kDefaultInputSeed.
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "compiler/pipeline/emitter.h"
#include "core/trace/reader.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"
#include "minifier/repro_zip.h"
#include "core/util/limits.h"

namespace kiln::minify {

namespace fs = std::filesystem;

namespace {

int64_t int_field(const std::string& text, const std::string& what, const trace::ReproInput& in,
                  const std::string& file) {
  std::string_view s = text;
  size_t i = !s.empty() && s[0] == '-' ? 1 : 0;
  bool digits = i < s.size();
  for (size_t k = i; k < s.size() && digits; ++k) digits = s[k] >= '0' && s[k] <= '9';
  if (digits && s.size() - i > 18)
    throw Error("input '" + in.name + "': " + what + " " + text + " does not fit in 64 bits", {file, in.line});
  if (!digits)
    throw Error("input '" + in.name + "': " + what + " '" + text +
                    "' is not a plain integer (symbolic sizes are not supported: Kiln replays concrete shapes)",
                {file, in.line});
  return std::stoll(text);
}

Shape int_list(const std::vector<std::string>& items, const std::string& what, const trace::ReproInput& in,
               const std::string& file) {
  Shape out;
  for (const std::string& s : items) out.push_back(int_field(s, what, in, file));
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
  InputLoader(std::string file, std::vector<fs::path> folders)
      : file_(std::move(file)), folders_(std::move(folders)), gen_(kDefaultInputSeed) {}

  Tensor tensor(const trace::ReproInput& in, std::string& origin) {
    std::optional<DType> dtype = dtype_from_name(in.dtype);
    if (!dtype) throw Error("input '" + in.name + "': dtype '" + in.dtype + "' is not one Kiln knows", {file_, in.line});
    Shape sizes = int_list(in.shape, "size", in, file_);
    Shape strides = int_list(in.stride, "stride", in, file_);
    int64_t offset = int_field(in.storage_offset, "storage_offset", in, file_);
    if (strides.size() != sizes.size())
      throw Error("input '" + in.name + "': " + std::to_string(sizes.size()) + " sizes but " +
                      std::to_string(strides.size()) + " strides",
                  {file_, in.line});
    const LoadedStorage& storage = storage_for(in, *dtype);
    int64_t itemsize = int64_t(element_size(*dtype));
    int64_t elements = int64_t(storage.bytes.size()) / itemsize;
    // The last element the view reads; an empty view reads none.
    int64_t last = offset;
    bool empty = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0)
        throw Error("input '" + in.name + "': negative size or stride", {file_, in.line});
      empty = empty || sizes[d] == 0;
      last += sizes[d] > 0 ? (sizes[d] - 1) * strides[d] : 0;
    }
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
  const LoadedStorage& storage_for(const trace::ReproInput& in, DType dtype) {
    auto it = storages_.find(in.storage);
    if (it != storages_.end()) return it->second;
    int64_t nbytes = int_field(in.storage_bytes, "storage size", in, file_);
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
  CpuGenerator gen_;
  std::map<std::string, LoadedStorage> storages_;
  int64_t declared_ = 0;  // bytes of the storages so far
};

}  // namespace

Repro repro_from_torch_source(Graph g, const std::vector<trace::ReproInput>& inputs, const std::string& source,
                              const std::string& file, int first_line) {
  Repro r = repro_of_graph(std::move(g), source, file, first_line);
  const int class_line = first_line - 1 + line_containing(source, "class Repro(");
  const int load_args_line = line_containing(source, "def load_args(");
  InputLoader loader(file, storage_folders(file, source));
  std::vector<const Node*> placeholders;
  for (const Node& n : r.graph.nodes)
    if (n.op == OpKind::Placeholder) placeholders.push_back(&n);
  size_t k = 0;
  for (const trace::ReproInput& in : inputs) {
    if (in.kind != "tensor")
      throw Error("reader." + in.kind + " inputs are not supported (Kiln replays graphs with tensor inputs only)",
                  {file, in.line});
    if (k == placeholders.size())
      throw Error("load_args describes more inputs than forward() takes (" + std::to_string(placeholders.size()) + ")",
                  {file, in.line});
    std::string origin;
    r.inputs.push_back(loader.tensor(in, origin));
    r.input_origins.push_back(origin);
    ++k;
  }
  if (k != placeholders.size())
    throw Error("forward() takes " + std::to_string(placeholders.size()) + " inputs but load_args describes " +
                    std::to_string(k) + (load_args_line == 0 ? " (there is no load_args)" : ""),
                {file, load_args_line ? first_line - 1 + load_args_line : class_line});
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
