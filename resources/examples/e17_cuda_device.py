# The same program on a CUDA device when there is one, else on the CPU: tensors
# and a module moved with .to(device), compiled regions (default mode, and a
# half-precision one) whose inputs live on that device, a graph break between
# two regions, and eager work in between. Kiln runs regions with inputs on a
# CUDA device on the GPU; CUDA_VISIBLE_DEVICES= makes the CPU path run on a GPU
# machine, and the two print the same numbers (to 1e-4 relative; 1e-2 on the
# half-precision lines).
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = self.down(F.gelu(self.up(self.norm(x))))
        return x + h


def attention_scores(q, k):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores.softmax(-1)


def report(name, t):
    t = t.float()
    print(name, list(t.shape), round((t * t).sum().item(), 4), round(t.abs().max().item(), 4))


torch.manual_seed(0)
block = Block(64).to(device)
x = torch.randn(8, 32, 64).to(device)
compiled_block = torch.compile(block)
with torch.no_grad():
    y = compiled_block(x)
report("block", y)

scores = torch.compile(attention_scores)
q = torch.randn(2, 4, 16, 32).to(device)
k = torch.randn(2, 4, 16, 32).to(device)
report("scores", scores(q, k))
report("scores_half", scores(q.half(), k.half()))


@torch.compile
def normalize_then_print(v):
    v = (v - v.mean(-1, keepdim=True)) / (v.var(-1, keepdim=True) + 1e-5).sqrt()
    print("breaks the graph here")
    return torch.sigmoid(v) * 2 - 1


report("normalized", normalize_then_print(torch.linspace(-3, 3, 96).reshape(4, 24).to(device)))
eager_total = (y * y).mean() + scores(q, k).max()
print("eager", round(eager_total.item(), 4), y.is_cuda == torch.cuda.is_available())
