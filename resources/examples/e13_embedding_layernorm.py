# A tiny attention block: Embedding, LayerNorm, GELU MLP, masked softmax attention (nn.Softmax, F.dropout in eval), residuals; a longer sequence.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyBlock(nn.Module):
    def __init__(self, vocab=20, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.softmax = nn.Softmax(dim=-1)

    def attend(self, h):
        b, t, d = h.shape
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t).tril() == 0
        scores = scores.masked_fill(mask, float("-inf"))
        out = F.dropout(self.softmax(scores), p=0.1, training=self.training) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, d))

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.attend(self.ln1(h))
        h = h + self.mlp(self.ln2(h))
        return h


torch.manual_seed(11)
block = TinyBlock()
block.eval()
tokens = torch.randint(0, 20, (2, 5))
longer_tokens = torch.cat([tokens, torch.randint(0, 20, (2, 2))], dim=1)
compiled = torch.compile(block)
with torch.no_grad():
    out = compiled(tokens)
    longer = compiled(longer_tokens)
print(tokens.tolist())
print(out.shape, round(out.mean().item(), 5), round(out.std().item(), 5))
print(out[0, -1])
logits = out @ block.embed.weight.T
print(logits.argmax(-1).tolist())
print(longer.shape, round(longer.abs().sum().item(), 3), torch.allclose(longer[:, :5], out, atol=1e-5))
