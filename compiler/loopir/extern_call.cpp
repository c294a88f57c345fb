// Running and printing extern kernels; the dedicated BLAS paths are in extern_kernels.cpp.
#include "compiler/loopir/extern_call.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "compiler/loopir/loop_ir.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "core/ops/registry.h"
#include "core/util/status.h"

namespace kiln::loopir {

std::string_view extern_kind_name(ExternKind k) {
  switch (k) {
    case ExternKind::Gemm: return "gemm";
    case ExternKind::Convolution: return "convolution";
    case ExternKind::Attention: return "attention";
    case ExternKind::AttentionForward: return "attention_forward";
    case ExternKind::AttentionBackward: return "attention_backward";
    case ExternKind::Fallback: return "fallback";
  }
  return "?";
}

std::string result_buffer(const ExternCall& c, size_t result) {
  for (size_t i = 0; i < c.outputs.size() && i < c.output_results.size(); ++i)
    if (c.output_results[i] == result) return c.outputs[i];
  return "";
}

std::vector<std::string> extern_inputs(const Kernel& k) {
  KILN_CHECK(k.kind == KernelKind::Extern && k.call, "extern_inputs: ", k.output, " is not an extern kernel");
  return k.call->inputs;
}

std::vector<std::string> extern_outputs(const Kernel& k) {
  KILN_CHECK(k.kind == KernelKind::Extern && k.call, "extern_outputs: ", k.output, " is not an extern kernel");
  return k.call->outputs;
}

namespace {

// The view's tensor over the storage `buffer` gives. The runtime may place a
// buffer anywhere in its storage, so the view's offset is taken relative to
// where the buffer's own element `offset` lies.
Tensor view_of(const Program& p, const BufferView& v, const BufferTensors& buffer) {
  Tensor base = buffer(v.buffer);
  int64_t origin = base.storage_offset() - p.buffer(v.buffer).offset;
  return base.as_strided(Shape(v.sizes.begin(), v.sizes.end()), Shape(v.strides.begin(), v.strides.end()),
                         origin + v.offset);
}

// mm / bmm and the epilogue with the eager kernels, for dtypes BLAS has no routine for.
Tensor gemm_with_aten(const GemmParams& g, const std::vector<Tensor>& t) {
  Tensor r = invoke_tensor(g.batched ? "aten::bmm.default" : "aten::mm.default", {t[size_t(g.a)], t[size_t(g.b)]});
  if (g.alpha != 1) r = invoke_tensor("aten::mul.Scalar", {r, g.alpha});
  if (g.c >= 0) r = invoke_tensor("aten::add.Tensor", {r, t[size_t(g.c)]}, {{"alpha", g.beta}});
  if (g.c_constant) r = invoke_tensor("aten::add.Scalar", {r, *g.c_constant * g.beta});
  return r;
}

ValueList bind_args(const std::vector<Arg>& args, const std::vector<Tensor>& tensors, const std::string& target) {
  ValueList out;
  for (const Arg& a : args) {
    Expected<Value> v = pipeline::arg_value(a, [&](NodeId i) -> std::optional<Value> {
      if (i < 0 || size_t(i) >= tensors.size()) return std::nullopt;
      return Value(tensors[size_t(i)]);
    });
    KILN_USER_CHECK(v.ok(), "extern kernel ", target, ": ", v.ok() ? "" : v.status().message());
    out.push_back(std::move(*v));
  }
  return out;
}

}  // namespace

bool run_gemm_with_epilogue(const Program& p, const Kernel& k, const BufferTensors& buffer, std::string* why) {
  if (k.kind != KernelKind::Extern || !k.call || k.call->kind != ExternKind::Gemm || !k.call->gemm.lt) {
    if (why) *why = "no epilogue was planned";
    return false;
  }
  const ExternCall& c = *k.call;
  const GemmLtEpilogue& lt = *c.gemm.lt;
  std::vector<Tensor> tensors;
  for (const BufferView& v : c.tensors) tensors.push_back(view_of(p, v, buffer));
  Tensor bias = lt.bias ? view_of(p, *lt.bias, buffer) : Tensor();
  Tensor addend = lt.residual ? view_of(p, *lt.residual, buffer) : Tensor();
  return detail::run_gemm_epilogue(c.gemm, tensors, bias, addend, buffer(lt.output), why);
}

void run_extern(const Program& p, const Kernel& k, const BufferTensors& buffer) {
  KILN_CHECK(k.kind == KernelKind::Extern && k.call, "run_extern: ", k.output, " is not an extern kernel");
  const ExternCall& c = *k.call;
  std::vector<Tensor> tensors;
  for (const BufferView& v : c.tensors) tensors.push_back(view_of(p, v, buffer));
  if (c.kind == ExternKind::Gemm) {
    Tensor out = buffer(c.outputs.at(0));
    if (!detail::run_gemm(c.gemm, tensors, out)) out.copy_(gemm_with_aten(c.gemm, tensors));
    return;
  }
  if (c.kind == ExternKind::Attention) {
    detail::run_attention(c.attention, tensors, buffer(c.outputs.at(0)));
    return;
  }
  if (c.kind == ExternKind::Convolution && detail::run_convolution(c.conv, tensors, buffer(c.outputs.at(0)))) return;
  ValueList args = bind_args(c.args, tensors, c.target);
  KwargList kwargs;
  for (const auto& [name, a] : c.kwargs) kwargs.emplace_back(name, bind_args({a}, tensors, c.target)[0]);
  Expected<ValueList> r = call_op(c.target, args, kwargs);
  KILN_USER_CHECK(r.ok(), "extern kernel ", k.output, " (", k.origin, "): ", r.ok() ? "" : r.status().message());
  std::vector<Tensor> results = pipeline::result_tensors(*r, c.target);
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    size_t at = c.output_results.at(i);
    KILN_USER_CHECK(at < results.size() && results[at].defined(), "extern kernel ", k.output, " (", c.target,
                    "): result ", at, " is missing");
    buffer(c.outputs[i]).copy_(results[at]);
  }
}

ExternCall rename_extern_buffers(const ExternCall& c, const std::function<std::string(const std::string&)>& rename) {
  ExternCall r = c;
  for (BufferView& v : r.tensors) v.buffer = rename(v.buffer);
  for (std::string& b : r.inputs) b = rename(b);
  for (std::string& b : r.outputs) b = rename(b);
  return r;
}

// ---- printing ----

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// A buffer as a tensor argument: its name, or Inductor's reinterpret_tensor for a view of it.
std::string view_string(const Program& p, const BufferView& v) {
  const Buffer& b = p.buffer(v.buffer);
  if (v.sizes == b.sizes && v.strides == b.strides && v.offset == b.offset) return v.buffer;
  return "reinterpret_tensor(" + v.buffer + ", " + ints(v.sizes) + ", " + ints(v.strides) + ", " +
         std::to_string(v.offset) + ")";
}

std::string arg_string(const Program& p, const ExternCall& c, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return "None";
    case Arg::Kind::Bool: return a.b ? "True" : "False";
    case Arg::Kind::Int: return a.s.empty() ? std::to_string(a.i) : a.s;
    case Arg::Kind::Float: return number(a.f);
    case Arg::Kind::Str: return "'" + a.s + "'";
    case Arg::Kind::Node: return view_string(p, c.tensors.at(size_t(a.i)));
    case Arg::Kind::DType: return "torch." + a.s;
    case Arg::Kind::List:
    case Arg::Kind::Tuple: {
      std::string s = a.kind == Arg::Kind::List ? "[" : "(";
      for (size_t i = 0; i < a.items.size(); ++i) s += (i ? ", " : "") + arg_string(p, c, a.items[i]);
      return s + (a.kind == Arg::Kind::List ? "]" : (a.items.size() == 1 ? ",)" : ")"));
    }
    default: return a.s.empty() ? "?" : a.s;
  }
}

}  // namespace

std::string extern_call_string(const Program& p, const ExternCall& c) {
  std::string out = "out=";
  if (c.outputs.size() == 1) out += c.outputs[0];
  else {
    out += "[";
    for (size_t i = 0; i < c.outputs.size(); ++i) out += (i ? ", " : "") + c.outputs[i];
    out += "]";
  }
  if (c.kind == ExternKind::Gemm) {
    const GemmParams& g = c.gemm;
    bool fused = g.c >= 0 || g.c_constant || g.alpha != 1;
    std::string s = "extern_kernels.";
    s += fused ? (g.batched ? "baddbmm(" : "addmm(") : (g.batched ? "bmm(" : "mm(");
    if (g.c >= 0) s += view_string(p, c.tensors[size_t(g.c)]) + ", ";
    else if (g.c_constant) s += number(*g.c_constant) + ", ";
    s += view_string(p, c.tensors[size_t(g.a)]) + ", " + view_string(p, c.tensors[size_t(g.b)]);
    if (fused) s += ", alpha=" + number(g.alpha) + ", beta=" + number(g.beta);
    return s + ", " + out + ")";
  }
  if (c.kind == ExternKind::Attention) {
    const AttentionParams& a = c.attention;
    std::string s = "extern_kernels.flash_attention(" + view_string(p, c.tensors[size_t(a.q)]) + ", " +
                    view_string(p, c.tensors[size_t(a.k)]) + ", " + view_string(p, c.tensors[size_t(a.v)]) +
                    ", scale=" + number(a.scale);
    if (a.causal_offset) s += ", causal=" + std::to_string(*a.causal_offset);
    if (a.mask >= 0 && !a.causal_offset) {
      s += std::string(a.mask_kind == AttentionMask::Additive ? ", add_mask=" : ", bool_mask=") +
           view_string(p, c.tensors[size_t(a.mask)]);
      if (a.mask_kind == AttentionMask::Additive && a.mask_scale != 1) s += ", mask_scale=" + number(a.mask_scale);
      if (a.mask_kind == AttentionMask::Boolean) s += std::string(", masked_when=") + (a.masked_when_nonzero ? "True" : "False");
    }
    if (a.mask_kind == AttentionMask::Boolean && !std::isinf(a.fill)) s += ", fill=" + number(a.fill);
    return s + ", " + out + ")";
  }
  if (c.kind == ExternKind::AttentionForward || c.kind == ExternKind::AttentionBackward) {
    // Training's attention: the flash kernels with the logsumexp (forward) or the gradients (backward).
    const AttentionParams& a = c.attention;
    auto view = [&](int i) { return view_string(p, c.tensors.at(size_t(i))); };
    const bool backward = c.kind == ExternKind::AttentionBackward;
    std::string s = backward ? "extern_kernels.flash_attention_backward(" + view(a.dout) + ", " : "extern_kernels.flash_attention_lse(";
    s += view(a.q) + ", " + view(a.k) + ", " + view(a.v);
    if (backward) s += ", out=" + view(a.out) + ", lse=" + view(a.lse);
    s += ", scale=" + number(a.scale);
    if (a.causal_offset) s += ", causal=" + std::to_string(*a.causal_offset);
    if (a.mask >= 0) s += ", add_mask=" + view(a.mask);
    return s + ", " + out + ")";
  }
  // Inductor names a fallback by its Python op; extern_kernels.convolution for the dedicated conv.
  std::string name = c.target;
  if (c.kind == ExternKind::Convolution) {
    name = "extern_kernels.convolution";
  } else {
    size_t colons = name.find("::");
    if (colons != std::string::npos) name = "torch.ops." + name.substr(0, colons) + "." + name.substr(colons + 2);
  }
  std::string s = name + "(";
  bool first = true;
  for (const Arg& a : c.args) s += (first ? "" : ", ") + arg_string(p, c, a), first = false;
  for (const auto& [k, a] : c.kwargs) s += (first ? "" : ", ") + k + "=" + arg_string(p, c, a), first = false;
  return s + (first ? "" : ", ") + out + ")";
}

}  // namespace kiln::loopir
