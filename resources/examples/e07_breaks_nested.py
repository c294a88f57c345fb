# Graph breaks inside inlined calls: a helper that prints an .item(), a method calling .item(), a nested graph_break(), .tolist().
import torch
import torch._dynamo
import torch.nn as nn


def log_stats(t, tag):
    print(tag, "mean", round(t.mean().item(), 4))
    return t


def inner(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return y - 1


def outer(x):
    z = inner(x * 0.5)
    return z.sum(dim=0)


class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def gain(self, h):
        return 1.0 + h.abs().max().item()

    def forward(self, x):
        h = self.proj(x)
        h = log_stats(h, "proj")
        g = self.gain(h)
        return h / g


def to_list_sum(x):
    vals = (x * 10).round().tolist()
    total = 0
    for row in vals:
        total += sum(row)
    return torch.tensor(total) + x.sum()


torch.manual_seed(5)
x = torch.randn(3, 4)
print("outer", torch.compile(outer)(x))
scaler = Scaler()
print("scaler", torch.compile(scaler)(x).sum().item())
print("to_list_sum", torch.compile(to_list_sum)(x).item())
