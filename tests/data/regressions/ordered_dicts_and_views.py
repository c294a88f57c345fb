# What tutorials print about a model's state: state_dict() is an OrderedDict (its
# repr, its odict_keys view), its copy is one too, and dict views flow
# through a compiled forward (ModuleDict.items(), zip of keys and values, len of
# a view) with the same numbers and guards as lists did.
from collections import OrderedDict

import torch
import torch.nn as nn

torch.manual_seed(0)


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Linear(4, 4)})
        self.scales = {"a": 0.5, "b": 2.0}

    def forward(self, x):
        out = x
        for name, block in self.blocks.items():
            out = block(out) * self.scales[name]
        for key, scale in zip(self.scales.keys(), self.scales.values()):
            out = out + scale
        return out * len(self.blocks.keys())


model = Heads()
sd = model.state_dict()
print(type(sd).__name__, sd.keys())
small = nn.Linear(2, 1)
with torch.no_grad():
    small.weight.copy_(torch.tensor([[0.25, -0.5]]))
    small.bias.fill_(0.125)
print(small.state_dict())
print(OrderedDict(), OrderedDict(a=1), list(small.state_dict().values())[1])
small_sd = small.state_dict()
copied = small_sd.copy()
print(type(copied).__name__, copied.keys(), copied == small_sd)
print(sorted(sd.keys() - {"blocks.a.weight"}), sd.items().__class__.__name__)
opt = torch.optim.SGD(small.parameters(), lr=0.1)
print(type(opt.state_dict()).__name__, opt.state_dict().keys())

compiled = torch.compile(model)
x = torch.randn(3, 4)
eager = model(x)
out = compiled(x)
print(torch.allclose(out, eager, atol=1e-6), "%.5f" % out.sum().item())
out.sum().backward()
print("%.5f" % model.blocks["a"].weight.grad.abs().sum().item())
