#pragma once
// What a minify run leaves in its output folder: OUT/repro (a Kiln repro with
// the predicate that found the failure) and OUT/repro.py (PyTorch's
// after_aot form, checking what the predicate checked). kiln-cli minify and
// the workbench's minifier panel write them through this one function.
#include <string>

#include "minifier/minify.h"
#include "minifier/predicate.h"

namespace kiln::minify {

struct MinifyOutputs {
  std::string repro_dir;    // OUT/repro
  std::string torch_repro;  // OUT/repro.py
};

Expected<MinifyOutputs> write_minify_outputs(const std::string& out, const MinifyResult& r, const PredicateOptions& p);

}  // namespace kiln::minify
