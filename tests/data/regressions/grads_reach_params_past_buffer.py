# A compiled region that reads a registered buffer between two Linear layers:
# every parameter receives a gradient of its own shape.
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.register_buffer("mask", torch.ones(4))

    def forward(self, x):
        return self.b(self.a(x) * self.mask)


torch.manual_seed(0)
m = M()
torch.compile(m)(torch.randn(2, 4)).sum().backward()
for n, p in m.named_parameters():
    print(n, None if p.grad is None else list(p.grad.shape), "%.6f" % (0.0 if p.grad is None else p.grad.sum().item()))
