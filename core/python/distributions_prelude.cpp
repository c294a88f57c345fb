// torch.distributions in Kiln's Python subset, after PyTorch 2.11: the
// Distribution base with its argument and sample validation (on by default,
// as PyTorch's __debug__), the constraints it checks, and Categorical,
// Bernoulli, Normal and Uniform. Sampling goes through torch.multinomial,
// torch.bernoulli, torch.normal and torch.rand exactly as PyTorch's classes
// call them, so a seeded program draws the same numbers. Compiled once per
// process and run on first import.
#include <string>
#include <utility>
#include <vector>

#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

extern const char* const kDistributionsTransformsSource;  // distributions_prelude_transforms.cpp

namespace {

const char* const kDistributionsSource = R"PY(# torch.distributions in Kiln's Python subset.
import math
import torch
import torch._kiln as _kiln
import torch.nn.functional as F


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---------------------------------------------------------------- constraints

class Constraint:
    is_discrete = False
    event_dim = 0

    def check(self, value):
        _raise("NotImplementedError", "Constraint.check")

    def __repr__(self):
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    def __init__(self, is_discrete=False, event_dim=0):
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def check(self, value):
        _raise("ValueError", "Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class _Real(Constraint):
    def check(self, value):
        return value == value


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return type(self).__name__[1:] + f"(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return type(self).__name__[1:] + f"(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return type(self).__name__[1:] + f"(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return type(self).__name__[1:] + f"(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return torch.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _IndependentConstraint(Constraint):
    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            _raise("ValueError", f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(tuple(result.shape[:result.dim() - self.reinterpreted_batch_ndims]) + (-1,))
        return result.all(-1)

    def __repr__(self):
        return f"{type(self).__name__[1:]}({repr(self.base_constraint)}, {self.reinterpreted_batch_ndims})"


dependent = _Dependent()
real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
real_vector = _IndependentConstraint(real, 1)


def integer_interval(lower_bound, upper_bound):
    return _IntegerInterval(lower_bound, upper_bound)


def greater_than(lower_bound):
    return _GreaterThan(lower_bound)


def less_than(upper_bound):
    return _LessThan(upper_bound)


def interval(lower_bound, upper_bound):
    return _Interval(lower_bound, upper_bound)


def independent(base_constraint, reinterpreted_batch_ndims):
    return _IndependentConstraint(base_constraint, reinterpreted_batch_ndims)


# ---------------------------------------------------------------- utils

class lazy_property:
    # Computed on first read (with grad enabled, as PyTorch's), then stored on
    # the instance, whose own attribute wins from then on.
    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def broadcast_all(*values):
    for v in values:
        if not isinstance(v, torch.Tensor) and not _is_number(v):
            _raise("ValueError", "Input arguments must all be instances of numbers.Number, torch.Tensor or objects implementing __torch_function__.")
    if all(isinstance(v, torch.Tensor) for v in values):
        return torch.broadcast_tensors(*values)
    dtype = torch.get_default_dtype()
    for v in values:
        if isinstance(v, torch.Tensor):
            dtype = v.dtype
            break
    return torch.broadcast_tensors(*[v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=dtype) for v in values])


def clamp_probs(probs):
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return torch.sigmoid(logits)
    return F.softmax(logits, dim=-1)


# ---------------------------------------------------------------- Distribution

class Distribution:
    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        if value not in [True, False]:
            _raise("ValueError", "")
        Distribution._validate_args = value

    def __init__(self, batch_shape=torch.Size(), event_shape=torch.Size(), validate_args=None):
        self._batch_shape = torch.Size(batch_shape)
        self._event_shape = torch.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    _raise("ValueError", f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) of distribution {repr(self)} to satisfy the constraint {repr(constraint)}, but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def mean(self):
        _raise("NotImplementedError", "")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=torch.Size()):
        _raise("NotImplementedError", "")

    def sample_n(self, n):
        return self.sample(torch.Size((n,)))

    def log_prob(self, value):
        _raise("NotImplementedError", "")

    def entropy(self):
        _raise("NotImplementedError", "")

    def perplexity(self):
        return torch.exp(self.entropy())

    def _extended_shape(self, sample_shape=torch.Size()):
        return torch.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, torch.Tensor):
            _raise("ValueError", "The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            _raise("ValueError", f"The right-most size of value must match event_shape: {value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = torch.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(tuple(actual_shape)), reversed(tuple(expected_shape))):
            if i != 1 and j != 1 and i != j:
                _raise("ValueError", f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs {expected_shape}.")
        support = self.support
        if not bool(support.check(value).all()):
            _raise("ValueError", f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be within the support ({repr(support)}) of the distribution {repr(self)}, but found invalid values:\n{value}")

    def __repr__(self):
        shown = []
        for p in self.arg_constraints:
            if p in self.__dict__:
                v = self.__dict__[p]
                shown.append(f"{p}: {v if v.numel() == 1 else v.size()}")
        return type(self).__name__ + "(" + ", ".join(shown) + ")"


class Categorical(Distribution):
    arg_constraints = {"probs": simplex, "logits": real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            _raise("ValueError", "Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                _raise("ValueError", "`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                _raise("ValueError", "`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.ndimension() > 1 else torch.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def support(self):
        return integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=torch.Size()):
        sample_shape = torch.Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = torch.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = torch.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = torch.finfo(self.logits.dtype).min
        logits = torch.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = torch.arange(self._num_events, dtype=torch.long)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Bernoulli(Distribution):
    arg_constraints = {"probs": unit_interval, "logits": real}
    support = boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            _raise("ValueError", "Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = _is_number(probs)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = _is_number(logits)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = torch.Size() if is_scalar else self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs)
        mode[self.probs == 0.5] = float("nan")
        return mode

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        with torch.no_grad():
            return torch.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = torch.arange(2, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Normal(Distribution):
    arg_constraints = {"loc": real, "scale": positive}
    support = real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if _is_number(loc) and _is_number(scale):
            batch_shape = torch.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        with torch.no_grad():
            return torch.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        eps = torch.empty(shape, dtype=self.loc.dtype).normal_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = math.log(self.scale) if _is_number(self.scale) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + torch.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(self.scale)


class Uniform(Distribution):
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": less_than(self.high), "high": greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        if _is_number(low) and _is_number(high):
            batch_shape = torch.Size()
        else:
            batch_shape = self.low.size()
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def support(self):
        return interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return float("nan") * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        rand = torch.rand(shape, dtype=self.low.dtype)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return torch.log(lb.mul(ub)) - torch.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def entropy(self):
        return torch.log(self.high - self.low)
)PY";

// The modules PyTorch defines each public name in.
const char* module_of(const std::string& name) {
  static const std::pair<const char*, const char*> kHomes[] = {
      {"Distribution", "distribution"},
      {"Categorical", "categorical"},
      {"Bernoulli", "bernoulli"},
      {"Normal", "normal"},
      {"Uniform", "uniform"},
      {"Independent", "independent"},
      {"TransformedDistribution", "transformed_distribution"},
      {"LogNormal", "log_normal"},
      {"MultivariateNormal", "multivariate_normal"},
      {"kl_divergence", "kl"},
      {"register_kl", "kl"},
      {"identity_transform", "transforms"},
      {"lazy_property", "utils"},
      {"broadcast_all", "utils"},
      {"clamp_probs", "utils"},
      {"probs_to_logits", "utils"},
      {"logits_to_probs", "utils"},
      {"_sum_rightmost", "utils"},
      {"_standard_normal", "utils"},
  };
  for (const auto& [n, home] : kHomes)
    if (name == n) return home;
  if (name.ends_with("Transform")) return "transforms";
  return "constraints";
}

// Submodules, after "torch.distributions."; the first two hold what the top
// module does not re-export by name.
const char* const kSubmodules[] = {"constraints", "utils", "distribution", "categorical", "bernoulli",
                                   "normal", "uniform", "independent", "transformed_distribution",
                                   "log_normal", "multivariate_normal", "kl", "transforms"};

void install_distributions(VM& vm) {
  static const std::string source = std::string(kDistributionsSource) + kDistributionsTransformsSource;
  static const Expected<CodePtr> code = compile_module(source, "torch/distributions/__init__.py");
  auto top = make<Module>("torch.distributions");
  vm.add_module(top);
  std::vector<Ref<Module>> subs;
  for (const char* sub : kSubmodules) {
    subs.push_back(make<Module>(std::string("torch.distributions.") + sub));
    vm.add_module(subs.back());
  }
  Ref<Dict> globals = run_prelude(vm, code, top->name, "torch.distributions");
  if (!globals) return;
  globals->for_each([&](const Value& k, const Value& v) {
    const std::string& name = as_str(k);
    if (name.starts_with("_") && name != "_Dependent" && name != "_DependentProperty" && name != "_InverseTransform" &&
        name != "_sum_rightmost" && name != "_standard_normal")
      return;
    const bool is_class = v.is(ObjKind::Class);
    if (is_class && v.as<Class>()->module != top->name) return;  // imported, not defined here
    const bool object = v.is(ObjKind::Instance);  // a constraint or identity_transform
    if (!is_class && !v.is(ObjKind::Function) && !object) return;
    const std::string home = std::string("torch.distributions.") + module_of(name);
    if (is_class) v.as<Class>()->module = home;
    for (const Ref<Module>& sub : subs)
      if (sub->name == home) sub->dict->set(k, v);
    if (home != "torch.distributions.constraints" && home != "torch.distributions.utils" && !name.starts_with("_"))
      top->dict->set(k, v);
  });
  for (const Ref<Module>& sub : subs)
    top->dict->set(str_value(sub->name.substr(std::string("torch.distributions.").size())), Value(sub));
}

}  // namespace

void install_distributions_prelude(VM& vm) {
  vm.add_lazy_module("torch.distributions", install_distributions);
  for (const char* sub : kSubmodules) vm.add_lazy_module(std::string("torch.distributions.") + sub, install_distributions);
}

}  // namespace kiln::py
