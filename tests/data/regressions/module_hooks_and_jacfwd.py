# Module forward hooks as feature-extraction and pruning code uses them (program 83 stopped at
# module._forward_pre_hooks): a pre-hook replacing the input, a hook replacing the output, hooks
# reading activations, prepend=, with_kwargs=, handle.remove() and the handle as a context manager;
# and torch.func.jacfwd (program 81), which Kiln computes in reverse mode.
import torch
import torch.nn as nn
from torch.func import jacfwd, jacrev

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
features = {}


def keep(name):
    def hook(module, args, output):
        features[name] = output.detach()
    return hook


keep_handle = model[0].register_forward_hook(keep("linear0"))
scale_handle = model[1].register_forward_pre_hook(lambda module, args: (args[0] * 2,))
boost_handle = model[2].register_forward_hook(lambda module, args, output: output * 10)
x = torch.randn(5, 4)
y = model(x)
print("hooked %.5f features %.5f" % (y.sum().item(), features["linear0"].sum().item()))
print("tables", len(model[0]._forward_hooks), len(model[1]._forward_pre_hooks), len(model[2]._forward_pre_hooks))
y.pow(2).sum().backward()
print("grad through hooks %.5f" % model[0].weight.grad.sum().item())
scale_handle.remove()
boost_handle.remove()
print("removed %.5f" % model(x).sum().item())
order = []
model[0].register_forward_hook(lambda *a: order.append("last"))
model[0].register_forward_hook(lambda *a: order.append("first"), prepend=True)


def with_kwargs(module, args, kwargs):
    order.append("pre with kwargs " + str(sorted(kwargs)))
    return (args[0] + 1,), kwargs


model[0].register_forward_pre_hook(with_kwargs, with_kwargs=True)
out = model(x)
print(order, "%.5f" % out.sum().item())
with model[0].register_forward_hook(lambda m, a, o: o * 0) as handle:
    print("inside the with %.5f" % model[0](x).sum().item())
print("after the with %.5f" % model[0](x).sum().item())
f = lambda v: torch.stack([v[0] * v[1], v[1].sin(), v.sum() ** 2])
v = torch.tensor([0.5, -1.5, 2.0])
print("jacfwd", [["%.5f" % e for e in row] for row in jacfwd(f)(v).tolist()])
print("same as jacrev:", torch.allclose(jacfwd(f)(v), jacrev(f)(v)))
