# Idioms of public training programs that once stopped Kiln or could have
# given other numbers than PyTorch: activation checkpointing around a
# BatchNorm (its recomputation in backward updates the running statistics a
# second time, which changes eval outputs), the RNG state saved and restored
# (FakeData's idiom), EmbeddingBag in its three modes with offsets, padding
# and per-sample weights, and NumPy-style keyword names.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm2d(4)
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.drop = nn.Dropout(0.25)

    def inner(self, x):
        return self.drop(self.conv(F.relu(self.norm(x))))

    def forward(self, x, checkpointed, reentrant):
        if checkpointed:
            return cp.checkpoint(self.inner, x, use_reentrant=reentrant)
        return self.inner(x)


def train(checkpointed, reentrant=True):
    torch.manual_seed(1)
    stem = nn.Conv2d(3, 4, 3, padding=1)
    block = Block()
    head = nn.Linear(4 * 8 * 8, 5)
    params = list(stem.parameters()) + list(block.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    x = torch.randn(6, 3, 8, 8)
    y = torch.randint(0, 5, (6,))
    for step in range(3):
        opt.zero_grad()
        out = head(block(stem(x), checkpointed, reentrant).flatten(1))
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        print("checkpointed %s reentrant %s step %d loss %.6f" % (checkpointed, reentrant, step, loss.item()))
    print("running_mean", " ".join("%.6f" % v for v in block.norm.running_mean.tolist()),
          "batches", block.norm.num_batches_tracked.item())
    block.eval()
    with torch.no_grad():
        print("eval sum %.6f" % head(block(stem(x), False, False).flatten(1)).sum().item())
    print("rng after training", torch.rand(2).tolist())


train(False)
train(True)
train(True, reentrant=False)

# The RNG state: saved, a draw, restored, the same draw; the cached normal sample travels with it.
torch.manual_seed(3)
torch.randn(3)
state = torch.get_rng_state()
print(state.dtype, state.shape, state[:16].tolist(), int(state.sum()))
a = torch.randn(5)
torch.set_rng_state(state)
print(torch.equal(a, torch.randn(5)))
g = torch.Generator().manual_seed(7)
saved = g.get_state()
first = torch.rand(3, generator=g)
g.set_state(saved)
print(torch.equal(first, torch.rand(3, generator=g)))

# EmbeddingBag: modes, offsets, include_last_offset, padding, per-sample weights, gradients.
torch.manual_seed(4)
for mode in ("sum", "mean", "max"):
    bag = nn.EmbeddingBag(12, 3, mode=mode)
    out = bag(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 11]), torch.tensor([0, 4, 4, 7]))
    print(bag, out)
    (out * torch.arange(12.).reshape(4, 3)).sum().backward()
    print(bag.weight.grad[[1, 2, 4, 9, 11]])
padded = nn.EmbeddingBag(12, 3, mode="mean", padding_idx=2, include_last_offset=True)
print(padded(torch.tensor([1, 2, 3, 2, 2, 5]), torch.tensor([0, 3, 5, 6])))
weighted = nn.EmbeddingBag(12, 3, mode="sum")
print(weighted(torch.tensor([[1, 2, 3], [4, 4, 5]]), per_sample_weights=torch.tensor([[0.5, 1.0, 2.0], [1.0, -1.0, 3.0]])))

# NumPy's keyword names for dim and keepdim, as PyTorch's argument parser takes them.
t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
print(torch.cumprod(t, axis=0), torch.sum(t, axis=1, keepdims=True), t.mean(axis=0))
print(nn.Linear(2, 2).share_memory().weight.shape, torch.backends.mps.is_available())
