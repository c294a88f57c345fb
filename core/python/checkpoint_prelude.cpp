// torch.utils.checkpoint as PyTorch's reentrant variant runs it: the forward
// runs without recording, and backward runs the function again (from the
// forward's random state, restored afterwards) and backpropagates through the
// recomputation. The second run is observable and kept: BatchNorm layers
// inside update their running statistics twice per step, as in PyTorch, and a
// forward whose tensor inputs require no grad gives no parameter a gradient.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kCheckpointSource = R"PY(import torch
import warnings


def _tensors(values):
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            out.extend(_tensors(v))
    return out


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = torch.get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, torch.Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        if ctx.preserve_rng_state:
            outer_state = torch.get_rng_state()
            torch.set_rng_state(ctx.fwd_cpu_state)
        detached = []
        for x in inputs:
            if isinstance(x, torch.Tensor):
                d = x.detach()
                d.requires_grad = x.requires_grad
                detached.append(d)
            else:
                detached.append(x)
        with torch.enable_grad():
            outputs = ctx.run_function(*detached)
        if ctx.preserve_rng_state:
            torch.set_rng_state(outer_state)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], torch.Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            torch._kiln.raise_error("RuntimeError", "none of output has requires_grad=True, this checkpoint() is not necessary")
        torch.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple([x.grad if isinstance(x, torch.Tensor) else None for x in detached])
        return (None, None) + grads


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.")
        use_reentrant = True
    if use_reentrant:
        if context_fn is not None or debug:
            torch._kiln.raise_error("ValueError", "Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            torch._kiln.raise_error("ValueError", "Unexpected keyword arguments: " + ",".join(kwargs.keys()))
        if torch.is_grad_enabled() and not any(t.requires_grad for t in _tensors(args)):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if context_fn is not None:
        torch._kiln.raise_unsupported("torch.utils.checkpoint(context_fn=...) (Kiln recomputes as the reentrant variant does)")
    # The non-reentrant variant also recomputes in backward; it differs where
    # no tensor input requires grad (its parameters still get gradients),
    # which the reentrant recomputation cannot give.
    if torch.is_grad_enabled() and not any(t.requires_grad for t in _tensors(args)):
        torch._kiln.raise_unsupported("torch.utils.checkpoint(use_reentrant=False) where no tensor input requires grad "
                                      "(Kiln recomputes as the reentrant variant does)")
    if kwargs:
        def call(*a):
            return function(*a, **kwargs)
        return CheckpointFunction.apply(call, preserve_rng_state, *args)
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.")
        use_reentrant = True
    if isinstance(functions, torch.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1

        def run(x, start=start, end=end):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        input = checkpoint(run, input, use_reentrant=use_reentrant, **kwargs)
    for j in range(end + 1, len(functions)):
        input = functions[j](input)
    return input
)PY";

void install_checkpoint(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kCheckpointSource, "torch/utils/checkpoint.py");
  auto m = make<Module>("torch.utils.checkpoint");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.utils.checkpoint");
  if (!globals) return;
  for (const char* name : {"checkpoint", "checkpoint_sequential", "CheckpointFunction"})
    if (const Value* v = globals->find_str(name)) m->dict->set(str_value(name), *v);
}

}  // namespace

void install_checkpoint_prelude(VM& vm) { vm.add_lazy_module("torch.utils.checkpoint", install_checkpoint); }

}  // namespace kiln::py
