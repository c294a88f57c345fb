# A llama-style model (our own code with the constructs of public llama programs) trained
# for three steps through torch.compile: every backend prints what eager prints.
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return norm * self.weight


def rotary_tables(head_dim, seq_len, theta=10000.0):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    t = torch.arange(seq_len).float()
    freqs = torch.outer(t, inv)
    return torch.cos(freqs), torch.sin(freqs)


def apply_rotary(x, cos, sin):
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    out1 = x1 * cos - x2 * sin
    out2 = x1 * sin + x2 * cos
    return torch.stack([out1, out2], dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, seq_len):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        cos, sin = rotary_tables(self.head_dim, seq_len)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x):
        b, t, _ = x.shape
        self.cos = self.cos.to(x.device)
        self.sin = self.sin.to(x.device)
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim)
        k = self.wk(x).view(b, t, self.n_heads, self.head_dim)
        v = self.wv(x).view(b, t, self.n_heads, self.head_dim)
        cos = self.cos[:t].view(1, t, 1, -1)
        sin = self.sin[:t].view(1, t, 1, -1)
        q = apply_rotary(q, cos, sin).transpose(1, 2)
        k = apply_rotary(k, cos, sin).transpose(1, 2)
        v = v.transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Layer(nn.Module):
    def __init__(self, dim, n_heads, seq_len):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, n_heads, seq_len)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, 4 * dim)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab=13, dim=16, n_layers=2, n_heads=2, seq_len=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim, n_heads, seq_len) for _ in range(n_layers)])
        self.norm = RMSNorm(dim)
        self.out = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        h = self.tok(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.out(self.norm(h)).float()


torch.manual_seed(0)
model = Llama()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


@torch.compile
def train_step(tokens, targets):
    opt.zero_grad(set_to_none=True)
    logits = model(tokens)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    loss.backward()
    opt.step()
    return loss


for step in range(3):
    tokens = torch.randint(0, 13, (2, 8))
    targets = torch.roll(tokens, -1, dims=1)
    print("step %d loss %.6f" % (step, train_step(tokens, targets).item()))
print("out %.6f" % model.out.weight.sum().item())
print("norm %.6f" % model.layers[1].ffn_norm.weight.sum().item())
