# Dropout inside a compiled Sequential applied to an intermediate tensor: the
# Linear after it reads the dropped-out tensor, not the one before dropout.
import torch
import torch.nn as nn

torch.manual_seed(0)
seq = nn.Sequential(nn.Dropout(0.5), nn.Linear(4, 2))
x = torch.randn(3, 4)


def f(x):
    return seq(x * 1.0)


seq.eval()
print("no dropout %f" % f(x).sum().item())
seq.train()
torch.manual_seed(1)
print("eager %f" % f(x).sum().item())
torch.manual_seed(1)
print("compiled %f" % torch.compile(f)(x).sum().item())
