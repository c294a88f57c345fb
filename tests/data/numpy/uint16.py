# uint16/uint32 arrays (nanoGPT and llama2.c keep token ids as uint16), kept in a
# wider signed tensor with NumPy's dtype. Expected output written by hand from
# NumPy 2's rules; each line says what it checks.
import numpy as np, torch
a = np.array([1, 2, 65535, 300], dtype=np.uint16)
# repr/str with dtype=uint16, dtype name, itemsize (2), nbytes, shape, len
print(a, repr(a), a.dtype, a.itemsize, a.nbytes, a.shape, len(a))
# indexing gives np.uint16 scalars; slices and fancy indexing keep uint16
print(repr(a[2]), a[2], type(a[2]).__name__, repr(a[1:3]), repr(a[[0, 2]]))
# arithmetic with Python ints keeps uint16 and wraps modulo 2**16 (NEP 50); / is float64
print(repr(a + 1), repr(a * 2), repr(a - 2), repr(a // 2))
# promotion: uint16 + int32 is int32, uint16 + uint8 is uint16; astype to int64 and float32
print(repr(a + np.int32(1)), repr(a + np.uint8(1)), repr(a.astype(np.int64)))
# sum of uint16 is a uint64 scalar; max/min keep uint16; mean is float64; comparisons give bool
print(repr(a.sum()), repr(a.max()), repr(a.min()), a.mean(), repr(a == 65535), repr(a > 2))
# torch.from_numpy after astype(int64), as nanoGPT's get_batch
print(torch.from_numpy(a[1:3].astype(np.int64)))
# scalars: repr, wraparound of scalar arithmetic, dtype names and sizes
print(repr(np.uint16(5)), np.uint16(65535) + np.uint16(1), repr(np.uint32(7)), np.dtype('uint16'), np.dtype(np.uint32).itemsize)
# copies, item assignment and in-place += wrap; reshape and .T keep the dtype
b = a.copy()
b[0] = 7
b += 65535
print(repr(b), repr(a.reshape(2, 2).T))
# unary minus and ~ wrap; tolist and item give Python ints
print(repr(-a), repr(~a), a.tolist(), a[3].item())
# zeros/arange with a uint dtype; astype wraps int64 values modulo 2**16
print(repr(np.zeros(3, dtype=np.uint16)), repr(np.arange(4, dtype=np.uint32)), repr(np.array([70000, 1]).astype(np.uint16)))
# uint32 products wrap modulo 2**32 (65535 * 70000 = 4587450000)
print(repr(a.astype(np.uint32) * 70000))
