#include "compiler/aot/grad_context.h"

#include <algorithm>

#include "compiler/aot/grad_ops.h"
#include "compiler/aot/tape.h"
#include "core/ops/registry.h"

namespace kiln::aot {

const Schema& schema_of(std::string_view op) {
  const OpDef* def = op_registry().find(op);
  KILN_USER_CHECK(def, "unknown op '", op, "'");
  return def->schema;
}

std::vector<EArg> bind_call(const Schema& schema, const std::vector<EArg>& args, const EKwargs& kwargs) {
  KILN_USER_CHECK(args.size() <= schema.args.size(), schema.full_name(), " takes at most ", schema.args.size(),
                  " arguments, got ", args.size());
  for (const auto& [name, a] : kwargs) {
    int i = schema.index_of(name);
    KILN_USER_CHECK(i >= 0, schema.full_name(), " has no argument '", name, "'");
    KILN_USER_CHECK(size_t(i) >= args.size(), schema.full_name(), " got argument '", name, "' twice");
  }
  std::vector<EArg> bound;
  for (size_t i = 0; i < schema.args.size(); ++i) {
    const Argument& s = schema.args[i];
    if (i < args.size()) {
      bound.push_back(args[i]);
      continue;
    }
    auto kw = std::find_if(kwargs.begin(), kwargs.end(), [&](const auto& p) { return p.first == s.name; });
    if (kw != kwargs.end()) bound.push_back(kw->second);
    else if (s.default_value) bound.push_back(EArg(*s.default_value));
    else if (s.type.optional) bound.push_back(EArg::none());
    else KILN_FAIL(schema.full_name(), " is missing argument '", s.name, "'");
  }
  return bound;
}

std::vector<std::string> tensor_input_names(const GradCall& call) {
  const Schema& schema = schema_of(call.op);
  std::vector<EArg> bound = bind_call(schema, call.args, call.kwargs);
  std::vector<std::string> names;
  for (size_t i = 0; i < bound.size(); ++i) {
    if (bound[i].kind == EArg::Kind::Var && bound[i].var.valid()) names.push_back(schema.args[i].name);
    if (bound[i].kind == EArg::Kind::VarList)
      for (Var v : bound[i].vars)
        if (v.valid()) names.push_back(schema.args[i].name);
  }
  return names;
}

namespace {
bool is_present_var(const EArg& a) { return a.kind == EArg::Kind::Var && a.var.valid(); }
}  // namespace

namespace {
bool reduced_float(const Emitter& e, Var v) { return v.valid() && is_reduced_float(e.dtype(v)); }
}  // namespace

GradContext::GradContext(Emitter& em, const GradCall& c, const GradList& grad_outputs)
    : e(em), call(c), schema_(schema_of(c.op)), bound_(bind_call(schema_, c.args, c.kwargs)), grads_(grad_outputs),
      outputs_(c.outputs) {
  KILN_CHECK(grads_.size() <= call.outputs.size(), c.op, ": ", grads_.size(), " output gradients for ",
             call.outputs.size(), " outputs");
  grads_.resize(call.outputs.size());
  given_ = bound_;
  for (const EArg& a : given_) {
    first_slot_.push_back(inputs_.size());
    if (is_present_var(a)) inputs_.push_back(a.var);
    else if (a.kind == EArg::Kind::VarList)
      for (Var v : a.vars)
        if (v.valid()) inputs_.push_back(v);
  }
  result_.resize(inputs_.size());
  work_inputs_ = inputs_;
  const DerivativeDef* def = find_derivative(call.op);
  if (def && def->float32_for_reduced) upcast();
}

// float16 / bfloat16 formulas run in float32 and round once when the
// gradient is set, as ATen's fused backward kernels do.
void GradContext::upcast() {
  bool any = std::any_of(inputs_.begin(), inputs_.end(), [&](Var v) { return reduced_float(e, v); }) ||
             std::any_of(grads_.begin(), grads_.end(), [&](const std::optional<Var>& g) { return g && reduced_float(e, *g); });
  if (!any) return;
  auto up = [&](Var v) { return reduced_float(e, v) ? cast(e, v, DType::Float32) : v; };
  for (EArg& a : bound_) {
    if (is_present_var(a)) a.var = up(a.var);
    if (a.kind == EArg::Kind::VarList)
      for (Var& v : a.vars) v = up(v);
  }
  for (std::optional<Var>& g : grads_)
    if (g) g = up(*g);
  for (Var& o : outputs_) o = up(o);
  work_inputs_.clear();
  for (const EArg& a : bound_) {
    if (is_present_var(a)) work_inputs_.push_back(a.var);
    else if (a.kind == EArg::Kind::VarList)
      for (Var v : a.vars)
        if (v.valid()) work_inputs_.push_back(v);
  }
}

size_t GradContext::index_of(std::string_view name) const {
  int i = schema_.index_of(name);
  KILN_CHECK(i >= 0, call.op, " has no argument '", name, "'");
  return size_t(i);
}

const EArg& GradContext::arg(std::string_view name) const { return bound_[index_of(name)]; }

bool GradContext::is_none(std::string_view name) const {
  const EArg& a = arg(name);
  return a.kind == EArg::Kind::Const ? a.value.is_none() : (a.kind == EArg::Kind::Var && !a.var.valid());
}

Var GradContext::var(std::string_view name) const {
  const EArg& a = arg(name);
  KILN_USER_CHECK(is_present_var(a), call.op, ": argument '", name, "' must be a tensor");
  return a.var;
}

std::optional<Var> GradContext::opt_var(std::string_view name) const {
  const EArg& a = arg(name);
  if (is_present_var(a)) return a.var;
  return std::nullopt;
}

std::vector<Var> GradContext::vars(std::string_view name) const {
  const EArg& a = arg(name);
  KILN_USER_CHECK(a.kind == EArg::Kind::VarList, call.op, ": argument '", name, "' must be a tensor list");
  return a.vars;
}

const Value& GradContext::value(std::string_view name) const {
  const EArg& a = arg(name);
  KILN_USER_CHECK(a.kind == EArg::Kind::Const, call.op, ": argument '", name, "' must be a constant");
  return a.value;
}

int64_t GradContext::integer(std::string_view name) const { return value(name).to_int(); }
std::optional<int64_t> GradContext::opt_integer(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return integer(name);
}
double GradContext::real(std::string_view name) const { return value(name).to_double(); }
std::optional<double> GradContext::opt_real(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return real(name);
}
bool GradContext::boolean(std::string_view name) const { return value(name).to_bool(); }
std::vector<int64_t> GradContext::ints(std::string_view name) const {
  size_t i = index_of(name);
  return value(name).to_int_list(size_t(schema_.args[i].type.fixed_size));
}
std::optional<std::vector<int64_t>> GradContext::opt_ints(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return ints(name);
}
std::string GradContext::str(std::string_view name) const { return value(name).to_string(); }
std::optional<std::string> GradContext::opt_str(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return str(name);
}

Var GradContext::out(size_t i) const {
  KILN_CHECK(i < outputs_.size(), call.op, " has no output ", i);
  return outputs_[i];
}

std::optional<Var> GradContext::grad(size_t i) const {
  KILN_CHECK(i < grads_.size(), call.op, " has no output ", i);
  return grads_[i];
}

Var GradContext::grad_or_zeros(size_t i) const {
  if (auto g = grad(i)) return *g;
  return zeros_like(e, out(i));
}

Var GradContext::grad() const { return grad_or_zeros(0); }

bool GradContext::any_grad() const {
  return std::any_of(grads_.begin(), grads_.end(), [](const std::optional<Var>& g) { return g.has_value(); });
}

bool GradContext::needs(std::string_view name) const {
  // The input as called (upcast() replaces bound_'s Vars with float32 copies).
  const EArg& a = given_[index_of(name)];
  auto kept = [&](Var v) { return !call.kept_gradients || call.kept_gradients->count(v.id) > 0; };
  if (is_present_var(a)) return is_floating(e.dtype(a.var)) && kept(a.var);
  if (a.kind == EArg::Kind::VarList)
    return std::any_of(a.vars.begin(), a.vars.end(), [&](Var v) { return v.valid() && is_floating(e.dtype(v)) && kept(v); });
  return false;
}

Var GradContext::fit_to_input(Var g, Var input) const {
  g = sum_to(e, g, e.sizes(input));
  return cast(e, g, e.dtype(input));
}

void GradContext::set(std::string_view name, Var g) {
  size_t i = index_of(name);
  const EArg& a = given_[i];
  KILN_CHECK(a.kind != EArg::Kind::VarList, call.op, ": '", name, "' is a list; use set_list");
  if (!is_present_var(a) || !is_floating(e.dtype(a.var))) return;
  result_[first_slot_[i]] = fit_to_input(g, a.var);
}

void GradContext::set(std::string_view name, std::optional<Var> g) {
  if (g) set(name, *g);
}

void GradContext::set_list(std::string_view name, const GradList& gs) {
  size_t i = index_of(name);
  const EArg& a = given_[i];
  KILN_CHECK(a.kind == EArg::Kind::VarList && gs.size() == a.vars.size(), call.op, ": '", name,
             "' needs one gradient per list element");
  size_t slot = first_slot_[i];
  for (size_t k = 0; k < a.vars.size(); ++k) {
    if (!a.vars[k].valid()) continue;
    if (gs[k] && is_floating(e.dtype(a.vars[k]))) result_[slot] = fit_to_input(*gs[k], a.vars[k]);
    ++slot;
  }
}

void GradContext::set_flat(size_t i, Var g) {
  KILN_CHECK(i < inputs_.size(), call.op, " has no tensor input ", i);
  if (is_floating(e.dtype(inputs_[i]))) result_[i] = fit_to_input(g, inputs_[i]);
}

void GradContext::via(const std::function<std::vector<Var>(Emitter&)>& forward) {
  RecordingEmitter rec(e);
  std::vector<Var> outs = forward(rec);
  GradList g = backprop(e, rec.calls(), outs, grads_, work_inputs_);
  // Inputs the op does not differentiate (a loss' class weights) may still get
  // gradients through a decomposition; the op's own contract wins.
  const DerivativeDef* def = find_derivative(call.op);
  std::vector<std::string> names = tensor_input_names(call);
  for (size_t i = 0; i < g.size(); ++i) {
    bool listed = !def || std::count(def->differentiable_inputs.begin(), def->differentiable_inputs.end(), names[i]);
    if (g[i] && listed) set_flat(i, *g[i]);
  }
}

}  // namespace kiln::aot
