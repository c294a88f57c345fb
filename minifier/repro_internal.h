#pragma once
// Shared by the repro_*.cpp files; not part of the minifier's interface.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/generator.h"
#include "core/trace/trace.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"
#include "minifier/repro.h"

namespace kiln::minify {

// The names inside a Kiln repro folder or zip.
inline constexpr std::string_view kGraphFile = "graph.txt";
inline constexpr std::string_view kInputsFile = "inputs.safetensors";
inline constexpr std::string_view kPredicateFile = "predicate.json";
inline constexpr std::string_view kReadmeFile = "README.txt";
// safetensors metadata of inputs.safetensors: a JSON array, one origin per input.
inline constexpr std::string_view kOriginsKey = "input_origins";

// torch._dynamo.testing.rand_strided on the CPU, drawing from `gen`.
Tensor rand_strided(const Shape& sizes, const Shape& strides, DType dtype, CpuGenerator& gen);

// A copy of `src` laid out with `strides`, made with a plain loop: the
// minifier forks children per candidate, so its parent (which reads and
// writes repros) must never start the eager kernels' thread pool.
Tensor plain_copy(const Tensor& src, const Shape& strides);
inline Tensor plain_contiguous(const Tensor& t) { return t.is_contiguous() ? t : plain_copy(t, contiguous_strides(t.sizes())); }

// "random (seed 0)", the origin of an input drawn from the seed.
inline std::string random_origin(uint64_t seed) { return "random (seed " + std::to_string(seed) + ")"; }

// The whole file, or a kiln::Error naming it.
std::string read_text_file(const std::string& path);

// 1-based line of the first line of `text` containing `needle` (0 when none).
int line_containing(std::string_view text, std::string_view needle);

// The line each node is defined on in graph text (`name: "f32[4]" = ...`,
// `name = ...`, a parameter line `name: "f32[4]",`), counted from `first_line`.
std::map<std::string, int> node_lines_of(std::string_view text, int first_line = 1);

// Refuses graphs the minifier cannot replay: Dynamo-level calls (torch.sin,
// methods, modules, attributes) rather than ATen ops; the error names the
// node's line in r.graph_file.
void check_aten_graph(const Repro& r);

// A repro of a graph parsed from print_readable text: inputs drawn from the
// placeholders' annotations (kDefaultInputSeed). `first_line` is the line of
// the text's first line in `file`.
Repro repro_from_graph_text(Graph g, std::string_view text, const std::string& file, int first_line = 1);

// Replaces a torch-level graph by Kiln's lowering of it to ATen, run on r.inputs.
void lower_torch_level(Repro& r);
// The lines of a lowered graph's nodes: each ATen node's is the torch-level
// node's it came from (meta.from), else its own name's.
std::map<std::string, int> lowered_node_lines(const Graph& aten, const std::map<std::string, int>& torch_lines);

// A Repro holding `g` read from `text` of `file` (its nodes' lines counted from
// first_line), checked to be an ATen graph Kiln runs (a torch-level one is
// checked once lowered); inputs not yet set.
Repro repro_of_graph(Graph g, std::string_view text, const std::string& file, int first_line);

// A repro of a Repro module's graph and load_args inputs (line numbers in
// `file`); `source` is the text around them (searched for save_dir) and
// `first_line` its first line in `file`.
Repro repro_from_torch_source(Graph g, const std::vector<trace::ReproInput>& inputs, const std::string& source,
                              const std::string& file, int first_line);

// A tensor constant of a Repro module's __init__ (repro_constants.cpp).
struct ReproConstant {
  std::string name;  // "_tensor_constant0"
  Tensor value;
  int line = 0;
  // torch.randn/rand at __init__: PyTorch's own replay draws new values at
  // every Repro(), so Kiln draws its own too (seeded) and says so.
  std::string drawn_by;  // "randn", "rand"; empty: read exactly
};
// The constants __init__ defines with their values; a kiln::Error naming the
// line for one whose values the file does not hold.
std::vector<ReproConstant> repro_constants(std::string_view source, const std::string& file, int first_line);
// Each get_attr of one of `constants` becomes a placeholder after the file's
// own, and its value an input (origin: the line that defines it).
void constants_to_inputs(Repro& r, const std::vector<ReproConstant>& constants);

// The repro.py write_torch_repro writes (its own load_args: an INPUTS table
// and a safetensors file beside it), told apart from PyTorch's by that
// load_args; read back with its check and inputs (repro_read_kiln_py.cpp).
bool is_kiln_torch_repro(const std::string& source);
Repro read_kiln_torch_repro(const std::string& path, const std::string& source);

// The reading PyTorch's minifier files and their content store
// (repro_read_torch.cpp); throws kiln::Error.
Repro read_torch_minifier_file(const std::string& path);

}  // namespace kiln::minify
