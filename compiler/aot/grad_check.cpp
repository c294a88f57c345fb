#include "compiler/aot/grad_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "compiler/aot/derivative_samples.h"
#include "compiler/aot/derivatives.h"
#include "compiler/aot/grad_context.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "core/ops/registry.h"

namespace kiln::aot {
namespace {

using pipeline::EagerEmitter;
using pipeline::GraphEmitter;

// Where a tensor input sits in the call, so a perturbed copy can replace it.
struct Slot {
  bool keyword = false;
  size_t index = 0;   // into args or kwargs
  int element = -1;   // into a Tensor[] argument
};

// A call's arguments as EArgs on an emitter: tensors become inputs (`make`
// turns a tensor into a Var), lists of tensors EArg::list; `on_tensor` learns
// each tensor's Var, name and slot.
template <class Make, class OnTensor>
EArg to_earg(const Value& v, const std::string& name, Slot slot, Make&& make, OnTensor&& on_tensor) {
  if (v.is_tensor()) {
    Var x = make(v.to_tensor(), name);
    on_tensor(x, name, slot);
    return x;
  }
  if (v.is_list()) {
    const ValueList& items = v.to_list();
    bool tensors = std::any_of(items.begin(), items.end(), [](const Value& i) { return i.is_tensor(); });
    if (tensors) {
      std::vector<Var> vars;
      for (size_t j = 0; j < items.size(); ++j) {
        if (items[j].is_none()) {
          vars.push_back(Var{});
          continue;
        }
        KILN_USER_CHECK(items[j].is_tensor(), "a list mixing tensors and ", kind_name(items[j].kind()));
        Slot s = slot;
        s.element = int(j);
        std::string n = name + "_" + std::to_string(j);
        Var x = make(items[j].to_tensor(), n);
        on_tensor(x, n, s);
        vars.push_back(x);
      }
      return EArg::list(std::move(vars));
    }
  }
  return EArg(v);
}

template <class Make, class OnTensor>
GradCall build_call(std::string_view op, const ValueList& args, const KwargList& kwargs, const std::string& prefix,
                    Make&& make, OnTensor&& on_tensor) {
  GradCall call;
  call.op = std::string(op);
  for (size_t i = 0; i < args.size(); ++i)
    call.args.push_back(to_earg(args[i], prefix + "arg" + std::to_string(i), Slot{false, i, -1}, make, on_tensor));
  for (size_t i = 0; i < kwargs.size(); ++i)
    call.kwargs.emplace_back(kwargs[i].first,
                             to_earg(kwargs[i].second, prefix + kwargs[i].first, Slot{true, i, -1}, make, on_tensor));
  return call;
}

std::string fmt(const char* f, double a, double b) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

}  // namespace

CaseResult grad_check_case(const CorpusCase& c) {
  CaseResult r{c.id, c.op, CaseStatus::Fail, 0, 0, ""};
  if (c.grad_outputs.empty()) {
    r.status = CaseStatus::Skip;
    r.reason = "the case has no gradients";
    return r;
  }
  const DerivativeDef* def = find_derivative(c.op);
  if (!def) {
    r.status = CaseStatus::Skip;
    r.reason = "no derivative formula for " + c.op;
    return r;
  }
  try {
    EagerEmitter e;
    std::map<std::string, Var> named;
    GradCall call = build_call(
        c.op, c.args, c.kwargs, c.id + ".", [&](const Tensor& t, const std::string&) { return e.input(t); },
        [&](Var v, const std::string& name, Slot) { named[name] = v; });
    call.outputs = e.call(c.op, call.args, call.kwargs);

    // The corpus gives gradients for the differentiable outputs, in order.
    GradList gouts(call.outputs.size());
    size_t k = 0;
    for (size_t i = 0; i < call.outputs.size() && k < c.grad_outputs.size(); ++i)
      if (call.outputs[i].valid() && output_is_differentiable(*def, i, e.dtype(call.outputs[i])))
        gouts[i] = e.input(c.grad_outputs[k++]);
    if (k != c.grad_outputs.size()) {
      r.reason = std::to_string(c.grad_outputs.size()) + " grad_outputs for " + std::to_string(k) +
                 " differentiable outputs";
      return r;
    }
    GradList gins = differentiate(e, call, gouts);
    std::vector<Var> ins = tensor_inputs(call);
    r.status = CaseStatus::Pass;
    for (const auto& [name, want] : c.grad_inputs) {
      auto it = named.find(name);
      if (it == named.end()) {
        r.status = CaseStatus::Fail;
        r.reason = "the corpus names gradient input '" + name + "', which is no tensor argument";
        return r;
      }
      size_t idx = size_t(std::find(ins.begin(), ins.end(), it->second) - ins.begin());
      KILN_CHECK(idx < ins.size(), "tensor argument ", name, " missing from tensor_inputs");
      // No gradient is a zero gradient (what autograd.grad materializes).
      Tensor got = idx < gins.size() && gins[idx] ? e.tensor(*gins[idx]) : Tensor::zeros(want.sizes(), want.dtype());
      Comparison cmp = compare_tensors(got, want);
      r.max_abs = std::max(r.max_abs, cmp.max_abs);
      r.max_rel = std::max(r.max_rel, cmp.max_rel);
      if (!cmp.ok && r.status == CaseStatus::Pass) {
        r.status = CaseStatus::Fail;
        r.reason = "grad of " + name + ": " + cmp.reason;
      }
    }
  } catch (const Error& err) {
    r.status = CaseStatus::Fail;
    r.reason = std::string("error: ") + err.what();
  } catch (const InternalError& err) {
    r.status = CaseStatus::Fail;
    r.reason = std::string("internal error: ") + err.what();
  }
  return r;
}

namespace {

constexpr double kStep = 1e-6, kAtol = 1e-5, kRtol = 1e-4;

// sum_i <cotangent_i, output_i> in float64: the scalar whose gradient is the VJP.
double projection(const std::vector<Tensor>& outs, const std::vector<Tensor>& cotangents) {
  double s = 0;
  for (size_t i = 0; i < cotangents.size(); ++i) {
    if (!cotangents[i].defined()) continue;
    Tensor y = outs[i].to(DType::Float64).contiguous(), v = cotangents[i].contiguous();
    const double* yp = y.data<double>();
    const double* vp = v.data<double>();
    for (int64_t j = 0; j < y.numel(); ++j) s += yp[j] * vp[j];
  }
  return s;
}

// Checks one sample; returns "" or why it failed, and widens max_abs/max_rel.
std::string check_sample(const DerivativeDef& def, const DerivativeSample& s, uint64_t seed, CaseResult& r) {
  const std::string& op = def.op;
  EagerEmitter e;
  std::map<int32_t, Slot> slots;
  GradCall call = build_call(
      op, s.args, s.kwargs, "", [&](const Tensor& t, const std::string&) { return e.input(t); },
      [&](Var v, const std::string&, Slot slot) { slots[v.id] = slot; });
  call.outputs = e.call(op, call.args, call.kwargs);

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::vector<Tensor> cot(call.outputs.size());
  GradList gouts(call.outputs.size());
  for (size_t i = 0; i < call.outputs.size(); ++i) {
    if (!call.outputs[i].valid()) continue;  // a None or int output
    const Tensor& y = e.tensor(call.outputs[i]);
    if (!output_is_differentiable(def, i, y.dtype())) continue;
    std::vector<double> v(size_t(y.numel()));
    for (double& x : v) x = uni(rng);
    cot[i] = Tensor::from_vector(v, y.sizes());
    gouts[i] = e.input(cot[i]);
  }
  GradList gins = def.formula(e, call, gouts);
  std::vector<Var> ins = tensor_inputs(call);
  std::vector<std::string> names = tensor_input_names(call);
  if (gins.size() != ins.size())
    return "the formula gave " + std::to_string(gins.size()) + " gradients for " + std::to_string(ins.size()) +
           " tensor inputs";

  auto evaluate = [&](const Slot& slot, const Tensor& replacement) {
    ValueList args = s.args;
    KwargList kwargs = s.kwargs;
    Value& v = slot.keyword ? kwargs[slot.index].second : args[slot.index];
    if (slot.element < 0) {
      v = Value(replacement);
    } else {
      ValueList items = v.to_list();
      items[size_t(slot.element)] = Value(replacement);
      v = Value(std::move(items));
    }
    auto got = call_op(op, args, kwargs);
    KILN_USER_CHECK(got, got.status().message());
    return projection(flatten_tensors(*got), cot);
  };

  for (size_t k = 0; k < ins.size(); ++k) {
    const Tensor& x = e.tensor(ins[k]);
    bool listed = std::count(def.differentiable_inputs.begin(), def.differentiable_inputs.end(), names[k]) > 0;
    if (gins[k] && !listed) return "a gradient for '" + names[k] + "', which is not listed as differentiable";
    if (!listed || !is_floating(x.dtype())) continue;
    Tensor an = gins[k] ? e.tensor(*gins[k]) : Tensor::zeros(x.sizes(), x.dtype());
    if (an.sizes() != x.sizes() || an.dtype() != x.dtype())
      return "gradient of '" + names[k] + "' is " + an.type_str() + ", input is " + x.type_str();
    Tensor a = an.to(DType::Float64).contiguous();
    const double* ap = a.data<double>();
    Tensor base = x.contiguous().clone();
    const Slot& slot = slots.at(ins[k].id);
    char structure = !slot.keyword && slot.element < 0 && slot.index < s.structure.size() ? s.structure[slot.index] : 0;
    int64_t cols = x.dim() >= 2 ? x.size(-1) : 1;
    for (int64_t j = 0; j < x.numel(); ++j) {
      // A structured matrix input: the op reads one triangle, so only that
      // triangle is perturbed; a symmetric one moves (i, j) and (j, i)
      // together, whose derivative is the sum of the two gradient entries.
      int64_t row = (j / cols) % cols, col = j % cols, mirror = j - (row * cols + col) + col * cols + row;
      if ((structure == 'L' || structure == 'H') && col > row) continue;
      if (structure == 'U' && col < row) continue;
      bool paired = structure == 'H' && col < row;
      Tensor plus = base.clone(), minus = base.clone();
      plus.data<double>()[j] += kStep;
      minus.data<double>()[j] -= kStep;
      if (paired) {
        plus.data<double>()[mirror] += kStep;
        minus.data<double>()[mirror] -= kStep;
      }
      double fd = (evaluate(slot, plus) - evaluate(slot, minus)) / (2 * kStep);
      double want = paired ? ap[j] + ap[mirror] : ap[j];
      double diff = std::abs(fd - want);
      if (std::isnan(fd) != std::isnan(want)) diff = INFINITY;
      if (std::isnan(fd) && std::isnan(want)) diff = 0;
      r.max_abs = std::max(r.max_abs, diff);
      if (fd != 0) r.max_rel = std::max(r.max_rel, diff / std::abs(fd));
      if (diff > kAtol + kRtol * std::abs(fd))
        return "'" + names[k] + "'[" + std::to_string(j) + "]: formula " + fmt("%.9g, finite difference %.9g", want, fd);
    }
  }

  // The same formula as an ATen graph, on meta tensors, run by the interpreter.
  Graph g;
  GraphEmitter ge(g);
  std::vector<Value> placeholders;
  GradCall gcall = build_call(
      op, s.args, s.kwargs, "",
      [&](const Tensor& t, const std::string& name) {
        placeholders.emplace_back(t);
        return ge.placeholder(name, t);
      },
      [](Var, const std::string&, Slot) {});
  try {
    gcall.outputs = ge.call(op, gcall.args, gcall.kwargs);
  } catch (const Error&) {
    // Ops whose output shape depends on data (masked_select, ...) have no
    // meta forward; their formulas were checked eagerly above.
    return "";
  }
  GradList ggouts(gcall.outputs.size());
  for (size_t i = 0; i < cot.size(); ++i) {
    if (!cot[i].defined()) continue;
    placeholders.emplace_back(cot[i]);
    ggouts[i] = ge.placeholder("tangent_" + std::to_string(i), cot[i]);
  }
  GradList ggins = def.formula(ge, gcall, ggouts);
  std::vector<Var> outs;
  std::vector<size_t> which;
  for (size_t k = 0; k < ggins.size(); ++k) {
    if (bool(ggins[k]) != bool(gins[k])) return "graph and eager formulas differ in which gradients they give";
    if (ggins[k]) outs.push_back(*ggins[k]), which.push_back(k);
  }
  ge.output(outs);
  auto ran = pipeline::run_aten_graph(g, placeholders);
  if (!ran) return "the formula's graph does not run: " + ran.status().message();
  for (size_t i = 0; i < which.size(); ++i) {
    Comparison cmp = compare_tensors((*ran)[i].to_tensor(), e.tensor(*gins[which[i]]));
    if (!cmp.ok) return "graph gradient of '" + names[which[i]] + "' differs from eager: " + cmp.reason;
  }
  return "";
}

}  // namespace

CaseResult finite_difference_check(std::string_view op, uint64_t seed) {
  const DerivativeDef* def = find_derivative(op);
  if (!def) return CaseResult{std::string(op), std::string(op), CaseStatus::Fail, 0, 0, "no derivative formula"};
  std::vector<DerivativeSample> samples = derivative_samples(op, seed);
  if (samples.empty())
    return CaseResult{std::string(op), std::string(op), CaseStatus::Skip, 0, 0, "no sample inputs for " + std::string(op)};
  return finite_difference_check(*def, samples, seed);
}

CaseResult finite_difference_check(const DerivativeDef& def, const std::vector<DerivativeSample>& samples,
                                   uint64_t seed) {
  CaseResult r{def.op, def.op, CaseStatus::Pass, 0, 0, ""};
  for (size_t i = 0; i < samples.size(); ++i) {
    std::string why;
    try {
      why = check_sample(def, samples[i], seed * 31 + i + 1, r);
    } catch (const Error& err) {
      why = std::string("error: ") + err.what();
    } catch (const InternalError& err) {
      why = std::string("internal error: ") + err.what();
    }
    if (!why.empty()) {
      r.status = CaseStatus::Fail;
      r.reason = "sample '" + samples[i].spec + "': " + why;
      return r;
    }
  }
  return r;
}

}  // namespace kiln::aot
