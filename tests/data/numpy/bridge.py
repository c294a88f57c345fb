# Kiln's NumPy subset against PyTorch and NumPy: Tensor.numpy() and torch.from_numpy
# share memory, torch.tensor/as_tensor of arrays and NumPy scalars, tensors meeting arrays.
# Expected output: /usr/bin/python3 bridge.py > bridge.txt (torch 1.13, numpy 1.24.2;
# PyTorch 2.11 prints the same for these).
import torch
import numpy as np
t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
a = t.numpy()
print(a, a.dtype, type(a).__name__)
a[0, 0] = 100
print(t)
t[1, 1] = -5
print(a)
t.add_(1)
print(a[0])
b = np.array([[1.5, 2.5], [3.5, 4.5]])
u = torch.from_numpy(b)
print(u, u.dtype)
u[0, 0] = 0
print(b)
b[1, 1] = 9
print(u)
print(torch.tensor(b), torch.tensor(b).dtype, torch.as_tensor(b).dtype, torch.tensor(np.arange(3)), torch.tensor(np.array([1, 2], dtype=np.int32)).dtype)
c = torch.tensor(b)
c[0, 1] = 77
print(b[0, 1])
d = torch.as_tensor(b)
d[0, 1] = 66
print(b[0, 1])
print(torch.tensor(b, dtype=torch.float32), torch.as_tensor(b, dtype=torch.float32).dtype, torch.tensor(np.float64(1.5)), torch.tensor(np.float32(2.5)).dtype)
print(torch.tensor([np.float64(1), np.float64(2)]).dtype, torch.tensor([np.float32(1), 2.0]).dtype, torch.tensor(np.array([True, False])))
print(torch.ones(2) + np.ones(2), torch.ones(2) * np.float64(2.0), np.float64(2.0) * torch.ones(2), np.int64(3) + torch.ones(2), torch.zeros(np.int64(2)))
print(torch.randn(3).numpy().dtype, torch.ones(3, dtype=torch.int64).numpy(), torch.tensor([True]).numpy(), torch.tensor(3.5).numpy(), repr(torch.tensor(3.5).numpy()))
x = torch.ones(2, requires_grad=True)
try:
    x.numpy()
except RuntimeError as e:
    print("RuntimeError:", e)
print(x.detach().numpy(), (x * 2).detach().numpy())
print(torch.randn(2, 2)[np.int64(1)].shape, torch.arange(5)[np.array([0, 4])], torch.arange(4)[np.array([True, False, True, False])])
print(torch.from_numpy(np.arange(4).reshape(2, 2)).T, torch.from_numpy(np.zeros(3, dtype=np.float32)).dtype)
print(np.array(torch.tensor([1.5, 2.5])), np.asarray(torch.arange(3)), np.array([torch.tensor(1.0), torch.tensor(2.0)]))
try:
    torch.from_numpy([1, 2])
except TypeError as e:
    print("TypeError:", e)
l = [torch.tensor(0.5).item(), 1.5]
print(np.mean(l), np.sum(np.multiply(l, [2, 4])) / np.sum([2, 4]))
from torch.utils.data import Dataset, DataLoader
class Pairs(Dataset):
    def __len__(self):
        return 4
    def __getitem__(self, i):
        return np.arange(3, dtype=np.float32) + i, np.int64(i), np.float64(i) / 2
for xb, yb, zb in DataLoader(Pairs(), batch_size=2):
    print(xb, yb, zb)
print(torch.tensor([np.array([1., 2.]), np.array([3., 4.])]), torch.tensor([[np.float32(1)], [np.float32(2)]]), torch.as_tensor([np.int64(1), np.int64(2)]))
print(torch.ones(2) @ np.array([0.5, 2.0]), torch.ones(2) - np.array([0.5, 2.0]), torch.ones(2) ** np.array([1.0, 2.0]))
