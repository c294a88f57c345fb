#include "minifier/minify_outputs.h"

#include <filesystem>

#include "minifier/repro.h"

namespace kiln::minify {

namespace {

// What the PyTorch repro.py checks: the same kind of failure as the predicate.
std::string torch_check_for(const PredicateOptions& p) {
  switch (p.kind) {
    case CheckKind::CompileError: return "compile-error";
    case CheckKind::Crash: return "crash";
    case CheckKind::Oracle: return p.torch_check;
    default: return "accuracy";
  }
}

}  // namespace

Expected<MinifyOutputs> write_minify_outputs(const std::string& out, const MinifyResult& r, const PredicateOptions& p) {
  namespace fs = std::filesystem;
  Repro repro;
  repro.graph = r.result.graph;
  repro.inputs = r.result.inputs;
  repro.predicate_json = predicate_to_json(p, r.original.signature);
  repro.input_origins.assign(repro.inputs.size(), "stored");
  MinifyOutputs o{(fs::path(out) / "repro").string(), (fs::path(out) / "repro.py").string()};
  if (Status s = write_kiln_repro(o.repro_dir, repro); !s) return s;
  TorchReproOptions to;
  to.check = torch_check_for(p);
  to.tolerance = p.tolerance;
  to.device = p.kind == CheckKind::Oracle ? p.torch_device : "cpu";
  if (Status s = write_torch_repro(o.torch_repro, repro, to); !s) return s;
  return o;
}

}  // namespace kiln::minify
