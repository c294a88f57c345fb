# torch.jit.trace, torch.fx.symbolic_trace and torch.jit.script as tutorials use them:
# a trace freezes a data-dependent branch; check_trace reruns the function (the RNG
# state afterwards shows it); FX records leaf modules and refuses a branch on a proxy;
# script checks argument types against annotations.
import sys
import traceback
from typing import List, Optional

import torch
import torch.nn as nn

torch.manual_seed(3)


def pick(a, b):
    if a.mean() > 0:
        return a * b + 1
    return a - b


x, y = torch.randn(4, 3), torch.randn(4, 3)
traced = torch.jit.trace(pick, (x, y))
print("frozen branch:", torch.equal(traced(x, y), pick(x, y)), torch.equal(traced(-x.abs(), y), pick(-x.abs(), y)))
print("after trace: %.6f" % torch.randn(1).item())


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 5)
        self.norm = nn.LayerNorm(5)
        self.drop = nn.Dropout(0.25)

    def forward(self, inp):
        h = torch.tanh(self.proj(inp))
        return self.norm(h + h.sum(-1, keepdim=True)) * 0.5


block = Block().eval()
tb = torch.jit.trace(block, x)
print(tb)
out = tb(y)
out[:, 0].sum().backward()
print("traced grad: %.6f %.6f" % (out[:, 0].sum().item(), block.proj.weight.grad.abs().sum().item()))
print("same as eager:", torch.allclose(tb(x), block(x)))

gm = torch.fx.symbolic_trace(block)
print([(n.op, n.name) for n in gm.graph.nodes])
print(gm.code.strip())
print("fx same:", torch.allclose(gm(y), block(y)))
try:
    torch.fx.symbolic_trace(pick)
except Exception as e:
    print("fx refused:", type(e).__name__, e)
spec = torch.fx.symbolic_trace(pick, concrete_args={"a": -x.abs()})
print("specialized:", torch.equal(spec(x, y), (-x.abs()) - y))


def scale(t, factor: float, dims: Optional[List[int]] = None):
    return t * factor if dims is None else t.sum(dims) * factor


scaled = torch.jit.script(scale)
print("script:", scaled(torch.ones(2), 3).tolist(), scaled(torch.ones(2, 2), 2.0, [0]).tolist())
for bad in [(torch.ones(2), "3"), (2.0, 3.0), (torch.ones(2), 1.0, [0.5])]:
    try:
        scaled(*bad)
    except RuntimeError:
        print(traceback.format_exception_only(sys.exc_info()[1])[0].split("\n")[0])
print("done: %.6f" % torch.randn(1).item())
