# Slices and indices of arrays from 0-d torch tensors and NumPy integers (their __index__).
import numpy as np
import torch
a = np.arange(10)
i = torch.tensor(3)
print(a[i:i+2], a[i], a[np.int64(2):np.int64(5)], a[np.int64(4)])
b = np.arange(12).reshape(3, 4)
print(b[i - 2, i], b[:, np.int32(1):i])
print([1,2,3,4,5][i:i+1], "abcdef"[np.int64(1):i])
j = torch.tensor(1, dtype=torch.int32)
print(a[j:], a[::torch.tensor(3)], b[j:j + 1, :i], a[a[2]:a[5]])
try:
    a[torch.tensor([1, 2]):3]
except TypeError as e:
    print("TypeError", e)
try:
    a[torch.tensor(1.0):]
except TypeError as e:
    print("TypeError", e)
