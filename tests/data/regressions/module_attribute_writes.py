# A compiled module that writes to itself while it runs: the attention probabilities kept
# for later (self.attn = p), a dict cache entry, a list of past outputs and a call counter.
# After every call the module must hold what eager code leaves there, and the attention
# module's graph is reused (Dynamo applies such writes as side effects after the graph).
# Expected output written by Debian's torch 1.13 (torch.compile as the identity).
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.attn = None
        self.cache = {}

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        scores = q @ k.transpose(-2, -1) / 2.0
        p = scores.softmax(dim=-1)
        self.attn = p
        self.cache["k"] = k
        return p @ x


class Tracker(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0
        self.seen = []
        self.register_buffer("avg", torch.zeros(3))

    def forward(self, x):
        self.step += 1
        h = torch.tanh(x)
        self.seen.append(h.sum())
        self.avg = self.avg * 0.75 + h * 0.25
        return h * self.step


def fmt(t):
    return " ".join("%.5f" % v for v in t.flatten().tolist())


torch.manual_seed(0)
att = Attention(4)
with torch.no_grad():
    for i, p in enumerate(att.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1))
tr = Tracker()
catt = torch.compile(att)
ctr = torch.compile(tr)
for i in range(10):
    x = torch.linspace(-1.0, 1.0, 12).reshape(3, 4) * (i + 1) / 4
    y = catt(x)
    print(i, "y", fmt(y))
    print(i, "attn", fmt(att.attn), "k", fmt(att.cache["k"]))
    z = ctr(x[0, :3])
    print(i, "step", tr.step, "seen", len(tr.seen), fmt(torch.stack(tr.seen)), "avg", fmt(tr.avg), "z", fmt(z))
print(att.attn is not None, sorted(att.cache.keys()))
