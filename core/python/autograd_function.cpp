// torch.autograd: custom Functions (forward/backward staticmethods with a
// ctx, or forward + setup_context), Variable, the grad-mode aliases, and
// set_detect_anomaly. Function.apply runs forward without grad, then gives
// its tensor outputs a node of eager autograd (autograd.h) whose backward
// calls the class's backward with the ctx, checking what it returns as
// PyTorch does. Inside a torch.compile'd function capture traces the forward
// into one autograd_function_apply node, as Dynamo does, and the node runs
// apply eagerly.
#include <string>

#include "core/python/autograd.h"
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/torch_convert.h"
#include "core/python/tracer.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kAutogradSource = R"PY(# torch.autograd in Kiln's Python subset, after PyTorch 2.11.
import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


class FunctionCtx:
    def __init__(self):
        self.to_save = ()
        self.needs_input_grad = ()
        self.materialize_grads = True
        self.non_differentiable = ()

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, torch.Tensor):
                _raise("TypeError", f"save_for_backward can only save variables, but argument {i} is of type {type(t).__name__}")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        return tuple(self.to_save)

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def mark_dirty(self, *args):
        _kiln.raise_unsupported("ctx.mark_dirty: custom autograd Functions that modify their inputs in place are not supported by Kiln")

    def save_for_forward(self, *tensors):
        _kiln.raise_unsupported("ctx.save_for_forward: forward-mode AD is not supported by Kiln")


class Function:
    @staticmethod
    def forward(*args, **kwargs):
        _raise("NotImplementedError", "You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        _raise("NotImplementedError", "setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        _raise("NotImplementedError", "You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args):
        # None outside a trace; under capture, the node's outputs in a tuple.
        traced = _kiln.function_apply_traced(cls, args, _forward_for_capture)
        if traced is not None:
            return traced[0]
        ctx = FunctionCtx()
        grad_on = torch.is_grad_enabled()
        ctx.needs_input_grad = tuple(grad_on and isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        own_setup = cls.setup_context is not Function.setup_context
        with torch.no_grad():
            if own_setup:
                output = cls.forward(*args)
            else:
                output = cls.forward(ctx, *args)
        if own_setup:
            cls.setup_context(ctx, args, output)
            if grad_on and any(ctx.needs_input_grad):
                _check_saved_inputs_returned(ctx, args, output)
        return _kiln.function_apply(cls, ctx, args, output)


def _forward_for_capture(cls, args):
    # What apply runs before autograd takes the outputs: capture traces it
    # (args holding the subgraph's placeholders) as the forward subgraph.
    # Returns the output and the indices of the outputs marked
    # non-differentiable, which get no grad_fn.
    ctx = FunctionCtx()
    grad_on = torch.is_grad_enabled()
    ctx.needs_input_grad = tuple(grad_on and isinstance(a, torch.Tensor) and a.requires_grad for a in args)
    with torch.no_grad():
        if cls.setup_context is not Function.setup_context:
            output = cls.forward(*args)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args)
    outs = output if isinstance(output, tuple) else (output,)
    marked = tuple(i for i, o in enumerate(outs) if any(o is n for n in ctx.non_differentiable))
    return output, marked


def _check_saved_inputs_returned(ctx, args, output):
    # PyTorch's check when setup_context is overridden: an input returned as
    # the output itself (not a view of it) must not be saved for backward.
    outs = output if isinstance(output, tuple) else (output,)
    for o in outs:
        if not isinstance(o, torch.Tensor) or not any(o is a for a in args):
            continue
        if any(o is t for t in ctx.to_save):
            _raise("RuntimeError", "A input that has been returned as-is as output is being saved for backward. "
                                   "This is not supported if you override setup_context. You should return and save "
                                   "a view of the input instead, e.g. with x.view_as(x) or setup ctx inside the "
                                   "forward function itself.")


def _variable(data, requires_grad=False, volatile=False):
    if not isinstance(data, torch.Tensor):
        _raise("TypeError", "Variable data has to be a tensor, but got " + type(data).__name__)
    if requires_grad:
        data.requires_grad_(True)
    return data


class set_detect_anomaly:
    # Anomaly mode adds checks and tracebacks; Kiln's gradients are the same
    # without it, so it is accepted and changes nothing.
    def __init__(self, mode, check_nan=True):
        self.mode = mode

    def __enter__(self):
        return None

    def __exit__(self, *args):
        return False


class detect_anomaly(set_detect_anomaly):
    def __init__(self, check_nan=True):
        self.mode = True


def _tensors(value, what):
    if isinstance(value, torch.Tensor):
        return (value,)
    items = tuple(value)
    for v in items:
        if not isinstance(v, torch.Tensor):
            _raise("TypeError", what + " must be a Tensor or a sequence of Tensors, but got " + type(v).__name__)
    return items


def _grad_outputs(grad_outputs, count):
    if grad_outputs is None:
        return (None,) * count
    if isinstance(grad_outputs, torch.Tensor):
        grad_outputs = (grad_outputs,)
    grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != count:
        _raise("RuntimeError", f"grad requires one gradient per output: got {len(grad_outputs)} for {count} outputs")
    return grad_outputs


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    if is_grads_batched:
        _kiln.raise_unsupported("torch.autograd.grad(is_grads_batched=True) (it runs under vmap) is not supported by Kiln")
    if materialize_grads and allow_unused is False:
        _raise("ValueError", "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _tensors(outputs, "outputs")
    inputs = _tensors(inputs, "inputs")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _kiln.autograd_grad(outputs, _grad_outputs(grad_outputs, len(outputs)), inputs, bool(retain_graph),
                                bool(allow_unused), bool(create_graph))
    if materialize_grads:
        grads = tuple(torch.zeros_like(i) if g is None else g for g, i in zip(grads, inputs))
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        if create_graph:
            _kiln.raise_unsupported("torch.autograd.backward(create_graph=True, inputs=...) is not supported by Kiln")
        tensors = _tensors(tensors, "tensors")
        inputs = _tensors(inputs, "inputs")
        grads = _kiln.autograd_grad(tensors, _grad_outputs(grad_tensors, len(tensors)), inputs, bool(retain_graph), True)
        _kiln.accumulate_grads(inputs, grads)
        return
    if isinstance(tensors, torch.Tensor):
        tensors = (tensors,)
        grad_tensors = (grad_tensors,) if grad_tensors is None or isinstance(grad_tensors, torch.Tensor) else grad_tensors
    if len(tensors) != 1:
        _kiln.raise_unsupported("torch.autograd.backward of several tensors at once is not supported by Kiln")
    gradient = None if grad_tensors is None else grad_tensors[0]
    tensors[0].backward(gradient, retain_graph=retain_graph, create_graph=create_graph)


def once_differentiable(fn):
    # A backward that runs without recording. Grad mode is on during backward only under create_graph=True,
    # where PyTorch errs once the result is differentiated again; Kiln refuses at once rather than hand back
    # a gradient without its history.
    def wrapper(ctx, *args):
        if torch.is_grad_enabled():
            _kiln.raise_unsupported("create_graph=True through a backward marked @once_differentiable")
        with torch.no_grad():
            return fn(ctx, *args)
    import _kiln_std
    _kiln_std.set_function_name(wrapper, fn.__name__)
    return wrapper


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _numerical_jacobian(func, inputs, diff, which, out_numels, eps):
    """[output][input] matrices (numel of input, numel of output) by central differences of eps.

    The function runs with grad mode as the caller has it (gradgradcheck's function calls
    autograd.grad); only the perturbations are written under no_grad."""
    work = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    numerical = [[torch.zeros(inputs[d].numel(), n, dtype=inputs[d].dtype) for d in diff] for n in out_numels]
    for c, i in enumerate(diff):
        flat = work[i].view(-1)
        for e in range(flat.numel()):
            with torch.no_grad():
                orig = flat[e].clone()
                flat[e] = orig - eps
            outa = _as_tuple(func(*work))
            outa = [outa[k].detach().clone() for k in which]
            with torch.no_grad():
                flat[e] = orig + eps
            outb = _as_tuple(func(*work))
            outb = [outb[k].detach().clone() for k in which]
            with torch.no_grad():
                flat[e] = orig
                for j in range(len(outa)):
                    numerical[j][c][e] = ((outb[j] - outa[j]) / (2 * eps)).reshape(-1)
    return numerical


def gradcheck(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    # PyTorch 2.11's slow mode: the Jacobian by central differences of eps against the one backward gives,
    # element by element, compared with allclose(analytical, numerical, rtol, atol).
    if check_batched_grad or check_batched_forward_grad or check_forward_ad or not check_backward_ad:
        _kiln.raise_unsupported("torch.autograd.gradcheck with batched or forward-mode checks is not supported by Kiln")
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
    if not diff:
        _raise("ValueError", "gradcheck expects at least one input tensor to require gradient, but none of the them "
                             "have requires_grad=True.")
    import warnings
    for i in diff:
        if inputs[i].dtype not in (torch.float64, torch.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", stacklevel=2)
    leaves = [x.detach().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x for x in inputs]
    outs = _as_tuple(func(*leaves))
    outputs = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outputs:
        # As PyTorch: with nothing to differentiate, every numerical derivative must be zero.
        which = [k for k, x in enumerate(outs) if isinstance(x, torch.Tensor)]
        for per_output in _numerical_jacobian(func, inputs, diff, which, [outs[k].numel() for k in which], eps):
            for jacobian in per_output:
                if bool((jacobian != 0).any()):
                    if not raise_exception:
                        return False
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    # analytical[o][i]: (numel of input i, numel of output o), one column per backward of a one-hot grad_output.
    analytical = []
    for o in outputs:
        cols = [torch.zeros(inputs[i].numel(), o.numel(), dtype=inputs[i].dtype) for i in diff]
        for k in range(o.numel()):
            for i in diff:
                leaves[i].grad = None
            g = torch.zeros_like(o)
            g.view(-1)[k] = 1
            o.backward(g, retain_graph=True)
            for c, i in enumerate(diff):
                if leaves[i].grad is not None:
                    cols[c][:, k] = leaves[i].grad.reshape(-1)
        analytical.append(cols)
    if check_undefined_grad:
        for o in outputs:
            for i in diff:
                leaves[i].grad = None
            o.backward(torch.zeros_like(o), retain_graph=True)
            for i in diff:
                if leaves[i].grad is not None and bool((leaves[i].grad != 0).any()):
                    _kiln.raise_unsupported("torch.autograd.gradcheck: the backward gives nonzero gradients for zero "
                                            "output gradients; PyTorch's undefined-gradient check and its report "
                                            "are not modelled by Kiln")
    for i in diff:
        leaves[i].grad = None
    which = [k for k, x in enumerate(outs) if isinstance(x, torch.Tensor) and x.requires_grad]
    numerical = _numerical_jacobian(func, inputs, diff, which, [o.numel() for o in outputs], eps)
    for j in range(len(outputs)):
        for c, i in enumerate(diff):
            a = analytical[j][c]
            n = numerical[j][c]
            if not torch.allclose(a, n.to(a.dtype), rtol, atol):
                if fast_mode:
                    _kiln.raise_unsupported("torch.autograd.gradcheck(fast_mode=True) found a mismatch; its report "
                                            "(random projections) is not modelled by Kiln: use fast_mode=False")
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {j:d} with respect to input {i:d},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
    return True


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if isinstance(o, torch.Tensor) and o.requires_grad)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-06, atol=1e-05, rtol=0.001,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    # PyTorch 2.11's: gradcheck of the function (inputs, grad_outputs) -> autograd.grad(..., create_graph=True).
    # Missing grad_outputs are drawn as torch.testing.make_tensor(low=-1, high=1) draws them (uniform_ on the
    # global generator, one tensor per differentiable output, in order), so the random state afterwards is PyTorch's.
    if check_fwd_over_rev or not check_rev_over_rev:
        _kiln.raise_unsupported("torch.autograd.gradgradcheck with forward-over-reverse checks is not supported by Kiln")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        made = []
        for x in _differentiable_outputs(func(*tupled_inputs)):
            dt = x.dtype if x.is_floating_point() or x.is_complex() else torch.double
            t = torch.empty(x.shape, dtype=dt).uniform_(-1, 1)
            if gen_non_contig_grad_outputs and t.numel() > 1:
                t = torch.repeat_interleave(t, 2, dim=-1)[..., ::2]
            made.append(t.requires_grad_(True))
        tupled_grad_outputs = tuple(made)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_inputs = {i for i, x in enumerate(tupled_inputs) if isinstance(x, torch.Tensor) and x.requires_grad}
    diff_grad_outputs = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(x.requires_grad_() if i in diff_inputs else x for i, x in enumerate(args[:-num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        grads = tuple(x.requires_grad_() if i in diff_grad_outputs else x
                      for i, x in enumerate(args[-num_outputs:]))
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_inputs)
        grad_inputs = torch.autograd.grad(outputs, diff_input_args, grads, create_graph=True, allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     masked=masked)


no_grad = torch.no_grad
enable_grad = torch.enable_grad
set_grad_enabled = torch.set_grad_enabled
inference_mode = torch.inference_mode
)PY";

// Backward of one Function.apply: the class's backward(ctx, *grads).
struct PyFunctionNode : autograd::Node {
  VM* vm = nullptr;
  Value backward_fn, ctx;
  std::vector<Tensor> input_metas;    // per apply() argument; undefined for non-tensors
  std::vector<bool> input_is_tensor;
  std::vector<Tensor> output_metas;   // per forward output (undefined for non-tensors): backward gets one grad each
  bool materialize = true;

  Grads apply(const Grads& grads) override {
    ValueVec given;
    for (const std::optional<Tensor>& g : grads) given.push_back(g ? tensor_value(*g) : Value());
    Grads out;
    for (const Value& g : call_backward(given))
      out.push_back(g.is_none() ? std::nullopt : std::optional<Tensor>(tensor_obj(g)->t));
    return out;
  }

  // The class's backward runs with grad mode on (the engine's create_graph),
  // on gradients that carry their history: what it computes is recorded.
  HistoryGrads apply_with_history(VM&, const HistoryGrads& grads) override {
    ValueVec given;
    for (const std::optional<autograd::GradValue>& g : grads) given.push_back(g ? autograd::grad_value_object(*g) : Value());
    HistoryGrads out;
    for (const Value& g : call_backward(given))
      out.push_back(g.is_none() ? std::nullopt : std::optional<autograd::GradValue>(autograd::grad_value_of(tensor_obj(g))));
    return out;
  }

  // backward(ctx, *grads) with `given` (None where no gradient arrived), its
  // results checked as PyTorch checks them: one tensor (or None) per input,
  // in the input's shape and dtype.
  ValueVec call_backward(const ValueVec& given) {
    if (released)
      throw PyError("RuntimeError", "Trying to backward through the graph a second time (or directly access saved "
                                    "tensors after they have already been freed).");
    ValueVec call_args{ctx};
    for (size_t i = 0; i < output_metas.size(); ++i) {
      if (i < given.size() && !given[i].is_none()) call_args.push_back(given[i]);
      else if (materialize && output_metas[i].defined()) call_args.push_back(tensor_value(Tensor::zeros(output_metas[i].sizes(), output_metas[i].dtype())));
      else call_args.push_back(Value());
    }
    Value result = vm->call(backward_fn, call_args);
    ValueVec returned = result.is(ObjKind::Tuple) ? result.as<Tuple>()->items : ValueVec{result};
    const size_t expected = input_metas.size();
    if (returned.size() < expected)
      throw PyError("RuntimeError", "function " + name + " returned an incorrect number of gradients (expected " +
                                        std::to_string(expected) + ", got " + std::to_string(returned.size()) + ")");
    for (size_t i = expected; i < returned.size(); ++i)
      if (!returned[i].is_none())
        throw PyError("RuntimeError", "function " + name + " returned an incorrect number of gradients (expected " +
                                          std::to_string(expected) + ", got " + std::to_string(returned.size()) + ")");
    ValueVec out(expected);
    for (size_t i = 0; i < expected; ++i) {
      if (returned[i].is_none()) continue;
      if (!input_is_tensor[i]) continue;
      TensorObj* g = tensor_obj(returned[i]);
      if (!g) throw PyError("TypeError", "function " + name + " returned a non-Tensor gradient at index " + std::to_string(i));
      const Tensor& want = input_metas[i];
      if (g->t.sizes() != want.sizes())
        throw PyError("RuntimeError", "Function " + name + " returned an invalid gradient at index " + std::to_string(i) +
                                          " - got " + shape_str(g->t.sizes()) + " but expected shape compatible with " +
                                          shape_str(want.sizes()));
      if (g->t.dtype() != want.dtype()) {
        if (g->grad_node)
          throw PyError("NotImplementedError", "create_graph=True through " + name + ", whose backward returns another dtype",
                        /*unsupported=*/true);
        out[i] = tensor_value(g->t.to(want.dtype()));
        continue;
      }
      out[i] = returned[i];
    }
    return out;
  }
  void release() override {
    backward_fn = Value();
    ctx = Value();
  }
};

Value function_apply(VM& vm, const CallArgs& a) {
  const Value& cls = a[0];
  const Value& ctx = a[1];
  const ValueVec inputs = vm.to_vector(a[2]);
  const Value& output = a[3];
  bool any = false;
  for (const Value& in : inputs)
    if (const TensorObj* t = tensor_obj(in); t && (t->requires_grad || t->grad_node)) any = true;
  if (!vm.grad_enabled || !any) return output;

  auto node = std::make_shared<PyFunctionNode>();
  node->vm = &vm;
  node->name = (cls.is(ObjKind::Class) ? cls.as<Class>()->name : std::string("Function")) + "Backward";
  if (!vm.try_getattr(cls, "backward", node->backward_fn)) throw PyError("AttributeError", "backward");
  node->ctx = ctx;
  Value materialize;
  if (vm.try_getattr(ctx, "materialize_grads", materialize)) node->materialize = vm.truth(materialize);
  for (const Value& in : inputs) {
    TensorObj* t = tensor_obj(in);
    node->input_is_tensor.push_back(t != nullptr);
    node->input_metas.push_back(t ? Tensor::meta(t->t.sizes(), t->t.dtype()) : Tensor());
    node->next.push_back(t ? autograd::edge_of(t) : autograd::Edge{});
  }
  Value non_diff_value;
  ValueVec non_diff;
  if (vm.try_getattr(ctx, "non_differentiable", non_diff_value)) non_diff = vm.to_vector(non_diff_value);
  auto is_non_diff = [&](const Value& v) {
    for (const Value& n : non_diff)
      if (n.is_obj() && v.is_obj() && n.obj() == v.obj()) return true;
    return false;
  };
  const bool tuple_out = output.is(ObjKind::Tuple);
  ValueVec outs = tuple_out ? output.as<Tuple>()->items : ValueVec{output};
  for (Value& o : outs) {
    TensorObj* t = tensor_obj(o);
    node->output_metas.push_back(t ? Tensor::meta(t->t.sizes(), t->t.dtype()) : Tensor());
    if (!t || !is_floating(t->t.dtype()) || is_non_diff(o)) continue;
    // An input returned as is becomes a new tensor sharing its data, as PyTorch's view of it.
    for (const Value& in : inputs)
      if (in.is_obj() && in.obj() == o.obj()) {
        Value alias = tensor_value(t->t);
        alias.as<TensorObj>()->device = t->device;
        o = alias;
        t = tensor_obj(o);
        break;
      }
    autograd::set_history(t, node, uint32_t(node->output_metas.size() - 1));
    t->grad_fn = node->name;
  }
  node->num_outputs = std::max<size_t>(1, node->output_metas.size());
  return tuple_out ? tuple_value(std::move(outs)) : outs[0];
}

std::vector<TensorObj*> tensor_list(VM& vm, const Value& v, const char* what) {
  std::vector<TensorObj*> out;
  for (const Value& item : vm.to_vector(v)) {
    TensorObj* t = tensor_obj(item);
    if (!t) throw PyError("TypeError", std::string(what) + " must be Tensors");
    out.push_back(t);
  }
  return out;
}

// _kiln.autograd_grad(outputs, grad_outputs, inputs, retain_graph, allow_unused, create_graph=False)
Value autograd_grad(VM& vm, const CallArgs& a) {
  if (vm.tracer) {
    BreakInfo info;
    info.reason = "Unsupported call: torch.autograd.grad";
    info.explanation = "  Explanation: Kiln does not trace torch.autograd.grad; the call runs eagerly.\n";
    vm.tracer->graph_break(vm, info);
  }
  std::vector<TensorObj*> roots = tensor_list(vm, a[0], "outputs");
  std::vector<std::optional<autograd::GradValue>> root_grads;
  for (const Value& g : vm.to_vector(a[1])) {
    if (g.is_none()) {
      root_grads.push_back(std::nullopt);
      continue;
    }
    TensorObj* t = tensor_obj(g);
    if (!t) throw PyError("TypeError", "grad_outputs must be Tensors or None");
    root_grads.push_back(autograd::grad_value_of(t));
  }
  std::vector<TensorObj*> inputs = tensor_list(vm, a[2], "inputs");
  const bool create_graph = a.npos > 5 && vm.truth(a[5]);
  std::vector<std::optional<autograd::GradValue>> grads =
      autograd::grad(vm, roots, root_grads, inputs, vm.truth(a[3]), vm.truth(a[4]), create_graph);
  ValueVec out;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i]) {
      out.push_back(Value());
      continue;
    }
    Value v = autograd::grad_value_object(*grads[i]);
    v.as<TensorObj>()->device = inputs[i]->device;
    out.push_back(v);
  }
  return tuple_value(std::move(out));
}

// _kiln.accumulate_grads(inputs, grads): backward(inputs=...)'s .grad updates,
// in place once a .grad exists, as AccumulateGrad.
Value accumulate_grads(VM& vm, const CallArgs& a) {
  std::vector<TensorObj*> inputs = tensor_list(vm, a[0], "inputs");
  ValueVec grads = vm.to_vector(a[1]);
  for (size_t i = 0; i < inputs.size() && i < grads.size(); ++i) {
    if (grads[i].is_none()) continue;
    autograd::accumulate_grad(*inputs[i], tensor_obj(grads[i])->t);
  }
  return Value();
}

void install_autograd(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kAutogradSource, "torch/autograd/__init__.py");
  auto m = make<Module>("torch.autograd");
  auto function_module = make<Module>("torch.autograd.function");
  vm.add_module(m);
  vm.add_module(function_module);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.autograd");
  if (!globals) return;
  globals->for_each([&](const Value& k, const Value& v) {
    const std::string& name = as_str(k);
    if (name.starts_with("_") || name == "torch") return;
    if (v.is(ObjKind::Class) && v.as<Class>()->module == m->name) {
      if (name == "GradcheckError") v.as<Class>()->module = "torch.autograd.gradcheck";
      if (name == "Function" || name == "FunctionCtx") {
        v.as<Class>()->module = "torch.autograd.function";
        function_module->dict->set(k, v);
      } else if (name == "Variable") {
        return;
      }
    }
    if (name == "once_differentiable") function_module->dict->set(k, v);
    m->dict->set(k, v);
  });
  // Variable(t) returns t: a function, as the subset's classes cannot return another object from __new__.
  if (const Value* variable = globals->find_str("_variable")) m->dict->set(str_value("Variable"), *variable);
}

}  // namespace

void install_autograd_prelude(VM& vm) {
  if (Ref<Module> k = vm.module("torch._kiln")) {
    set_attr_builtin(k->dict, "torch._kiln.function_apply", "function_apply", function_apply);
    set_attr_builtin(k->dict, "torch._kiln.autograd_grad", "autograd_grad", autograd_grad);
    set_attr_builtin(k->dict, "torch._kiln.accumulate_grads", "accumulate_grads", accumulate_grads);
    // function_apply_traced(cls, args, forward_helper): None when no trace runs;
    // under capture's tracer its hook's result (the outputs, in a tuple of one);
    // any other tracer breaks the graph and apply runs eagerly.
    set_attr_builtin(k->dict, "torch._kiln.function_apply_traced", "function_apply_traced", [](VM& vm, const CallArgs& a) {
      if (!vm.tracer) return Value();
      auto it = vm.extensions.find("torch.autograd.Function.apply.traced");
      if (it == vm.extensions.end() || !it->second) {
        BreakInfo info;
        info.reason = "Unsupported call: torch.autograd.Function.apply";
        info.explanation = "  Explanation: this tracer does not trace custom autograd Functions; apply runs eagerly.\n";
        vm.tracer->graph_break(vm, info);
      }
      return tuple_value({(*static_cast<const BuiltinFn*>(it->second.get()))(vm, a)});
    });
  }
  vm.add_lazy_module("torch.autograd", install_autograd);
  vm.add_lazy_module("torch.autograd.function", install_autograd);
}

}  // namespace kiln::py
