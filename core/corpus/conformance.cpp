#include "core/corpus/conformance.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/ops/registry.h"

namespace kiln {

Tolerance tolerance_for(DType t) {
  switch (t) {
    case DType::Float64: return {1e-7, 1e-7};
    case DType::Float32: return {1e-5, 1.3e-6};
    case DType::Float16: return {1e-5, 1e-3};
    case DType::BFloat16: return {1e-5, 1.6e-2};
    default: return {0, 0};
  }
}

std::string_view case_status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::Pass: return "PASS";
    case CaseStatus::Fail: return "FAIL";
    case CaseStatus::Skip: return "SKIP";
  }
  return "?";
}

Comparison compare_tensors(const Tensor& got, const Tensor& want) {
  Comparison r;
  if (got.dtype() != want.dtype()) {
    r.ok = false;
    r.reason = "dtype " + std::string(dtype_name(got.dtype())) + ", expected " +
               std::string(dtype_name(want.dtype()));
    return r;
  }
  if (got.sizes() != want.sizes()) {
    r.ok = false;
    r.reason = "shape " + shape_str(got.sizes()) + ", expected " + shape_str(want.sizes());
    return r;
  }
  Tolerance tol = tolerance_for(want.dtype());
  Tensor g = got.to(DType::Float64).contiguous(), w = want.to(DType::Float64).contiguous();
  const double* gp = g.data<double>();
  const double* wp = w.data<double>();
  int64_t bad = 0, first_bad = -1;
  for (int64_t i = 0; i < g.numel(); ++i) {
    double a = gp[i], b = wp[i];
    bool same;
    if (std::isnan(a) || std::isnan(b)) {
      same = std::isnan(a) && std::isnan(b);
    } else if (std::isinf(a) || std::isinf(b)) {
      same = a == b;
    } else {
      double diff = std::abs(a - b);
      r.max_abs = std::max(r.max_abs, diff);
      if (b != 0) r.max_rel = std::max(r.max_rel, diff / std::abs(b));
      else if (diff != 0) r.max_rel = std::numeric_limits<double>::infinity();
      same = diff <= tol.atol + tol.rtol * std::abs(b);
    }
    if (!same) {
      if (bad++ == 0) first_bad = i;
    }
  }
  if (bad) {
    r.ok = false;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%lld of %lld elements differ; first at flat index %lld: got %.9g, expected %.9g",
                  (long long)bad, (long long)g.numel(), (long long)first_bad, gp[first_bad], wp[first_bad]);
    r.reason = buf;
  }
  return r;
}

std::vector<Tensor> flatten_tensors(const ValueList& values) {
  std::vector<Tensor> out;
  for (const Value& v : values) {
    if (v.is_tensor()) out.push_back(v.to_tensor());
    else if (v.is_list())
      for (const Value& e : v.to_list())
        if (e.is_tensor()) out.push_back(e.to_tensor());
  }
  return out;
}

ConformanceBackend eager_backend() {
  return [](const CorpusCase& c) { return call_op(c.op, c.args, c.kwargs); };
}

namespace {
Value widen_floats(const Value& v) {
  if (v.is_tensor() && is_floating(v.to_tensor().dtype())) return Value(v.to_tensor().to(DType::Float64));
  if (v.is_list()) {
    ValueList l;
    for (const Value& e : v.to_list()) l.push_back(widen_floats(e));
    return Value(std::move(l));
  }
  return v;
}
}  // namespace

ConformanceBackend eager_f64_backend() {
  return [](const CorpusCase& c) -> Expected<ValueList> {
    ValueList args;
    for (const Value& a : c.args) args.push_back(widen_floats(a));
    KwargList kwargs;
    for (const auto& [k, v] : c.kwargs) kwargs.emplace_back(k, widen_floats(v));
    auto r = call_op(c.op, args, kwargs);
    if (!r) return r;
    // Round back to the dtypes PyTorch produced, so comparison is like for like.
    std::vector<Tensor> got = flatten_tensors(*r);
    ValueList out;
    for (size_t i = 0; i < got.size(); ++i) {
      DType want = i < c.outputs.size() ? c.outputs[i].dtype() : got[i].dtype();
      out.emplace_back(got[i].to(want));
    }
    return out;
  };
}

CaseResult run_case(const CorpusCase& c, const ConformanceBackend& backend) {
  CaseResult r{c.id, c.op, CaseStatus::Fail, 0, 0, ""};
  Expected<ValueList> got = [&]() -> Expected<ValueList> {
    try {
      return backend(c);
    } catch (const Error& e) {
      return e.to_status();
    } catch (const InternalError& e) {
      return Status::error(e.what());
    }
  }();
  if (!got) {
    const std::string& m = got.status().message();
    if (m.rfind("skip: ", 0) == 0) {
      r.status = CaseStatus::Skip;
      r.reason = m.substr(6);
    } else {
      r.reason = "error: " + m;
    }
    return r;
  }
  std::vector<Tensor> outs = flatten_tensors(*got);
  if (outs.size() != c.outputs.size()) {
    r.reason = "returned " + std::to_string(outs.size()) + " tensors, expected " +
               std::to_string(c.outputs.size());
    return r;
  }
  r.status = CaseStatus::Pass;
  for (size_t i = 0; i < outs.size(); ++i) {
    Comparison cmp = compare_tensors(outs[i], c.outputs[i]);
    r.max_abs = std::max(r.max_abs, cmp.max_abs);
    r.max_rel = std::max(r.max_rel, cmp.max_rel);
    if (!cmp.ok && r.status == CaseStatus::Pass) {
      r.status = CaseStatus::Fail;
      r.reason = (outs.size() > 1 ? "output " + std::to_string(i) + ": " : "") + cmp.reason;
    }
  }
  return r;
}

}  // namespace kiln
