# A gpt-style model (our own code with the constructs of public gpt programs) trained
# for three steps through torch.compile: every backend prints what eager prints.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    block_size = 8
    vocab_size = 11
    n_layer = 2
    n_head = 2
    n_embd = 8
    dropout = 0.1


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.n_head = cfg.n_head
        self.register_buffer("mask", torch.tril(torch.ones(cfg.block_size, cfg.block_size)).view(1, 1, cfg.block_size, cfg.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.drop(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.ModuleDict(dict(fc=nn.Linear(cfg.n_embd, 4 * cfg.n_embd), proj=nn.Linear(4 * cfg.n_embd, cfg.n_embd), drop=nn.Dropout(cfg.dropout)))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        m = self.mlp
        x = x + m.drop(m.proj(F.gelu(m.fc(self.ln2(x)))))
        return x


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


torch.manual_seed(1337)
model = GPT(Config())
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
cmodel = torch.compile(model)
for it in range(3):
    idx = torch.randint(0, 11, (2, 8))
    tgt = torch.randint(0, 11, (2, 8))
    logits, loss = cmodel(idx, tgt)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norms = [p.grad.norm() for p in model.parameters() if p.grad is not None]
    total = torch.stack(norms).norm()
    coef = torch.clamp(1.0 / (total + 1e-6), max=1.0)
    for p in model.parameters():
        if p.grad is not None:
            p.grad.mul_(coef)
    opt.step()
    print("iter %d loss %.6f" % (it, loss.item()))
model.eval()
with torch.no_grad():
    logits, _ = cmodel(torch.randint(0, 11, (1, 5)))
print("eval %.6f" % logits.sum().item())
print("w %.6f" % model.lm_head.weight.sum().item())
