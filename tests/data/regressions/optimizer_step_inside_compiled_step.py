# The compiled training step of PyTorch's troubleshooting guide: zero_grad,
# forward, backward and opt.step() in one compiled function, called twice.
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
    opt.step()


x = torch.ones(3, 3)
step(x)
print("%f" % mod.weight.sum().item())
step(x)
print("%f" % mod.weight.sum().item())
print("%f" % mod.bias.sum().item())
