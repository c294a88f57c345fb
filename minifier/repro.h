#pragma once
// Repro files: what the minifier reads failing graphs from and writes its
// results to. Three formats in, two out:
//   in:  a Kiln repro (folder or .zip), PyTorch's repro.py / minifier_launcher.py
//        (graph from the `Repro` module, inputs from `load_args`), a graph text file;
//   out: a Kiln repro folder (graph.txt in print_readable form, inputs.safetensors,
//        predicate.json, README.txt) and a PyTorch repro.py in the after_aot style.
// Malformed files give a kiln::Error naming the file and line.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "minifier/candidate.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::minify {

struct Repro {
  Graph graph;
  // One per placeholder, in placeholder order.
  std::vector<Tensor> inputs;
  // Per input, where its values came from: "stored" or "random (seed N)" for
  // PyTorch files whose load_args names no stored tensor. The writers take a
  // missing entry as "stored".
  std::vector<std::string> input_origins;
  // A dynamic-shape repro's SymInt inputs, replayed at the values load_args
  // recorded (reader.symint): their placeholders are gone from `graph`, their
  // uses are these constants (compiler/passes/specialize_ints.h).
  std::vector<std::pair<std::string, int64_t>> specialized;
  // The file's graph was torch-level (an after-dynamo repro) and `graph` is
  // Kiln's lowering of it to ATen (pipeline::lower_torch_graph).
  bool lowered_from_torch = false;
  // The predicate and its options as JSON text (owned by predicate.h); empty when
  // the file does not say (PyTorch files).
  std::string predicate_json;
  std::string path;  // the file or folder it was read from
  // Where the graph's text is (graph.txt inside a folder, the log file of a
  // trace) and the line each node is defined on there, for messages.
  std::string graph_file;
  std::map<std::string, int> node_lines;
};

// Detects the format from the path and contents: a folder or a *.zip (or any
// file starting with a zip signature) is a Kiln repro, a file with a
// `class Repro(` is a PyTorch minifier file, anything else a graph text file.
Expected<Repro> read_repro(const std::string& path);

// A stage graph of a TORCH_TRACE log (or any trace open_trace reads):
// `compile_id` as `kiln-cli trace summary` lists it, `stage` a graph stage
// (aot_forward_graph, inductor_post_grad_graph, fx_graph_runnable, ...).
// Inputs come from the payload's load_args where it has one
// (fx_graph_runnable), else from the placeholders' annotations, drawn as
// for a graph text file.
Expected<Repro> read_trace_stage(const std::string& path, const std::string& compile_id, const std::string& stage);

// annotate() (candidate.h) for a candidate read from `source`: an error names
// the file and line of the node that fails.
Status annotate_read(Candidate& c, const Repro& source);

// Kiln runs a candidate eagerly (the reference of every check but oracle):
// the first node it cannot run (an op its registry does not have) is an
// error naming the file and line that define it.
Status check_runs_in_kiln(const Graph& g, const Repro& source);

// What minify and `repro run` start from: the repro's graph and inputs as a
// candidate, annotated (annotate_read) and, when the check runs Kiln's eager
// kernels (every check but an outside oracle), checked to run there
// (check_runs_in_kiln). Errors name the file and line.
Expected<Candidate> candidate_of(const Repro& r, bool runs_in_kiln);

// The seed of the inputs a file gives no values for ("random (seed 0)").
inline constexpr uint64_t kDefaultInputSeed = 0;

// One input per placeholder of `g`, from its meta['val'] (concrete sizes,
// strides, a dtype Kiln knows), drawn as PyTorch's rand_strided draws them
// after torch.manual_seed(seed) on the CPU: float tensors from the normal
// distribution, integer and bool tensors zero. The same numbers as the
// repro.py write_torch_repro writes, when it regenerates its inputs. A
// placeholder without such a val is an error naming `file`.
Expected<std::vector<Tensor>> random_inputs(const Graph& g, uint64_t seed = kDefaultInputSeed,
                                            const std::string& file = "");

// Sets meta['val'] of every node that has none (graphs read from
// GraphModule.code text, as in repro.py, carry no annotations) from the op
// registry's meta functions, placeholders first from `inputs` when given
// (else from their own vals, when every one has a tensor val). What the meta
// functions do not know stays unset.
void propagate_meta_vals(Graph& g, const std::vector<Tensor>& inputs = {});

// Writes folder `dir` (created; an existing Kiln repro there is replaced, any
// other non-empty folder is refused). Writes to a temporary sibling and renames,
// so a crash never leaves half a repro.
Status write_kiln_repro(const std::string& dir, const Repro& r);

struct TorchReproOptions {
  std::string device = "cpu";  // where the repro places its inputs
  // What the run block does: "accuracy" (and "cpu-gpu-mismatch") compares
  // torch.compile against eager with the accuracy predicate's rule
  // (predicate.h: allclose to eager, else RMSE against an fp64 eager run) and
  // exits 1 on mismatch; "compile-error" / "crash" / "oracle" just compile and
  // run it, so an exception or a crash is the non-zero exit.
  std::string check = "accuracy";
  double tolerance = 1e-3;
  // accuracy: compare integer and bool outputs too (exactly), as the
  // accuracy predicate's check_non_float.
  bool check_non_float = false;
  std::string backend = "inductor";
};

// A repro.py that runs on stock PyTorch 2.x: a Repro(torch.nn.Module) whose
// forward calls ATen ops, load_args with the inputs saved next to it
// (safetensors) or generated from a seed, and a run block.
Status write_torch_repro(const std::string& path, const Repro& r, const TorchReproOptions& options = {});

}  // namespace kiln::minify
