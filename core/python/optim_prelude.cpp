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
    # foreach=True and fused=True run the single-tensor update: on CPU tensors
    # PyTorch 2.11's foreach and fused updates gave the same parameters to
    # 1e-6 relative in every case tests/python/test_training.cpp checks.
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

    def state_dict(self):
        # Parameters become their index across all groups, in group order.
        index = {}
        param_groups = []
        for group in self.param_groups:
            packed = {}
            for k, v in group.items():
                if k != "params":
                    packed[k] = v
            ids = []
            for p in group["params"]:
                if p not in index:
                    index[p] = len(index)
                ids.append(index[p])
            packed["params"] = ids
            param_groups.append(packed)
        packed_state = {}
        for k, v in self.state.items():
            packed_state[index[k] if isinstance(k, torch.Tensor) else k] = v
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        groups = self.param_groups
        saved_groups = state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            _raise("ValueError", "loaded state dict has a different number of parameter groups")
        for g, sg in zip(groups, saved_groups):
            if len(g["params"]) != len(sg["params"]):
                _raise("ValueError", "loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        id_map = {}
        for g, sg in zip(groups, saved_groups):
            for old_id, p in zip(sg["params"], g["params"]):
                id_map[old_id] = p
        # Cast to each parameter (the step counter keeps its dtype).
        state = _ParamState()
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _copy_state_value(param, v, k)
            else:
                state[k] = _copy_state_value(None, v, k)
        new_groups = []
        for g, sg in zip(groups, saved_groups):
            ng = {}
            for k, v in sg.items():
                ng[k] = v
            ng["params"] = g["params"]
            if "param_names" in g and "param_names" not in sg:
                ng["param_names"] = g["param_names"]
            new_groups.append(ng)
        self.state = state
        self.param_groups = new_groups

    def _run_step(self, closure):
        # PyTorch's _use_grad_for_differentiable: the update runs with grad
        # mode off (differentiable=False) and breaks a Dynamo graph first;
        # the closure runs with grad mode on.
        loss = None
        self._opt_called = True
        with torch.no_grad():
            torch._dynamo.graph_break()
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                self._update_group(group)
        return loss


def _copy_state_value(param, value, key):
    # As PyTorch 2.11: a tensor already of the parameter's dtype is taken as
    # it is (shared with the loaded dict), not copied.
    if isinstance(value, torch.Tensor):
        if param is None or key == "step":
            return value
        if value.is_floating_point():
            return value.to(dtype=param.dtype)
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out[k] = _copy_state_value(param, v, k)
        return out
    if isinstance(value, list):
        return [_copy_state_value(param, v, key) for v in value]
    return value


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


def _float_of(v):
    # A 0-dim tensor used as a Scalar (alpha=, min()) is read as a Python number.
    if isinstance(v, torch.Tensor):
        return v.item()
    return v


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *, maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable, fused=fused, decoupled_weight_decay=True)


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_number("lr", lr)
        if not 0.0 <= lr:
            _raise("ValueError", f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            _raise("ValueError", f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            _raise("ValueError", f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            _raise("ValueError", f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            _raise("ValueError", f"Invalid epsilon value: {eps}")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        _check_single_tensor("Adagrad", foreach, fused, differentiable, False)
        super().__init__(params, defaults)
        # Adagrad makes its state up front, not on the first step.
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = torch.tensor(0.0, dtype=_get_scalar_dtype())
                state["sum"] = torch.full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        return self._run_step(closure)

    def _update_group(self, group):
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            grad = p.grad if not group["maximize"] else -p.grad
            step_t = state["step"]
            step_t += 1
            step = step_t.item()
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
            state_sum = state["sum"]
            state_sum.addcmul_(grad, grad, value=1)
            std = state_sum.sqrt().add_(group["eps"])
            p.addcdiv_(grad, std, value=-clr)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_number("lr", lr)
        if not 0.0 <= lr:
            _raise("ValueError", f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            _raise("ValueError", f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            _raise("ValueError", f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            _raise("ValueError", f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            _raise("ValueError", f"Invalid alpha value: {alpha}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        _check_single_tensor("RMSprop", foreach, False, differentiable, capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(closure)

    def _update_group(self, group):
        alpha = group["alpha"]
        lr = group["lr"]
        momentum = group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                state["step"] = torch.tensor(0.0, dtype=_get_scalar_dtype())
                state["square_avg"] = torch.zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = torch.zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = torch.zeros_like(p)
            grad = p.grad if not group["maximize"] else -p.grad
            square_avg = state["square_avg"]
            step_t = state["step"]
            step_t += 1
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
            if group["centered"]:
                grad_avg = state["grad_avg"]
                grad_avg.lerp_(grad, 1 - alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(group["eps"])
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(grad, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(grad, avg, value=-lr)


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False, maximize=False, differentiable=False):
        _check_number("lr", lr)
        if not 0.0 <= lr:
            _raise("ValueError", f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            _raise("ValueError", f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            _raise("ValueError", f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            _raise("ValueError", f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        _check_single_tensor("Adadelta", foreach, False, differentiable, capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(closure)

    def _update_group(self, group):
        rho = group["rho"]
        eps = group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                state["step"] = torch.tensor(0.0, dtype=_get_scalar_dtype())
                state["square_avg"] = torch.zeros_like(p)
                state["acc_delta"] = torch.zeros_like(p)
            square_avg = state["square_avg"]
            acc_delta = state["acc_delta"]
            step_t = state["step"]
            step_t += 1
            grad = p.grad if not group["maximize"] else -p.grad
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_()
            delta.div_(std).mul_(grad)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-group["lr"])


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, line_search_fn=None):
        _check_number("lr", lr)
        if not 0.0 <= lr:
            _raise("ValueError", f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            _raise("ValueError", "LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        views = []
        for p in self._params:
            if p.grad is None:
                views.append(p.new_zeros(p.numel()))
            else:
                views.append(p.grad.view(-1))
        return torch.cat(views, 0)

    def _add_grad(self, step_size, update):
        offset = 0
        alpha = _float_of(step_size)
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=alpha)
            offset += numel

    def step(self, closure):
        with torch.no_grad():
            torch._dynamo.graph_break()
            self._opt_called = True
            return self._lbfgs_step(closure)

    def _closure(self, closure):
        with torch.enable_grad():
            return closure()

    def _lbfgs_step(self, closure):
        group = self.param_groups[0]
        lr = group["lr"]
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._closure(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        opt_cond = flat_grad.abs().max() <= tolerance_grad
        if opt_cond:
            return orig_loss

        d = state.get("d")
        t = state.get("t")
        old_dirs = state.get("old_dirs")
        old_stps = state.get("old_stps")
        ro = state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad = state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs = []
                old_stps = []
                ro = []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = flat_grad.neg()
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q.add_(old_dirs[i], alpha=-_float_of(al[i]))
                d = torch.mul(q, H_diag)
                r = d
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r.add_(old_stps[i], alpha=_float_of(al[i] - be_i))

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr

            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    _raise("RuntimeError", "only 'strong_wolfe' is supported")
                _raise("NotImplementedError", "torch.optim.LBFGS(line_search_fn='strong_wolfe') is not supported by Kiln")
            self._add_grad(t, d)
            if n_iter != max_iter:
                loss = float(self._closure(closure))
                flat_grad = self._gather_flat_grad()
                opt_cond = flat_grad.abs().max() <= tolerance_grad
                ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = d
        state["t"] = t
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = H_diag
        state["prev_flat_grad"] = prev_flat_grad
        state["prev_loss"] = prev_loss
        return orig_loss
)PY";

// The module PyTorch defines each class in: repr(cls) and type(opt).__module__.
std::string defining_module(std::string_view name) {
  if (name == "SGD") return "torch.optim.sgd";
  if (name == "Adam") return "torch.optim.adam";
  if (name == "AdamW") return "torch.optim.adamw";
  if (name == "Adagrad") return "torch.optim.adagrad";
  if (name == "RMSprop") return "torch.optim.rmsprop";
  if (name == "Adadelta") return "torch.optim.adadelta";
  if (name == "LBFGS") return "torch.optim.lbfgs";
  return "torch.optim.optimizer";
}

}  // namespace

// Compiles the source once per process (code objects are immutable and
// shared), runs it in a fresh namespace and fills torch.optim and
// torch.optim.optimizer. A failure is Kiln's bug; it is reported on the VM's
// error stream so that programs not using torch.optim still run.
void install_training_preludes(VM& vm);  // train_prelude.cpp
void install_distributions_prelude(VM& vm);  // distributions_prelude.cpp
void install_autograd_prelude(VM& vm);  // autograd_function.cpp

namespace {

void install_optim(VM& vm) {
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

}  // namespace

// torch.optim is made on first use (`import torch.optim`, `torch.optim.X`,
// `from torch.optim import X`), as the training-loop modules are, so that
// programs without an optimizer do not compile it.
void install_optim_prelude(VM& vm) {
  install_training_preludes(vm);
  install_distributions_prelude(vm);
  install_autograd_prelude(vm);
  vm.add_lazy_module("torch.optim", install_optim);
  vm.add_lazy_module("torch.optim.optimizer", install_optim);
}

}  // namespace kiln::py
