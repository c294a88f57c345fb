# Backward through functional dropout in plain eager code.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
lin = nn.Linear(4, 3)
x = torch.randn(2, 4)
F.dropout(lin(x), 0.2, True).sum().backward()
print("%f" % lin.weight.grad.sum().item())
print("%f" % lin.bias.grad.sum().item())
