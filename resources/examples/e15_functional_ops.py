# A tour of torch and F functions in one compiled function: activations, reductions, pointwise math, shape ops, matmuls, losses.
import math
import torch
import torch.nn.functional as F


def tour(x, y, labels):
    acts = [F.relu(x), F.gelu(x), F.silu(x), torch.sigmoid(x), torch.tanh(x),
            F.leaky_relu(x, 0.1), F.elu(x), F.softplus(x), F.hardtanh(x)]
    act_sum = torch.stack(acts).sum(0)
    reductions = torch.stack([x.sum(), x.mean(), x.var(), x.std(), x.amax(), x.amin(),
                              x.prod(), x.norm(), x.logsumexp(dim=1).sum(), x.max(), x.min()])
    pointwise = (torch.exp(-x.abs()) + torch.log1p(x.abs()) + torch.sqrt(x.abs() + 1)
                 + x.clamp(-0.5, 0.5) + torch.where(x > 0, x, y) + x.pow(2) * math.sqrt(2.0)
                 + torch.rsqrt(y.abs() + 1) + torch.sin(x) * torch.cos(y) + x.sign() + x.floor() + x.ceil())
    s = torch.cat([x, y], dim=1).reshape(-1, 4).transpose(0, 1).flatten()
    parts = torch.split(s, 8)
    mm = x @ y.T + torch.bmm(x.unsqueeze(0), y.T.unsqueeze(0)).squeeze(0) + torch.matmul(x, y.t())
    top = F.softmax(x, dim=-1).max(dim=-1)
    losses = [F.cross_entropy(x, labels), F.mse_loss(x, y), F.l1_loss(x, y),
              F.nll_loss(F.log_softmax(x, dim=1), labels)]
    norm = F.normalize(x, dim=1) + F.layer_norm(x, (4,))
    return [act_sum, reductions, pointwise, parts[1], mm, top.values, top.indices,
            torch.stack(losses), norm, x.cumsum(1), x.argmax(dim=1), torch.cat([parts[0], parts[2]])]


torch.manual_seed(14)
x, y = torch.randn(3, 4), torch.randn(3, 4)
labels = torch.tensor([1, 0, 3])
outs = torch.compile(tour)(x, y, labels)
names = ["act_sum", "reductions", "pointwise", "part", "mm", "top_values", "top_indices",
         "losses", "norm", "cumsum", "argmax", "cat"]
for name, t in zip(names, outs):
    print(name, t)
print(len(outs), [t.dtype for t in outs][-6:], outs[1].shape, outs[3].numel())
