# Calling conventions and program structure: defaults, keyword-only arguments, *args/**kwargs, assert, helper methods, a __main__ guard.
import torch
import torch.nn as nn
import torch.nn.functional as F


def combine(*tensors, weights=None, **opts):
    assert len(tensors) > 0, "need at least one tensor"
    if weights is None:
        weights = [1.0] * len(tensors)
    out = sum([w * t for w, t in zip(weights, tensors)])
    if opts.get("normalize", False):
        out = out / out.norm()
    return out * opts.get("scale", 1.0)


class Gate(nn.Module):
    def __init__(self, dim, hidden=None):
        super().__init__()
        hidden = hidden or 2 * dim
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def activation(self, h, kind="silu"):
        if kind == "silu":
            return F.silu(h)
        elif kind == "sigmoid":
            return torch.sigmoid(h) * h
        else:
            return h

    def forward(self, x, *, kind="silu", residual=True):
        y = self.down(self.activation(self.up(x), kind=kind))
        return x + y if residual else y


def main():
    torch.manual_seed(13)
    a, b, c = torch.randn(3), torch.randn(3), torch.randn(3)
    f = torch.compile(combine)
    print(f(a, b).tolist())
    print(f(a, b, c, weights=[0.5, 0.25, 0.25]))
    print(f(a, normalize=True, scale=2.0).norm().item())
    gate = Gate(3)
    g = torch.compile(gate)
    x = torch.stack([a, b, c])
    print(g(x))
    print(g(x, kind="sigmoid", residual=False).sum().item())
    print(g(x, kind="none").abs().max().item())
    n = 0
    for p in gate.parameters():
        n += p.numel()
    assert n == 3 * 6 + 6 + 6 * 3 + 3
    print("params ok", n)


if __name__ == "__main__":
    main()
