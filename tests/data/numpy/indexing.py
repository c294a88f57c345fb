# Kiln's NumPy subset against NumPy: shapes, basic/integer/boolean indexing and item
# assignment, views, iteration, making arrays, joining and splitting.
# Expected output: /usr/bin/python3 indexing.py > indexing.txt (numpy 1.24.2).
import numpy as np
a = np.arange(24).reshape(4, 6)
print(a[1], a[-1], a[1, 2], a[1][2], a[:, 0], a[1:3, ::2], a[::-1], a[:, ::-2], a[-2:, -3:], a[..., 1], a[None, 0].shape, a[:, None, 1].shape)
print(a[[0, 2]], a[[0, 2], [1, 3]], a[:, [5, 0]], a[a > 20], a[a % 5 == 0], a[np.array([True, False, True, False])], a[[-1]])
print(a[1:3][:, [0, 1]], a[[1, 1, 3]][:, 1:4:2], a[np.array([[0, 1], [2, 3]])].shape, a[2, [0, 5]], a[..., ::3])
b = a.astype(float)
b[0, 0] = 100
b[1] = -1
b[:, 5] = [7, 8, 9, 10]
b[b > 20] = 0
b[[2, 3], [0, 1]] = 55.5
b[-1, ::-1] = np.arange(6)
print(b)
c = np.zeros(5, dtype=np.int64)
c[1:4] = 2.7
c[[0, 4]] += 3
c[::2] *= 10
print(c)
v = a[1]
v[0] = 999
print(a[1], a.flatten()[:8], a.ravel()[6])
w = a.T
print(w.shape, w[0], a.reshape(-1, 4).shape, a.reshape(2, -1)[1, 11], np.reshape(a, (3, 8))[2])
for row in np.arange(6).reshape(3, 2):
    print(row, row.sum())
for x in np.array([1.5, 2.5]):
    print(x * 2)
print(len(a), a.shape, a.size, a.ndim, a.T.shape, a.transpose(1, 0).shape, np.transpose(np.zeros((2, 3, 4))).shape, np.zeros((2, 3, 4)).transpose(2, 0, 1).shape)
print(a.tolist()[0], np.array([[1.5]]).tolist(), a.copy()[0, 0], np.squeeze(np.zeros((1, 3, 1))).shape, np.expand_dims(np.zeros(3), 0).shape)
print(np.concatenate([a[:1], a[-1:]]), np.concatenate([[1, 2], [3.5]]), np.stack([np.arange(3), np.arange(3) * 2], axis=1), np.vstack([[1, 2], [3, 4]]), np.hstack([[1, 2], [3]]))
print(np.append(a[:2], [5, 6]), np.append(a[:1], a[-1:], axis=0), np.append([1.5], 2), np.append(np.zeros(2, dtype=np.float32), [1]).dtype)
print(*np.meshgrid(np.linspace(-1, 1, 3), np.array([10, 20])), np.meshgrid([1, 2], [3, 4, 5], indexing="ij")[1], [g.shape for g in np.meshgrid(np.arange(3), np.arange(2), sparse=True)])
print(np.zeros((2, 3)), np.ones(3, dtype=np.int32), np.full((2, 2), 7), np.full(3, 2.5), np.zeros_like(a[:2]), np.ones_like(np.array([1.5])), np.full_like(a[0], 4))
print(np.arange(5), np.arange(1, 10, 3), np.arange(0.0, 1.0, 0.1), np.arange(5, dtype=np.float32), np.arange(10, 0, -3), np.arange(0.5, 3), np.arange(3.0))
print(np.linspace(0, 1, 5), np.linspace(0, 10, 4, endpoint=False), np.linspace(2, 3, 1), np.linspace(0, 1, 3, dtype=np.float32), np.linspace(1, 100, 7))
print(np.eye(3), np.eye(2, 3, k=1, dtype=int), np.identity(2), np.tril(np.ones((3, 3))), np.triu(np.ones((3, 3)), k=1))
print(np.tile([1, 2], 3), np.tile(np.array([[1, 2]]), (2, 2)), np.repeat([1, 2], 2), np.repeat(np.array([[1, 2], [3, 4]]), 2, axis=0), np.flip(np.arange(4)))
print(np.nonzero(np.array([0, 3, 0, 4])), np.argwhere(np.array([[0, 1], [1, 0]])), np.count_nonzero(a > 10), np.where(np.array([1, 0, 2]))[0])
print(np.outer([1, 2], [3, 4, 5]), np.diag([1, 2]), np.diag(np.arange(9).reshape(3, 3)), np.diff([1, 4, 9, 16]), np.searchsorted([1, 2, 3, 4], 2.5))
print(np.array([[1, 2], [3, 4]]).T @ np.array([1, 1]), np.split(np.arange(6), 3), np.array_equal(np.arange(3), np.array([0.0, 1.0, 2.0])))
e = np.empty((2, 2))
e[:] = 1.5
print(e, np.empty(3, dtype=int).shape)
m = np.arange(10)
np.random.seed(0)
np.random.shuffle(m)
print(m, 3 in m, 11 in m)
t = np.arange(60).reshape(3, 4, 5)
print(t[1, :2, [2, 0]], t[0, :, [1]].shape, t[2, None, [0, 2]].shape, t[[0, 2], 1:3, 0], t[1, [True, False, True, False]])
print(np.sum(np.array(2.5), axis=0), np.any(np.zeros((0, 3))), np.median(np.array([], dtype=float)) if False else 0, np.diff(np.array([True, False, False])))
print(np.array([[True, False], [False, True]]) @ np.array([[True], [True]]), np.count_nonzero(np.eye(3)), np.median(np.array([3, 1, 2], dtype=np.uint8)))
try:
    t[5]
except IndexError as ex:
    print("IndexError", ex)
try:
    t[0] = np.ones(3)
except ValueError as ex:
    print("ValueError", ex)
# np.c_ / np.r_: columns and rows from arrays, scalars and slices
xs, ys = np.meshgrid(np.linspace(0.0, 1.0, 3), np.linspace(-1.0, 1.0, 2))
print(np.c_[xs.ravel(), ys.ravel()], np.c_[np.zeros((2, 2)), np.ones((2, 1))], np.c_[1:3])
print(np.r_[np.array([1, 2]), 3, 0:6:2], np.r_[np.arange(2.0), [7, 8]])
