# Indexing: ints, slices with steps, None, ..., index tensors, boolean masks (read and write), setitem, views.
import torch


def gather_parts(x, idx):
    a = x[0]
    b = x[:, 1:3]
    c = x[..., -1]
    d = x[None, 1, ::2]
    e = x[idx]
    f = x[:, idx]
    return [a.sum(), b.sum(), c.sum(), d.sum(), e.sum(), f.sum()]


def masked_update(x):
    y = x.clone()
    y[y < 0] = 0.0
    y[0, :] = y[0, :] * 10
    y[:, -1] += 1
    y[1:3, 0] = torch.tensor([7.0, 8.0])
    return y


def positives_mean(x):
    return x[x > 0].mean() * 2


torch.manual_seed(9)
x = torch.randn(4, 5)
idx = torch.tensor([3, 0, 2])
print([round(v.item(), 4) for v in torch.compile(gather_parts)(x, idx)])
print(torch.compile(masked_update)(x))
print(torch.compile(positives_mean)(x).item())
print(x[1:3, ::2])
print(x[x > 1.0])
print(x[:, None].shape, x[..., None].shape, x[None, ..., None].shape, x[0, 0].dim())
print(x[idx, idx].tolist())
print(x.T[0], x.t().shape, x[-1, -2].item())
print(x.view(20)[::7], x.reshape(2, 10).shape, x.flatten()[-3:])
print(x.unsqueeze(0).squeeze(0).shape, x.permute(1, 0).is_contiguous(), x.permute(1, 0).contiguous().is_contiguous())
print(x.narrow(1, 1, 2).shape, x.select(0, 2), x.expand(2, 4, 5).shape, x[0].repeat(2).shape)
