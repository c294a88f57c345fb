#pragma once
// Runs corpus cases through a backend and compares with PyTorch's outputs.
// One tolerance per dtype, applied to every op alike (docs/conformance.md):
// no per-case loosening.
#include <functional>
#include <string>
#include <vector>

#include "core/corpus/corpus.h"

namespace kiln {

struct Tolerance {
  double atol = 0, rtol = 0;
};
// torch.testing.assert_close's defaults; integer and bool dtypes compare exactly.
Tolerance tolerance_for(DType t);

struct Comparison {
  bool ok = true;
  double max_abs = 0, max_rel = 0;
  std::string reason;  // empty when ok
};
// Same dtype and shape required; values allclose with NaNs matching NaNs and
// infinities matching exactly.
Comparison compare_tensors(const Tensor& got, const Tensor& want);

enum class CaseStatus { Pass, Fail, Skip };
std::string_view case_status_name(CaseStatus s);

struct CaseResult {
  std::string id, op;
  CaseStatus status = CaseStatus::Fail;
  double max_abs = 0, max_rel = 0;
  std::string reason;
};

// A backend runs one case and returns its outputs. Returning a Status whose
// message starts with "skip: " marks the case skipped (with that reason).
using ConformanceBackend = std::function<Expected<ValueList>(const CorpusCase&)>;

// Calls the op through the eager op registry.
ConformanceBackend eager_backend();
// Like eager_backend, but with every float tensor input converted to float64 and
// outputs rounded back: checks the float64 kernels that later stages use as reference.
ConformanceBackend eager_f64_backend();

CaseResult run_case(const CorpusCase& c, const ConformanceBackend& backend);

// Flattens results (tensor lists become several outputs) in order.
std::vector<Tensor> flatten_tensors(const ValueList& values);

}  // namespace kiln
