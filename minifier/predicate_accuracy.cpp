// accuracy (compiled against eager, judged against fp64) and cpu-gpu-mismatch.
#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>

#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/runtime/backend_info.h"
#include "compiler/runtime/cuda_graph.h"
#include "minifier/predicate.h"
#include "minifier/predicate_util.h"

namespace kiln::minify {

namespace {

std::vector<Value> input_values(const Candidate& c, bool fp64) {
  std::vector<Value> values;
  for (const Tensor& t : c.inputs)
    values.emplace_back(fp64 && is_floating(t.dtype()) ? t.to(DType::Float64) : t);
  return values;
}

double rmse(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s / double(a.size()));
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// The float64 reference runs the graph's own casts in float64 too, as
// torch._dynamo's cast_dtype_args_to_fp64 does for PyTorch's minifier: a
// mixed-precision graph casts float32 inputs to bf16 itself (dtype= of
// _to_copy, full, scalar_tensor...), and would otherwise mix float64 inputs
// with its bf16 values, or fail.
void arg_dtype_to_fp64(Arg& a) {
  if (a.kind != Arg::Kind::DType) return;
  std::optional<DType> d = dtype_from_name(a.s);
  if (d && is_floating(*d)) a.s = std::string(dtype_name(DType::Float64));
}

Graph with_fp64_dtype_args(const Graph& g) {
  Graph out = g;
  for (Node& n : out.nodes) {
    if (n.op != OpKind::CallFunction) continue;
    for (auto& [k, a] : n.kwargs)
      if (k == "dtype") arg_dtype_to_fp64(a);
    if (n.target == "prims::convert_element_type.default" && n.args.size() == 2) arg_dtype_to_fp64(n.args[1]);
  }
  return out;
}

}  // namespace

Expected<std::vector<Tensor>> run_eager(const Candidate& c, bool fp64) {
  Expected<std::vector<Value>> r = Status::error("");
  try {
    r = pipeline::run_aten_graph(fp64 ? with_fp64_dtype_args(c.graph) : c.graph, input_values(c, fp64));
  } catch (const std::exception& e) {
    return Status::error(e.what());
  }
  if (!r) return r.status();
  // Flattened as the compiled code returns them: a graph that returns a
  // multi-output node itself ((var_mean,) in 2022's make_fx repros) gives its parts.
  std::vector<Tensor> out;
  std::function<void(const Value&)> add = [&](const Value& v) {
    if (v.is_list())
      for (const Value& item : v.to_list()) add(item);
    else
      out.push_back(v.is_tensor() ? v.to_tensor() : Tensor());
  };
  for (const Value& v : *r) add(v);
  return out;
}

Expected<std::map<std::string, Tensor>> run_eager_all(const Candidate& c, bool fp64) {
  Candidate all = c;
  std::vector<Arg> items;
  std::vector<std::string> names;
  for (size_t i = 0; i < all.graph.size(); ++i) {
    const Node& n = all.graph.nodes[i];
    if (n.op != OpKind::CallFunction || !n.meta.val.is_tensor()) continue;
    items.push_back(Arg::node(NodeId(i)));
    names.push_back(n.name);
  }
  set_outputs(all.graph, std::move(items));
  Expected<std::vector<Tensor>> r = run_eager(all, fp64);
  if (!r) return r.status();
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < names.size() && i < r->size(); ++i)
    if ((*r)[i].defined()) out[names[i]] = (*r)[i];
  return out;
}

std::string compare_tensor(const Tensor& ref, const Tensor& res, const Tensor& fp64, double tol, bool check_non_float) {
  if (!ref.defined() || !res.defined()) return ref.defined() == res.defined() ? "" : "one side is not a tensor";
  if (ref.sizes() != res.sizes()) return "sizes differ: " + shape_str(ref.sizes()) + " vs " + shape_str(res.sizes());
  std::vector<double> a = to_doubles(ref), b = to_doubles(res);
  if (!is_floating(ref.dtype())) {
    if (!check_non_float) return "";
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return "element " + std::to_string(i) + fmt(" differs: %g vs %g", a[i], b[i]);
    return "";
  }
  // torch.allclose(ref, res, atol=tol, rtol=tol, equal_nan=True)
  bool close = true;
  double max_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    double d = std::fabs(a[i] - b[i]);
    if (!(d <= tol + tol * std::fabs(b[i]))) close = false;
    if (!(d <= max_abs)) max_abs = d;
  }
  if (close) return "";
  if (!fp64.defined()) return fmt("max_abs=%g (no fp64 reference)", max_abs);
  std::vector<double> f = to_doubles(fp64);
  double res_error = rmse(f, b), ref_error = rmse(f, a);
  // same()'s rule for float32: the compiled error may be a few times eager's own.
  const double multiplier = 3.0;
  if (std::isfinite(res_error) && res_error <= multiplier * ref_error + tol / 10.0) return "";
  return fmt("RMSE (res-fp64): %.5f, (ref-fp64): %.5f, max_abs=%g", res_error, ref_error, max_abs);
}

namespace {

// The failure of one output against the references; empty verdict detail when all agree.
Verdict compare_outputs(const PredicateOptions& p, const Candidate& c, const std::vector<Tensor>& res,
                        const std::vector<Tensor>& ref, const std::vector<Tensor>& fp64, const char* kind) {
  std::vector<Arg> outs = output_items(c.graph);
  for (size_t i = 0; i < res.size() && i < ref.size(); ++i) {
    Tensor f = i < fp64.size() ? fp64[i] : Tensor();
    std::string why = compare_tensor(ref[i], res[i], f, p.tolerance, p.check_non_float);
    if (why.empty()) continue;
    std::string node = i < outs.size() && outs[i].is_node() ? c.graph[outs[i].node_id()].name : "?";
    return {Verdict::Outcome::Fail, kind, kind, "output " + std::to_string(i) + " (" + node + "): " + why};
  }
  // Outputs that are NaN everywhere agree by allclose's equal_nan and hide
  // any bug: say so, since drawn inputs (a random running_var) cause it.
  std::string nan_outputs;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!ref[i].defined() || !is_floating(ref[i].dtype()) || ref[i].numel() == 0) continue;
    std::vector<double> v = to_doubles(ref[i]);
    if (std::all_of(v.begin(), v.end(), [](double x) { return std::isnan(x); }))
      nan_outputs += (nan_outputs.empty() ? "" : ", ") + std::to_string(i);
  }
  std::string detail = std::to_string(res.size()) + (res.size() == 1 ? " output agrees" : " outputs agree");
  if (!nan_outputs.empty())
    detail += " (but output " + nan_outputs +
              " is NaN everywhere in eager: inputs outside the ops' domain, such as a negative variance drawn at "
              "random, hide any bug there)";
  return {Verdict::Outcome::Pass, "", "", detail};
}

}  // namespace

Verdict check_accuracy(const PredicateOptions& p, const Candidate& c) {
  Expected<std::vector<Tensor>> ref = run_eager(c, false);
  if (!ref) return {Verdict::Outcome::Invalid, "eager-error", "", "eager reference fails: " + ref.status().message()};
  CpuCompile cc = compile_cpu(c.graph, p.inject_bug);
  if (!cc.error.empty())
    return {Verdict::Outcome::Fail, "compile-error", error_signature(cc.stage, cc.error), "compile error at " + cc.stage + ": " + cc.error};
  Expected<std::vector<Tensor>> res = cc.code->run(c.inputs);
  if (!res) return {Verdict::Outcome::Fail, "run-error", "run-error", res.status().message()};
  Expected<std::vector<Tensor>> fp64 = run_eager(c, true);
  return compare_outputs(p, c, *res, *ref, fp64 ? *fp64 : std::vector<Tensor>{}, "accuracy");
}

Verdict check_cpu_gpu(const PredicateOptions& p, const Candidate& c) {
  CudaDriverInfo gpu = probe_cuda_driver();
  if (!gpu.available || gpu.device_count == 0)
    return {Verdict::Outcome::Invalid, "setup", "", "cpu-gpu-mismatch needs a CUDA GPU: " + (gpu.reason.empty() ? std::string("no device") : gpu.reason)};
  CpuCompile cc = compile_cpu(c.graph, p.inject_bug);
  if (!cc.error.empty())
    return {Verdict::Outcome::Fail, "compile-error", error_signature(cc.stage, cc.error), "CPU compile error at " + cc.stage + ": " + cc.error};
  runtime::CudaCompileOptions co;
  co.inject_bug = p.inject_bug;
  Expected<std::shared_ptr<runtime::CudaCompiledGraph>> cuda = Status::error("");
  try {
    cuda = pipeline::compile_to_cuda(c.graph, co);
  } catch (const std::exception& e) {
    cuda = Status::error(e.what());
  }
  if (!cuda)
    return {Verdict::Outcome::Fail, "compile-error", error_signature("cuda-codegen", cuda.status().message()),
            "CUDA compile error: " + cuda.status().message()};
  Expected<std::vector<Tensor>> on_cpu = cc.code->run(c.inputs);
  if (!on_cpu) return {Verdict::Outcome::Fail, "run-error", "run-error", "CPU: " + on_cpu.status().message()};
  Expected<std::vector<Tensor>> on_gpu = (*cuda)->run(c.inputs);
  if (!on_gpu) return {Verdict::Outcome::Fail, "run-error", "run-error", "GPU: " + on_gpu.status().message()};
  Expected<std::vector<Tensor>> fp64 = run_eager(c, true);
  return compare_outputs(p, c, *on_gpu, *on_cpu, fp64 ? *fp64 : std::vector<Tensor>{}, "mismatch");
}

}  // namespace kiln::minify
