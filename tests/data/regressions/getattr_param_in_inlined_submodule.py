# A submodule inlined from a compiled parent reads its parameter through
# getattr(self, name) and indexes its input.
import torch
import torch.nn as nn


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.w0 = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return x[0] * getattr(self, "w0")


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()

    def forward(self, x):
        return self.sub(x)


m = torch.compile(Parent())
print(m(torch.ones(3, 2)).sum().item())
y = m(torch.ones(3, 2) * 2)
y.sum().backward()
print(y.sum().item(), m.sub.w0.grad)
