# zero_grad(set_to_none=True), forward and backward inside one compiled
# function, called twice: the second call's gradient is a fresh one.
import torch
import torch.nn as nn

torch.manual_seed(0)
mod = nn.Linear(3, 3)
opt = torch.optim.SGD(mod.parameters(), lr=0.01)


@torch.compile
def step(x):
    opt.zero_grad(True)
    out = mod(x)
    out.sum().backward()


step(torch.ones(3, 3))
print("%f" % mod.weight.grad.sum().item())
step(torch.ones(3, 3))
print("%f" % mod.weight.grad.sum().item())
print("%f" % mod.bias.grad.sum().item())
