# Complex tensors as rotary position embeddings use them (Llama's
# precompute_freqs_cis and apply_rotary_emb), printing, arithmetic and the
# errors PyTorch raises. Compared with PyTorch 2.11's output (expected.txt).
import torch

torch.manual_seed(5)


def rotary_table(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    positions = torch.arange(end, device=freqs.device)
    angles = torch.outer(positions, freqs).float()
    return torch.polar(torch.ones_like(angles), angles)


def broadcastable(table, x):
    assert table.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == x.ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return table.view(*shape)


def rotate(q, k, table):
    q_ = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
    k_ = torch.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2))
    table = broadcastable(table, q_)
    q_out = torch.view_as_real(q_ * table).flatten(3)
    k_out = torch.view_as_real(k_ * table).flatten(3)
    return q_out.type_as(q), k_out.type_as(k)


print("== table")
table = rotary_table(6, 5)
print(table)
print(table.dtype, table.shape, table.ndim, table.is_complex(), torch.is_complex(table), torch.is_complex(torch.ones(1)))
print(table[1:3])
print(table[..., 0])
print(table.abs())
print(table.angle())

print("== rotate")
q = torch.randn(2, 4, 3, 6, requires_grad=True)
k = torch.randn(2, 4, 3, 6, requires_grad=True)
q_rot, k_rot = rotate(q, k, table[1:5])
print(q_rot.shape, q_rot.dtype)
print(q_rot[0, :, 0])
print(round(q_rot.sum().item(), 5), round(k_rot.pow(2).sum().item(), 4))
weights = torch.arange(6.0)
loss = (q_rot * k_rot).sum() + (q_rot * weights).sum()
loss.backward()
print(q.grad[1, 2])
print(k.grad[0, 0])

print("== half precision")
qh = torch.randn(1, 2, 1, 4).to(torch.bfloat16)
kh = torch.randn(1, 2, 1, 4).to(torch.bfloat16)
a, b = rotate(qh, kh, rotary_table(4, 2))
print(a.dtype, a)

print("== arithmetic")
z = torch.complex(torch.tensor([1.0, -2.0, 0.5]), torch.tensor([3.0, 0.25, -1.0]))
w = torch.view_as_complex(torch.tensor([[0.5, 2.0], [3.0, -0.25], [-1.5, 1.0]]))
print(z)
print(z + w, z - w)
print(z * w)
print(z / w)
print(z * 2, 2 * z, z + 1, 1 - z, z / 4)
print(z * torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0]) * z)
print(-z, z.conj(), z.conj().is_conj(), z.conj_physical())
print(z.exp())
print(z.real, z.imag)
print(z.sum(), z.mean())
print(torch.view_as_real(z))
print(torch.cat([z, w]), torch.stack([z, w], 1).shape)
print(z.to(torch.complex128) * w)
print(torch.view_as_real(z * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).dtype)

print("== shapes")
m = torch.view_as_complex(torch.arange(24.0).view(2, 3, 2, 2))
print(m.shape, m.size(1), m.dim(), m.numel(), len(m))
print(m.transpose(0, 1).shape, m.permute(2, 0, 1).shape, m.unsqueeze(-1).shape, m.flatten().shape)
print(m.reshape(3, 4)[2], m[1, 2, 1], m[:, -1].contiguous().view(-1).shape)
print(m.unsqueeze(0).squeeze(0).shape, m.expand(4, 2, 3, 2).shape, m.clone().detach().shape)

print("== view sharing")
storage = torch.zeros(2, 2)
view = torch.view_as_complex(storage)
storage[1, 0] = 7.0
print(view)
torch.view_as_real(view)[0, 1] = -3.0
print(storage)

print("== grad through polar")
magnitude = torch.tensor([1.0, 2.0, 0.5], requires_grad=True)
phase = torch.tensor([0.1, -0.7, 2.0], requires_grad=True)
p = torch.polar(magnitude, phase)
print(p)
(torch.view_as_real(p * z) * torch.tensor([1.0, -2.0])).sum().backward()
print(magnitude.grad, phase.grad)

print("== errors")
try:
    torch.view_as_complex(torch.ones(3, 3))
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.view_as_complex(torch.ones(3, 4)[:, ::2])
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.view_as_complex(torch.ones(3, 2, dtype=torch.bfloat16))
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.view_as_complex(torch.tensor(2.0))
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.view_as_real(torch.ones(3, 2))
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.view_as_real(z.conj())
except RuntimeError as e:
    print("RuntimeError:", e)

print("== factories and casts")
print(torch.zeros(2, 2, dtype=torch.complex64), torch.ones(3, dtype=torch.cfloat))
print(torch.ones(2, dtype=torch.complex128), torch.zeros((1, 2), dtype=torch.cdouble).shape)
print(torch.arange(3.0).to(torch.complex64), torch.tensor([1.5, -2.0]).to(dtype=torch.complex128))
print(torch.complex64, torch.complex128.is_complex, torch.complex64.itemsize, torch.complex64.to_real())
