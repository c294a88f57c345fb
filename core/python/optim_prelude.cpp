// torch.optim (Optimizer, SGD, Adam), written in Kiln's Python subset and run
// by the interpreter when a VM starts, as torch.nn is (nn_prelude.cpp). The
// source follows PyTorch 2.11's torch/optim/optimizer.py, sgd.py and adam.py:
// the same param_groups, defaults, state keys, reprs and error messages, and
// the single-tensor (foreach=False) update, the one PyTorch runs for CPU
// tensors, with its ops in PyTorch's order, so that the rounding is the same.
#include <string>
#include <string_view>

#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::py {
namespace {

const char* const kOptimSource = R"PY(# torch.optim in Kiln's Python subset, after PyTorch 2.11's torch/optim.
# The subset has no `raise`, so errors go through torch._kiln.raise_error.
import torch
import torch._dynamo
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class _ParamState:
    # PyTorch's defaultdict(dict) keyed by parameter: reading a missing
    # parameter's state creates it. Tensor keys compare by identity.
    def __init__(self):
        self._d = {}

    def __getitem__(self, param):
        d = self._d
        if param not in d:
            d[param] = {}
        return d[param]

    def __setitem__(self, param, value):
        self._d[param] = value

    def __contains__(self, param):
        return param in self._d

    def __len__(self):
        return len(self._d)

    def __iter__(self):
        return iter(self._d)

    def __bool__(self):
        return len(self._d) != 0

    def keys(self):
        return self._d.keys()

    def values(self):
        return self._d.values()

    def items(self):
        return self._d.items()

    def get(self, param, default=None):
        return self._d.get(param, default)

    def pop(self, param):
        return self._d.pop(param)

    def clear(self):
        self._d.clear()

    def __repr__(self):
        return "defaultdict(<class 'dict'>, " + repr(self._d) + ")"


def _check_single_tensor(name, foreach, fused, differentiable, capturable):
    # Kiln implements the single-tensor path only; the others round differently.
    if foreach:
        _raise("NotImplementedError", f"torch.optim.{name}(foreach=True): Kiln implements only the single-tensor (foreach=False) update")
    if fused:
        _raise("NotImplementedError", f"torch.optim.{name}(fused=True): Kiln implements only the single-tensor (foreach=False) update")
    if differentiable:
        _raise("NotImplementedError", f"torch.optim.{name}(differentiable=True) is not supported by Kiln")
    if capturable:
        _raise("NotImplementedError", f"torch.optim.{name}(capturable=True) is not supported by Kiln")


def _check_number(name, value):
    if isinstance(value, torch.Tensor):
        _raise("NotImplementedError", f"a Tensor {name} is not supported by Kiln's torch.optim")


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, torch.Tensor):
            _raise("TypeError", "params argument given to the optimizer should be an iterable of Tensors or dicts, but got " + torch.typename(params))
        self.state = _ParamState()
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            _raise("ValueError", "optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __repr__(self):
        format_string = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad.detach_()
                        else:
                            p.grad.requires_grad_(False)
                        p.grad.zero_()

    def step(self, closure=None):
        _raise("NotImplementedError", "")

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            _raise("TypeError", f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, torch.Tensor):
            param_group["params"] = [params]
        else:
            param_group["params"] = list(params)

        extracted_param_tensors = []
        extracted_param_names = []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                extracted_param_names.append(param[0])
                extracted_param_tensors.append(param[1])
            else:
                extracted_param_tensors.append(param)
        param_group["params"] = extracted_param_tensors
        if len(extracted_param_names) != 0:
            if len(extracted_param_names) == len(extracted_param_tensors):
                param_group["param_names"] = extracted_param_names
            else:
                _raise("ValueError", "all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, torch.Tensor):
                _raise("TypeError", "optimizer can only optimize Tensors, but one of the params is " + torch.typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or getattr(param, "retains_grad", False)):
                _raise("ValueError", "can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                _raise("ValueError", f"parameter group didn't specify a value of required optimization parameter {name}")
            else:
                param_group.setdefault(name, default)

        # The subset has no set: a dict keyed by tensor (identity) stands in.
        # PyTorch only warns about a parameter repeated within one group.
        param_set = {}
        for group in self.param_groups:
            for p in group["params"]:
                param_set[p] = True
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = "with names" if "param_names" in param_group else "without names"
                _raise("ValueError", f"all optimizer param groups should be with/without names. cannot add param group {current_group_txt} to the optimizer")
        for p in param_group["params"]:
            if p in param_set:
                _raise("ValueError", "some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    def _run_step(self, closure):
        # PyTorch's _use_grad_for_differentiable: the update runs with grad
        # mode off (differentiable=False) and breaks a Dynamo graph first;
        # the closure runs with grad mode on.
        loss = None
        with torch.no_grad():
            torch._dynamo.graph_break()
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                self._update_group(group)
        return loss


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False, foreach=None, differentiable=False, fused=None):
        _check_number("lr", lr)
        _check_number("weight_decay", weight_decay)
        if lr < 0.0:
            _raise("ValueError", f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            _raise("ValueError", f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            _raise("ValueError", f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            _raise("ValueError", "Nesterov momentum requires a momentum and zero dampening")
        _check_single_tensor("SGD", foreach, fused, differentiable, False)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(closure)

    def _update_group(self, group):
        params = []
        grads = []
        momentum_buffer_list = []
        for p in group["params"]:
            if p.grad is not None:
                params.append(p)
                grads.append(p.grad)
                if group["momentum"] != 0:
                    momentum_buffer_list.append(self.state[p].get("momentum_buffer"))
        _single_tensor_sgd(params, grads, momentum_buffer_list, group["weight_decay"], group["momentum"], group["lr"], group["dampening"], group["nesterov"], group["maximize"])
        if group["momentum"] != 0:
            for p, momentum_buffer in zip(params, momentum_buffer_list):
                self.state[p]["momentum_buffer"] = momentum_buffer


def _single_tensor_sgd(params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize):
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = grad.detach().clone()
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            if nesterov:
                grad = grad.add(buf, alpha=momentum)
            else:
                grad = buf
        param.add_(grad, alpha=-lr)


def _get_scalar_dtype():
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_number("lr", lr)
        _check_number("weight_decay", weight_decay)
        if not 0.0 <= lr:
            _raise("ValueError", f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            _raise("ValueError", f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            _raise("ValueError", f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            _raise("ValueError", f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            _raise("ValueError", f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float)) or (isinstance(betas[0], torch.Tensor) and isinstance(betas[1], torch.Tensor))):
            _raise("ValueError", "betas must be either both floats or both Tensors")
        _check_number("betas", betas[0])
        betas = tuple(betas)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        _check_single_tensor("Adam", foreach, fused, differentiable, capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(closure)

    def _update_group(self, group):
        params_with_grad = []
        grads = []
        exp_avgs = []
        exp_avg_sqs = []
        max_exp_avg_sqs = []
        state_steps = []
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            if p.grad is not None:
                params_with_grad.append(p)
                grads.append(p.grad)
                state = self.state[p]
                if len(state) == 0:
                    # PyTorch passes memory_format=torch.preserve_format, zeros_like's
                    # default; Kiln's torch has no preserve_format constant.
                    state["step"] = torch.tensor(0.0, dtype=_get_scalar_dtype())
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(p)
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
                if group["amsgrad"]:
                    max_exp_avg_sqs.append(state["max_exp_avg_sq"])
                state_steps.append(state["step"])
        _single_tensor_adam(params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, group["amsgrad"], beta1, beta2, group["lr"], group["weight_decay"], group["eps"], group["maximize"], group["decoupled_weight_decay"])


def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize, decoupled_weight_decay):
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]

        step_t += 1

        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)

        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

        # PyTorch's _get_value: the step as a Python number, so the bias
        # corrections are computed in double precision.
        step = step_t.item()
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5

        if amsgrad:
            # torch.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i]):
            # Kiln's bindings take no out=, and copy_ writes the same values.
            max_exp_avg_sqs[i].copy_(torch.maximum(max_exp_avg_sqs[i], exp_avg_sq))
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)

        param.addcdiv_(exp_avg, denom, value=-step_size)
)PY";

// The module PyTorch defines each class in: repr(cls) and type(opt).__module__.
std::string defining_module(std::string_view name) {
  if (name == "SGD") return "torch.optim.sgd";
  if (name == "Adam") return "torch.optim.adam";
  return "torch.optim.optimizer";
}

}  // namespace

// Compiles the source once per process (code objects are immutable and
// shared), runs it in a fresh namespace and fills torch.optim and
// torch.optim.optimizer. A failure is Kiln's bug; it is reported on the VM's
// error stream so that programs not using torch.optim still run.
void install_optim_prelude(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kOptimSource, "torch/optim/__init__.py");
  auto optim = make<Module>("torch.optim");
  auto optimizer = make<Module>("torch.optim.optimizer");
  vm.add_module(optim);
  vm.add_module(optimizer);
  Ref<Dict> globals = run_prelude(vm, code, "torch.optim", "torch.optim");
  if (!globals) return;
  globals->for_each([&](const Value& k, const Value& v) {
    const std::string& name = as_str(k);
    if (v.is(ObjKind::Class)) {
      Class* cls = v.as<Class>();
      if (cls->builtin >= 0 || cls->module != "torch.optim") return;  // imported, not defined here
      cls->module = defining_module(name);
      if (!name.starts_with("_")) optim->dict->set(k, v);
      if (name == "Optimizer") optimizer->dict->set(k, v);
    } else if (name == "required") {
      optimizer->dict->set(k, v);
    }
  });
}

}  // namespace kiln::py
