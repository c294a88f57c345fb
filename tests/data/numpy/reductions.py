# Kiln's NumPy subset against NumPy: reductions, in NumPy's summation order (pairwise
# sums in 8192-element buffers, float32 accumulators): sums, means, std and var print all
# 17 digits, so each must be NumPy's bit for bit. Sorting, unique, cumulative sums.
# Expected output: /usr/bin/python3 reductions.py > reductions.txt (numpy 1.24.2, AVX2), but
# for the float32/float16 scalars of lines 21-22, which print as NumPy 2.3+ prints them.
# NumPy 2.5.2 on an AVX-512 machine gives some sums 1-2 units off in the 17th digit.
import numpy as np
np.random.seed(7)
x = np.random.randn(300, 70)
y = (x * 1000).astype(np.float32)
def show(*vals):
    print(" ".join(str(v) for v in vals))
show(x.sum(), x.mean(), x.std(), x.var(), x.max(), x.min(), x.argmax(), x.argmin(), x.prod())
show(y.sum(), y.mean(), y.std(), y.var(), y.max(), y.min())
print(x.sum(axis=0)[:5].tolist(), x.sum(axis=1)[:5].tolist(), x.T.sum(axis=0)[:3].tolist(), x[:, 5:40].sum())
print(y.sum(axis=0)[:5].tolist(), y.sum(axis=1)[:5].tolist(), y.mean(axis=1)[:3].tolist(), y.std(axis=0)[:3].tolist())
print(x.mean(axis=0)[:4].tolist(), x.std(axis=1, ddof=1)[:4].tolist(), x.var(axis=0, keepdims=True).shape)
big = np.random.rand(20000)
show(big.sum(), big.mean(), big.std(), np.sum(big[::3]), big.reshape(200, 100).sum(axis=1)[7])
ints = np.random.randint(0, 100, size=(50, 40))
show(ints.sum(), ints.mean(), ints.std(), ints.var(), ints.sum(axis=0)[:5], ints.max(axis=1)[:5], ints.prod(axis=0)[:3])
show(np.sum([0.1, 0.2, 0.3]), np.mean([1, 2, 3, 4]), np.sum(np.arange(10)), np.prod([1.5, 2.5, 3.5]), np.cumsum([0.1, 0.2, 0.3]))
show(np.max([3, 1, 2]), np.min([[3.5, 1.5], [0.5, 2.5]], axis=0), np.argmax([[1, 5], [7, 2]], axis=1), np.argmin([4, 2, 2, 9]))
show(np.any([0, 0, 1]), np.all([1, 1, 0]), np.any(np.zeros((2, 2)), axis=0), np.all(np.ones((2, 3)) > 0, axis=1))
show(np.sum(np.ones((2, 3, 4)), axis=(0, 2)), np.mean(np.arange(24).reshape(2, 3, 4), axis=(1, 2)), np.sum(x > 0))
show(np.cumsum(np.arange(6).reshape(2, 3), axis=1), np.cumsum(np.arange(6).reshape(2, 3)), np.median([3, 1, 4, 1, 5]), np.median([[1.0, 2.0], [3.0, 4.0]]))
show(np.sort(np.array([3, 1, 2])), np.sort(np.array([[3, 1], [0, 2]]), axis=0), np.argsort(np.array([0.3, 0.1, 0.2])), np.unique([3, 1, 3, 2, 1]))
u, idx, inv, cnt = np.unique(np.array([5, 3, 5, 1, 3, 3]), return_index=True, return_inverse=True, return_counts=True)
print(u, idx, inv, cnt)
print(np.max(np.array([1.0, np.nan, 3.0])), np.argmax(np.array([1.0, np.nan, 3.0])), np.sum(np.array([])), np.mean(np.ones((3, 4)), axis=0))
print(np.std(y.astype(np.float64)), np.var([1, 2, 3, 4], ddof=1), np.std(np.array([[1.0, 2.0], [3.0, 5.0]]), axis=0))
print(np.sum(np.array([1, 2], dtype=np.int32)).dtype, np.sum(np.array([True, True])), np.mean(np.array([1, 2], dtype=np.int32)).dtype, np.cumsum(np.array([True, True, False])))
# Products and cumulative sums are sequential in the array's own precision.
np.random.seed(3)
w = np.random.rand(200000) + 0.5
print(np.cumsum(w)[-1], np.prod(w[:1000]), np.cumprod(w[:3000])[-1], np.prod(w[:50].reshape(5, 10), axis=0)[:2])
w32 = (w * 10).astype(np.float32)
print(np.cumsum(w32)[-1], np.cumsum(w32.reshape(400, 500), axis=0)[-1, :2], np.prod(w32[:40]), np.cumprod(w32[:20])[-1])
h = (w[:20000] * 0.5).astype(np.float16)
print(np.sum(h), h.sum(axis=0), h[:10].cumsum(), np.mean(h), h.reshape(100, 200).sum(axis=1)[:3])
z = np.array([3.0, np.nan, 1.0, -np.inf, 2.0, np.nan])
print(np.sort(z), np.argsort(z), np.unique(z), np.max(z), np.argmin(z), np.median(z))
