# Weight normalization as vocoders and older GAN/audio code use it: torch.nn.utils.weight_norm
# (weight_g / weight_v and a forward pre-hook; deprecated in 2.x with a FutureWarning on stderr)
# and torch.nn.utils.parametrizations.weight_norm (original0 = g, original1 = v), trained a few steps.
import torch
import torch.nn as nn
from torch.nn.utils import remove_weight_norm, weight_norm
from torch.nn.utils.parametrizations import weight_norm as weight_norm_p

torch.manual_seed(0)
conv = weight_norm(nn.Conv1d(2, 3, 3))
print([n for n, _ in conv.named_parameters()], tuple(conv.weight_g.shape))
print(" ".join("%.5f" % v for v in conv.weight_g.view(-1).tolist()), conv.weight.grad_fn.name())
x = torch.randn(4, 2, 8)
opt = torch.optim.SGD(conv.parameters(), lr=0.05)
for step in range(3):
    loss = conv(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("old api step", step, "%.6f" % loss.item(), "%.6f" % conv.weight_g.grad.abs().sum().item())
remove_weight_norm(conv)
print([n for n, _ in conv.named_parameters()], "%.5f" % conv(x).sum().item())
lin = weight_norm(nn.Linear(4, 2), dim=None)
print(tuple(lin.weight_g.shape), "%.5f" % lin(torch.ones(1, 4)).sum().item())
try:
    weight_norm(lin)
except RuntimeError as e:
    print("RuntimeError:", e)
layer = weight_norm_p(nn.Linear(5, 3))
print(type(layer).__name__, [n for n, _ in layer.named_parameters()])
print(layer)
g = layer.parametrizations.weight.original0
print(tuple(g.shape), " ".join("%.5f" % v for v in g.view(-1).tolist()))
opt = torch.optim.Adam(layer.parameters(), lr=0.01)
inp = torch.randn(6, 5)
for step in range(3):
    loss = (layer(inp) - 1).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("new api step", step, "%.6f" % loss.item())
print("norms follow g:", torch.allclose(layer.weight.norm(dim=1), layer.parametrizations.weight.original0.view(-1), atol=1e-5))
