// The training-loop parts of torch written in Kiln's Python subset, after
// PyTorch 2.11: torch.optim.lr_scheduler, torch.utils.data, torch.nn.utils'
// gradient clipping; torch.amp / torch.cuda.amp (the GradScalers: grad_scaler_prelude.cpp).
// Each is compiled once per process and run on first use (import or
// attribute access), not at VM start, so programs without them start as fast
// as before.
#include <string>

#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

Ref<Module> install_grad_scaler(VM& vm);  // grad_scaler_prelude.cpp
namespace {

const char* const kSchedulerSource = R"PY(# torch.optim.lr_scheduler in Kiln's Python subset, after PyTorch 2.11.
import math
import torch
import torch._kiln as _kiln
from torch.optim import Optimizer


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        _raise("TypeError", f"{type(optimizer).__name__} is not an Optimizer")


def _format_param(name, optimizer, param):
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            _raise("ValueError", f"{name} must have the same length as optimizer.param_groups. {name} has {len(param)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


def _update_param_group_val(group, key, value):
    if isinstance(group[key], torch.Tensor):
        group[key].fill_(value)
    else:
        group[key] = value


def _lrs(optimizer):
    out = []
    for group in optimizer.param_groups:
        lr = group["lr"]
        out.append(lr.clone() if isinstance(lr, torch.Tensor) else lr)
    return out


_EPOCH_DEPRECATION_WARNING = "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the closed form is used instead of the new chainable form, where available. Please open an issue if you are unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose."


def _bisect_right(a, x):
    i = 0
    while i < len(a) and a[i] <= x:
        i += 1
    return i


def _wrap_step(optimizer):
    # As PyTorch: the optimizer's step is wrapped once so that the first
    # scheduler step can tell whether the optimizer ever stepped, whatever
    # class defines step (Kiln's optimizers also set the flag themselves).
    if getattr(optimizer, "_kiln_step_wrapped", False):
        return
    opt_step = optimizer.step

    def wrapper(*args, **kwargs):
        optimizer._opt_called = True
        return opt_step(*args, **kwargs)

    optimizer.step = wrapper
    optimizer._kiln_step_wrapped = True


class LRScheduler:
    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial_lr = group["lr"]
                if isinstance(initial_lr, torch.Tensor):
                    initial_lr = initial_lr.clone()
                group.setdefault("initial_lr", initial_lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    _raise("KeyError", f"\"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with last_epoch >= 0.\\nThis typically happens when:\\n1. You're trying to resume training from a checkpoint but haven't properly loaded the optimizer state\\n2. You're using last_epoch >= 0 for a fresh training run (not recommended)\"")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _wrap_step(optimizer)
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def state_dict(self):
        out = {}
        for k, v in _kiln.instance_dict(self).items():
            if k != "optimizer":
                out[k] = v
        return out

    def load_state_dict(self, state_dict):
        d = _kiln.instance_dict(self)
        for k, v in state_dict.items():
            d[k] = v

    def get_last_lr(self):
        return self._last_lr

    def get_lr(self):
        _raise("NotImplementedError", "")

    def step(self, epoch=None):
        if self._step_count == 1:
            if not getattr(self.optimizer, "_opt_called", False):
                _kiln.warn("UserWarning", "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value of the learning rate schedule. See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")
        self._step_count += 1
        if epoch is not None:
            _kiln.warn("UserWarning", _EPOCH_DEPRECATION_WARNING)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        self._get_lr_called_within_step = True
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            if hasattr(self, "_get_closed_form_lr"):
                values = self._get_closed_form_lr()
            else:
                values = self.get_lr()
        self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _update_param_group_val(group, "lr", lr)
        self._last_lr = _lrs(self.optimizer)


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        # PyTorch keeps a Counter: a milestone given twice decays twice.
        counts = {}
        for m in milestones:
            counts[m] = counts.get(m, 0) + 1
        self.milestones = counts
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = []
        for m, c in self.milestones.items():
            milestones = milestones + [m] * c
        milestones = sorted(milestones)
        return [base_lr * self.gamma ** _bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch == 0:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2 for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2 for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)) * (group["lr"] - self.eta_min) + self.eta_min for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2 for base_lr in self.base_lrs]


# LambdaLR's and MultiplicativeLR's: one function per parameter group, and a
# state_dict that keeps no functions (PyTorch saves only callable objects' dicts).
def _lr_lambdas(optimizer, lr_lambda):
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * len(optimizer.param_groups)
    if len(lr_lambda) != len(optimizer.param_groups):
        _raise("ValueError", f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


def _state_without_lambdas(scheduler):
    out = {}
    for k, v in _kiln.instance_dict(scheduler).items():
        if k != "optimizer" and k != "lr_lambdas":
            out[k] = v
    out["lr_lambdas"] = [None] * len(scheduler.lr_lambdas)
    return out


class LambdaLR(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambdas = _lr_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        return _state_without_lambdas(self)

    def get_lr(self):
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambdas = _lr_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        return _state_without_lambdas(self)

    def get_lr(self):
        if not self._is_initial and self.last_epoch > 0:
            return [group["lr"] * lmbda(self.last_epoch) for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups)]
        return _lrs(self.optimizer)


class ChainedScheduler(LRScheduler):
    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            _raise("ValueError", "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")
        if optimizer is None:
            optimizer = schedulers[0].optimizer
        for idx, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                _raise("TypeError", f"ChainedScheduler at index {idx} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                _raise("ValueError", f"ChainedScheduler does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be specified when calling `step`, but got one at index {idx} in the given schedulers sequence.")
            if optimizer is not scheduler.optimizer:
                _raise("ValueError", f"ChainedScheduler expects all schedulers to belong to the same optimizer, but got scheduler {type(scheduler).__name__} at index {idx} has {scheduler.optimizer}, which is different from {type(optimizer).__name__}.")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _lrs(self._schedulers[-1].optimizer)

    def step(self):
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _lrs(self._schedulers[-1].optimizer)

    def state_dict(self):
        out = {}
        for k, v in _kiln.instance_dict(self).items():
            if k != "optimizer" and k != "_schedulers":
                out[k] = v
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out


class LinearLR(LRScheduler):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            _raise("ValueError", "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            _raise("ValueError", "Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        return [group["lr"] * (1.0 + (self.end_factor - self.start_factor) / (self.total_iters * self.start_factor + (self.last_epoch - 1) * (self.end_factor - self.start_factor))) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor) * min(self.total_iters, self.last_epoch) / self.total_iters) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            _raise("ValueError", "Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _lrs(self.optimizer)
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)) for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        decay_factor = ((1.0 - self.last_epoch / self.total_iters) / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay_factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            _raise("ValueError", f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            _raise("ValueError", f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            _raise("ValueError", f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for base_lr in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                _raise("ValueError", f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        values = self.get_lr()
        self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _update_param_group_val(group, "lr", lr)
        self._last_lr = _lrs(self.optimizer)


class SequentialLR(LRScheduler):
    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            _raise("ValueError", f"SequentialLR expects at least one scheduler, but got no scheduler.")
        for idx, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                _raise("TypeError", f"SequentialLR at index {idx} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                _raise("ValueError", f"SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be specified when calling `step`, but got one at index {idx} in the given schedulers sequence.")
            if optimizer is not scheduler.optimizer:
                _raise("ValueError", f"SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler {type(scheduler).__name__} at index {idx} has {scheduler.optimizer}, which is different from {type(optimizer).__name__}.")
        if len(milestones) != len(schedulers) - 1:
            _raise("ValueError", f"Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers {len(schedulers)} and the number of milestones to be equal to {len(milestones)}")
        _check_optimizer(optimizer)
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in self.optimizer.param_groups:
            _update_param_group_val(group, "lr", group["initial_lr"])
        for scheduler in self._schedulers:
            scheduler.last_epoch -= 1
        self._schedulers[0]._step_count = 0
        self._schedulers[0]._is_initial = True
        self._schedulers[0].step()
        self._schedulers[0]._is_initial = False
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        self.last_epoch += 1
        idx = _bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        out = {}
        for k, v in _kiln.instance_dict(self).items():
            if k != "optimizer" and k != "_schedulers":
                out[k] = v
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out


class OneCycleLR(LRScheduler):
    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                _raise("ValueError", f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                _raise("ValueError", f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                _raise("ValueError", f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            _raise("ValueError", "You must define either total_steps OR (epochs AND steps_per_epoch)")
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr", "end_lr": "max_lr", "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2, "start_lr": "max_lr", "end_lr": "initial_lr", "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr", "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr", "end_lr": "max_lr", "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr", "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            _raise("ValueError", f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            _raise("ValueError", f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", self.optimizer, max_lr)
        if last_epoch == -1:
            for idx, group in enumerate(self.optimizer.param_groups):
                group["initial_lr"] = max_lrs[idx] / div_factor
                group["max_lr"] = max_lrs[idx]
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if self.cycle_momentum:
            if "momentum" not in self.optimizer.defaults and "betas" not in self.optimizer.defaults:
                _raise("ValueError", "optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in self.optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_momentum,) + tuple(group["betas"][1:])
                    else:
                        group["momentum"] = m_momentum
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        if self._anneal_func_type == "cos":
            cos_out = math.cos(math.pi * pct) + 1
            return end + (start - end) / 2.0 * cos_out
        return (end - start) * pct + start

    def get_lr(self):
        lrs = []
        step_num = self.last_epoch
        if step_num > self.total_steps:
            _raise("ValueError", f"Tried to step {step_num} times. The specified number of total steps is {self.total_steps}")
        for group in self.optimizer.param_groups:
            start_step = 0.0
            computed_lr = None
            computed_momentum = None
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    computed_lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        computed_momentum = self._anneal_func(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(computed_lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (computed_momentum,) + tuple(group["betas"][1:])
                else:
                    group["momentum"] = computed_momentum
        return lrs


class ReduceLROnPlateau(LRScheduler):
    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            _raise("ValueError", "Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                _raise("ValueError", f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _lrs(self.optimizer)
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        current = float(metrics)
        if epoch is not None:
            _raise("NotImplementedError", "scheduler.step(metrics, epoch) (deprecated in PyTorch) is not supported by Kiln")
        epoch = self.last_epoch + 1
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _lrs(self.optimizer)

    def _reduce_lr(self, epoch):
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                _raise("RuntimeError", f"The number of param groups in the `optimizer` ({len(self.optimizer.param_groups)}) differs from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field to match the length of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, param_group in enumerate(self.optimizer.param_groups):
            old_lr = float(param_group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                _update_param_group_val(param_group, "lr", new_lr)

    def _is_better(self, a, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ["min", "max"]:
            _raise("ValueError", "mode " + mode + " is unknown!")
        if threshold_mode not in ["rel", "abs"]:
            _raise("ValueError", "threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
)PY";

const char* const kDataSource = R"PY(# torch.utils.data in Kiln's Python subset, after PyTorch 2.11: datasets,
# samplers, default_collate and a single-process DataLoader that draws from
# torch's global generator exactly as PyTorch does.
import math
import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _stop():
    _kiln.raise_error("StopIteration", "")


_END = object()


class _LazyIter:
    # A generator's laziness: `make` runs (and draws its random numbers) on
    # the first next(), not when the iterator is made.
    def __init__(self, make):
        self._make = make
        self._it = None

    def __iter__(self):
        return self

    def __next__(self):
        if self._it is None:
            self._it = iter(self._make())
        return next(self._it)


class Dataset:
    def __getitem__(self, index):
        _raise("NotImplementedError", "Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    def __iter__(self):
        _raise("NotImplementedError", "Subclasses of IterableDataset should implement __iter__.")


class TensorDataset(Dataset):
    def __init__(self, *tensors):
        for tensor in tensors:
            if tensors[0].size(0) != tensor.size(0):
                _raise("AssertionError", "Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple([tensor[index] for tensor in self.tensors])

    def __len__(self):
        return self.tensors[0].size(0)


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            _raise("AssertionError", "datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                _raise("AssertionError", "ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        s = 0
        for d in self.datasets:
            s += len(d)
            self.cumulative_sizes.append(s)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                _raise("ValueError", "absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = 0
        while dataset_idx < len(self.cumulative_sizes) and self.cumulative_sizes[dataset_idx] <= idx:
            dataset_idx += 1
        if dataset_idx == 0:
            sample_idx = idx
        else:
            sample_idx = idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


def _check_generator(generator):
    if generator is not None and not isinstance(generator, torch.Generator):
        _raise("TypeError", f"expected a torch.Generator, but got {type(generator).__name__}")


def _randperm(n, generator):
    return torch.randperm(n, generator=generator).tolist()


def _random_int64(generator):
    return torch.empty((), dtype=torch.int64).random_(generator=generator).item()


def random_split(dataset, lengths, generator=None):
    _check_generator(generator)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                _raise("ValueError", f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(int(math.floor(len(dataset) * frac)))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                _kiln.warn("UserWarning", f"Length of split at index {i} is 0. This might result in an empty dataset.")
    if sum(lengths) != len(dataset):
        _raise("ValueError", "Sum of input lengths does not equal the length of the input dataset!")
    indices = _randperm(sum(lengths), generator)
    out = []
    offset = 0
    for length in lengths:
        out.append(Subset(dataset, indices[offset:offset + length]))
        offset += length
    return out


class Sampler:
    def __init__(self, data_source=None):
        pass


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            _raise("TypeError", f"replacement should be a boolean value, but got replacement={self.replacement}")
        n = self._num()
        if not isinstance(n, int) or n <= 0:
            _raise("ValueError", f"num_samples should be a positive integer value, but got num_samples={n}")
        _check_generator(generator)
        self.num_samples = n

    def _num(self):
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        # Drawn lazily, 32 indices (or one permutation) at a time, as PyTorch's
        # generator does: num_samples may be far more than fits in memory.
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = torch.Generator()
            generator.manual_seed(_random_int64(None))
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from torch.randint(high=n, size=(32,), dtype=torch.int64, generator=generator).tolist()
            yield from torch.randint(high=n, size=(self.num_samples % 32,), dtype=torch.int64, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from torch.randperm(n, generator=generator).tolist()
            yield from torch.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self._num()


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        _check_generator(generator)
        self.indices = indices
        self.generator = generator

    def _draw(self):
        return [self.indices[i] for i in _randperm(len(self.indices), self.generator)]

    def __iter__(self):
        return _LazyIter(self._draw)

    def __len__(self):
        return len(self.indices)


class _BatchIter:
    def __init__(self, sampler, batch_size, drop_last):
        self._it = iter(sampler)
        self._batch_size = batch_size
        self._drop_last = drop_last

    def __iter__(self):
        return self

    def __next__(self):
        batch = []
        while len(batch) < self._batch_size:
            idx = next(self._it, _END)
            if idx is _END:
                break
            batch.append(idx)
        if len(batch) == 0 or (self._drop_last and len(batch) < self._batch_size):
            _stop()
        return batch


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            _raise("ValueError", f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            _raise("ValueError", f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        return _BatchIter(self.sampler, self.batch_size, self.drop_last)

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler):
    def __iter__(self):
        return _LazyIter(self._none)

    def _none(self):
        return _Forever()


class _Forever:
    def __iter__(self):
        return self

    def __next__(self):
        return None


def default_convert(data):
    if getattr(type(data), "__kiln_ndarray__", False):
        return torch.as_tensor(data)
    return data


def get_worker_info():
    # Called in the main process (Kiln loads data in one process, num_workers or not): no worker.
    return None


def default_collate(batch):
    elem = batch[0]
    if isinstance(elem, torch.Tensor):
        return torch.stack(batch, 0)
    # NumPy arrays become tensors sharing their memory, NumPy scalars one tensor
    # of their dtype (numpy_prelude*.cpp marks both kinds' classes).
    if getattr(type(elem), "__kiln_ndarray__", False):
        return default_collate([torch.as_tensor(b) for b in batch])
    if getattr(type(elem), "__kiln_number__", None) is not None:
        return torch.as_tensor(batch)
    if isinstance(elem, float):
        return torch.tensor(batch, dtype=torch.float64)
    if isinstance(elem, int):
        return torch.tensor(batch)
    if isinstance(elem, str):
        return batch
    if isinstance(elem, dict):
        out = {}
        for key in elem:
            out[key] = default_collate([d[key] for d in batch])
        return out
    if isinstance(elem, (tuple, list)):
        elem_size = len(elem)
        for e in batch:
            if len(e) != elem_size:
                _raise("RuntimeError", "each element in list of batch should be of equal size")
        return [default_collate([e[i] for e in batch]) for i in range(elem_size)]
    _raise("TypeError", f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {type(elem)}")


class _DataLoaderIter:
    def __init__(self, loader):
        self._loader = loader
        self._dataset = loader.dataset
        self._auto_collation = loader.batch_sampler is not None
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._iterable = isinstance(loader.dataset, IterableDataset)
        self._sampler_iter = iter(loader._index_sampler())
        # PyTorch draws the workers' base seed from the global generator for
        # every iterator, even with no workers.
        self._base_seed = _random_int64(loader.generator)
        self._dataset_iter = None
        self._ended = False

    def __iter__(self):
        return self

    def __next__(self):
        index = next(self._sampler_iter)
        if self._iterable:
            return self._next_iterable(index)
        if self._auto_collation:
            data = [self._dataset[idx] for idx in index]
        else:
            data = self._dataset[index]
        return self._collate_fn(data)

    def _next_iterable(self, index):
        if self._ended:
            _stop()
        if self._dataset_iter is None:
            self._dataset_iter = iter(self._dataset)
        if self._auto_collation:
            data = []
            for _ in index:
                item = next(self._dataset_iter, _END)
                if item is _END:
                    self._ended = True
                    break
                data.append(item)
            if len(data) == 0 or (self._drop_last and len(data) < len(index)):
                _stop()
            return self._collate_fn(data)
        item = next(self._dataset_iter, _END)
        if item is _END:
            self._ended = True
            _stop()
        return self._collate_fn(item)


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False, pin_memory_device="", in_order=True):
        if num_workers < 0:
            _raise("ValueError", "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            _raise("ValueError", "timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            _raise("ValueError", "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            _raise("ValueError", "persistent_workers option needs num_workers > 0")
        _check_generator(generator)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        if isinstance(dataset, IterableDataset):
            if shuffle not in [False, None]:
                _raise("ValueError", f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                _raise("ValueError", f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                _raise("ValueError", f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            _raise("ValueError", "sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                _raise("ValueError", "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                _raise("ValueError", "batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        if num_workers > 0:
            # Honest stand-in: the batches and their order are PyTorch's (the
            # sampler runs in the main process there too), but no worker
            # processes exist, so worker_init_fn and per-worker seeds do not.
            _kiln.warn("UserWarning", f"Kiln's DataLoader has no worker processes: num_workers={num_workers} loads in the main process (same batches and order; worker_init_fn is not called)")

    def _index_sampler(self):
        if self.batch_sampler is not None:
            return self.batch_sampler
        return self.sampler

    def __iter__(self):
        return _DataLoaderIter(self)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = (length + self.batch_size - 1) // self.batch_size
            return length
        return len(self._index_sampler())
)PY";

const char* const kUtilsSource = R"PY(# torch.nn.utils.clip_grad_norm_/clip_grad_value_,
# after PyTorch 2.11.
import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _params(parameters):
    if isinstance(parameters, torch.Tensor):
        return [parameters]
    return list(parameters)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    tensors = _params(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return torch.tensor(0.0)
    with torch.no_grad():
        # On CPU PyTorch's foreach norm is one vector_norm per tensor.
        norms = [torch.linalg.vector_norm(g, norm_type) for g in tensors]
        total_norm = torch.linalg.vector_norm(torch.stack(norms), norm_type)
    if error_if_nonfinite and (total_norm.isnan().item() or total_norm.isinf().item()):
        _raise("RuntimeError", f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    parameters = _params(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return None
    with torch.no_grad():
        # max_norm / t is Tensor.__rtruediv__: reciprocal, then multiply.
        clip_coef = (total_norm + 1e-6).reciprocal() * max_norm
        clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped)
    return None


def _norm_except_dim(v, p, dim):
    # ATen's norm_except_dim: the norm over every dimension but `dim` (-1: all).
    if dim == -1:
        return v.norm(p)
    if dim == 0:
        shape = [1] * v.dim()
        shape[0] = v.size(0)
        return v.contiguous().view(v.size(0), -1).norm(p, 1).view(shape)
    if dim == v.dim() - 1:
        shape = [1] * v.dim()
        shape[-1] = v.size(-1)
        return v.contiguous().view(-1, v.size(-1)).norm(p, 0).view(shape)
    return _norm_except_dim(v.transpose(0, dim), p, 0).transpose(0, dim)


def _weight_norm(v, g, dim):
    w = v * (g / _norm_except_dim(v, 2, dim))
    # PyTorch's CPU kernel for the first or last dim is one node of its own.
    if w.requires_grad and (dim == 0 or dim == v.dim() - 1 or dim == -1):
        w = _kiln.name_grad_fn(w, "WeightNormInterfaceBackward0")
    return w


def _norm_hook_key(module, kind, name):
    # The key of the forward pre-hook of class `kind` that normalizes `name`, or None.
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return k
    return None


class WeightNorm:
    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        import warnings
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of `torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
        if _norm_hook_key(module, WeightNorm, name) is not None:
            _raise("RuntimeError", f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", torch.nn.Parameter(_norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", torch.nn.Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, torch.nn.Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    key = _norm_hook_key(module, WeightNorm, name)
    if key is None:
        _raise("ValueError", f"weight_norm of '{name}' not found in {module}")
    module._forward_pre_hooks[key].remove(module)
    del module._forward_pre_hooks[key]
    return module


class SpectralNorm:
    # PyTorch's hook-based spectral normalization (version 1): weight_orig,
    # buffers weight_u / weight_v drawn at registration, one power iteration
    # per training forward.
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            _raise("ValueError", f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim])
        return weight_mat.reshape(weight_mat.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with torch.no_grad():
                for _ in range(self.n_power_iterations):
                    # In place, as PyTorch's out=: the buffers carry the iteration on.
                    v.copy_(torch.nn.functional.normalize(torch.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(torch.nn.functional.normalize(torch.mv(weight_mat, v), dim=0, eps=self.eps))
                u = u.clone()
                v = v.clone()
        sigma = torch.dot(u, torch.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with torch.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, torch.nn.Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        if _norm_hook_key(module, SpectralNorm, name) is not None:
            _raise("RuntimeError", f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            _raise("ValueError", f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with torch.no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = torch.nn.functional.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = torch.nn.functional.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(_SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(_SpectralNormLoadStateDictPreHook(fn))
        return fn


class _SpectralNormStateDictHook:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        if "spectral_norm" not in local_metadata:
            local_metadata["spectral_norm"] = {}
        key = self.fn.name + ".version"
        if key in local_metadata["spectral_norm"]:
            _raise("RuntimeError", f"Unexpected key in metadata['spectral_norm']: {key}")
        local_metadata["spectral_norm"][key] = self.fn._version


class _SpectralNormLoadStateDictPreHook:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        version = local_metadata.get("spectral_norm", {}).get(self.fn.name + ".version", None)
        if version is None or version < 1:
            weight_key = prefix + self.fn.name
            if version is None and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v")) and weight_key not in state_dict:
                return
            # A checkpoint of spectral_norm before version 1 (PyTorch 1.0): v is
            # solved from it with a pseudo-inverse, which Kiln does not do.
            _kiln.raise_unsupported("loading a spectral_norm state dict of version 0 (before PyTorch 1.1) is not supported by Kiln")


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    if dim is None:
        dim = 1 if isinstance(module, (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    key = _norm_hook_key(module, SpectralNorm, name)
    if key is None:
        _raise("ValueError", f"spectral_norm of '{name}' not found in {module}")
    module._forward_pre_hooks[key].remove(module)
    del module._forward_pre_hooks[key]
    for table, kind in (("_state_dict_hooks", _SpectralNormStateDictHook), ("_load_state_dict_pre_hooks", _SpectralNormLoadStateDictPreHook)):
        hooks = getattr(module, table)
        for k, hook in list(hooks.items()):
            if isinstance(hook, kind) and hook.fn.name == name:
                del hooks[k]
                break
    return module


def parameters_to_vector(parameters):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    return torch.cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    if not isinstance(vec, torch.Tensor):
        _kiln.raise_error("TypeError", f"expected torch.Tensor, but got: {torch.typename(vec)}")
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    parameters = _params(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_value_(parameters, clip_value, foreach=None):
    parameters = _params(parameters)
    clip_value = float(clip_value)
    with torch.no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value)
                p.grad.clamp_(max=clip_value)
    return None
)PY";

// torch.Generator, small and eager: torch.Generator is an attribute of torch.
const char* const kGeneratorSource = R"PY(import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


class Generator:
    # torch.Generator: a CPU mt19937 as PyTorch's, seeded like it, taken by
    # torch's random functions (randn(generator=...)) and torch.utils.data.
    def __init__(self, device="cpu"):
        if str(device) != "cpu":
            _raise("NotImplementedError", f"torch.Generator(device='{device}') is not supported by Kiln: only CPU generators")
        self._handle = _kiln.generator_new()
        self.device = torch.device("cpu")

    def manual_seed(self, seed):
        _kiln.generator_manual_seed(self._handle, int(seed))
        return self

    def initial_seed(self):
        return _kiln.generator_initial_seed(self._handle)

    def get_state(self):
        return _kiln.generator_get_state(self._handle)

    def set_state(self, new_state):
        _kiln.generator_set_state(self._handle, new_state)
        return self
)PY";

Ref<Module> ensure_module(VM& vm, const std::string& name) {
  if (Ref<Module> m = vm.module(name)) return m;
  auto m = make<Module>(name);
  vm.add_module(m);
  return m;
}

// Public classes and functions of a prelude's namespace go into `target`;
// each class's __module__ is `class_module(name)`.
template <class ModuleOf>
void export_names(const Ref<Dict>& globals, const Ref<Module>& target, ModuleOf class_module) {
  globals->for_each([&](const Value& k, const Value& v) {
    const std::string& name = as_str(k);
    if (name.starts_with("_")) return;
    if (v.is(ObjKind::Class)) {
      Class* cls = v.as<Class>();
      if (cls->builtin >= 0 || cls->module != target->name) return;  // imported, not defined here
      cls->module = class_module(name);
      target->dict->set(k, v);
    } else if (v.is(ObjKind::Function)) {
      target->dict->set(k, v);
    }
  });
}

void install_scheduler(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kSchedulerSource, "torch/optim/lr_scheduler.py");
  auto m = make<Module>("torch.optim.lr_scheduler");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.optim.lr_scheduler");
  if (!globals) return;
  export_names(globals, m, [](const std::string&) { return std::string("torch.optim.lr_scheduler"); });
  if (const Value* base = globals->find_str("LRScheduler")) m->dict->set(str_value("_LRScheduler"), *base);
}

void install_data(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kDataSource, "torch/utils/data/__init__.py");
  auto m = make<Module>("torch.utils.data");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.utils.data");
  if (!globals) return;
  export_names(globals, m, [](const std::string& name) {
    if (name == "DataLoader") return std::string("torch.utils.data.dataloader");
    if (name.ends_with("Sampler")) return std::string("torch.utils.data.sampler");
    return std::string("torch.utils.data.dataset");
  });
  // The submodules PyTorch defines them in, for `from torch.utils.data.sampler import ...`.
  // Made directly: looking them up would run their lazy installer (this one) again.
  Ref<Module> subs[] = {make<Module>("torch.utils.data.dataloader"), make<Module>("torch.utils.data.dataset"),
                        make<Module>("torch.utils.data.sampler")};
  for (const Ref<Module>& sub : subs) vm.add_module(sub);
  m->dict->for_each([&](const Value& k, const Value& v) {
    if (v.is(ObjKind::Class)) {
      for (const Ref<Module>& sub : subs)
        if (v.as<Class>()->module == sub->name) sub->dict->set(k, v);
    } else {
      subs[0]->dict->set(k, v);  // default_collate, default_convert, random_split
    }
  });
  if (const Value* v = m->dict->find_str("random_split")) subs[1]->dict->set(str_value("random_split"), *v);
}

// torch.nn.utils, torch.amp and torch.cuda.amp are installed together; the
// GradScalers come from torch.amp.grad_scaler (grad_scaler_prelude.cpp).
void install_utils(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kUtilsSource, "torch/nn/utils/clip_grad.py");
  auto nn_utils = make<Module>("torch.nn.utils");
  auto amp = make<Module>("torch.amp");
  auto cuda_amp = make<Module>("torch.cuda.amp");
  vm.add_module(nn_utils);
  vm.add_module(amp);
  vm.add_module(cuda_amp);
  auto clip_grad = make<Module>("torch.nn.utils.clip_grad");
  vm.add_module(clip_grad);
  if (Ref<Module> rnn = vm.module("torch.nn.utils.rnn")) nn_utils->dict->set(str_value("rnn"), Value(rnn));
  if (Ref<Module> mode = vm.module("torch.amp.autocast_mode")) {
    amp->dict->set(str_value("autocast_mode"), Value(mode));
    for (const char* name : {"autocast", "is_autocast_available"})
      if (const Value* v = mode->dict->find_str(name)) amp->dict->set(str_value(name), *v);
    if (const Value* v = mode->dict->find_str("_CudaAutocast")) cuda_amp->dict->set(str_value("autocast"), *v);
  }
  Ref<Dict> globals = run_prelude(vm, code, nn_utils->name, "torch.nn.utils");
  if (!globals) return;
  Ref<Module> torch = vm.module("torch");
  globals->for_each([&](const Value& k, const Value& v) {
    const std::string& name = as_str(k);
    if (v.is(ObjKind::Function) && !name.starts_with("_")) {
      nn_utils->dict->set(k, v);
      clip_grad->dict->set(k, v);
    }
    // The ops weight normalization is made of, under PyTorch's names.
    if (torch && name == "_weight_norm") torch->dict->set(k, v);
    if (torch && name == "_norm_except_dim") torch->dict->set(str_value("norm_except_dim"), v);
  });
  if (Ref<Module> scaler = install_grad_scaler(vm)) {
    amp->dict->set(str_value("grad_scaler"), Value(scaler));
    if (const Value* v = scaler->dict->find_str("GradScaler")) amp->dict->set(str_value("GradScaler"), *v);
    if (const Value* v = scaler->dict->find_str("_CudaGradScaler")) cuda_amp->dict->set(str_value("GradScaler"), *v);
  }
}

}  // namespace

void install_checkpoint_prelude(VM& vm);  // checkpoint_prelude.cpp
void install_func_prelude(VM& vm);        // func_prelude.cpp
void install_benchmark_prelude(VM& vm);   // benchmark_prelude.cpp
void install_prune_prelude(VM& vm);       // prune_prelude.cpp
void install_parametrize_prelude(VM& vm); // parametrize_prelude.cpp
void install_jit_prelude(VM& vm);         // jit_prelude.cpp
void install_fx_prelude(VM& vm);          // fx_prelude.cpp
void install_testing_prelude(VM& vm);     // testing_prelude.cpp

void install_amp_prelude(VM& vm);  // amp_prelude.cpp

void install_training_preludes(VM& vm) {
  install_amp_prelude(vm);
  static const Expected<CodePtr> generator_code = compile_module(kGeneratorSource, "torch/_C/Generator.py");
  if (Ref<Dict> globals = run_prelude(vm, generator_code, "torch._C", "torch.Generator"))
    if (const Value* gen = globals->find_str("Generator"); gen && gen->is(ObjKind::Class))
      if (Ref<Module> torch = vm.module("torch")) torch->dict->set(str_value("Generator"), *gen);
  ensure_module(vm, "torch.utils");
  vm.add_lazy_module("torch.optim.lr_scheduler", install_scheduler);
  for (const char* name : {"torch.utils.data", "torch.utils.data.dataloader", "torch.utils.data.dataset",
                           "torch.utils.data.sampler"})
    vm.add_lazy_module(name, install_data);
  vm.add_lazy_module("torch.nn.utils", install_utils);
  vm.add_lazy_module("torch.nn.utils.clip_grad", install_utils);
  vm.add_lazy_module("torch.amp", install_utils);
  vm.add_lazy_module("torch.cuda.amp", install_utils);
  install_checkpoint_prelude(vm);
  install_func_prelude(vm);
  install_benchmark_prelude(vm);
  install_prune_prelude(vm);
  install_parametrize_prelude(vm);
  install_jit_prelude(vm);
  install_fx_prelude(vm);
  install_testing_prelude(vm);
}

}  // namespace kiln::py
