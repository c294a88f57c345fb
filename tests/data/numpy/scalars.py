# Kiln's NumPy subset against NumPy: NumPy scalars (reductions and arr[i] give them) as
# numbers: arithmetic, str, formatting, conversions, use as indexes and dict keys, json,
# math; dtype objects, finfo/iinfo. Expected output: /usr/bin/python3 scalars.py >
# scalars.txt (numpy 1.24.2; line 4's float32 2**24 prints as NumPy 2.3+ prints it, 1.6777216e+07). NumPy 2 differs from 1.24 in the repr of scalars
# (np.float64(0.5), np.True_) and in NEP 50's promotion of scalars (np.float32(0.1) * 3 is a
# float32): those are checked in tests/python/test_python_numpy.cpp, not here.
import numpy as np, math, json
a = np.array([1.5, 2.5, 3.25])
s = a[1]
print(s, type(s).__name__, s + 1, s * 2, 1 - s, s / 2, s ** 2, -s, abs(-s), float(s), int(s), round(s), round(a[2], 1))
print(isinstance(s, float), isinstance(s, np.floating), isinstance(s, np.generic), isinstance(a[0] > 1, np.bool_))
i = np.arange(5)[3]
print(i, type(i).__name__, i + 1, i * 2.5, i // 2, i % 2, [10, 20, 30, 40][i], list(range(i)), math.sqrt(i), i == 3)
f32 = np.float32(0.1)
print(f32, float(f32), np.float32(16777217.0), f32 * np.float32(3), type(f32 * np.float32(3)).__name__, f32 + np.float32(0.2))
print(np.float64(0.1) + np.float64(0.2), np.float64(1e16), np.float64(1e-5), np.float64(123456789.123), np.float32(1e-5), np.float32(3.4e38))
print(np.int64(7) // 2, np.int32(7) / 2, np.float64(2.0) ** 0.5, np.sqrt(2.0), np.exp(1.0), np.pi, np.e)
print(f"{s:.3f} {i:04d} {f32:.2e} {np.float64(1/3)}", "%.4f" % s, "%d" % i, "{:>8.2f}".format(s))
print(a.sum().item(), type(a.sum().item()).__name__, a[0].item(), np.int64(5).item(), type(np.int64(5).item()).__name__)
print(str(np.float64(np.nan)), str(np.float64(np.inf)), str(-np.float64(np.inf)), np.float32(np.nan), str(np.bool_(True)))
print(np.array(2.5) + 1, type(np.array(2.5) + 1).__name__, a.max() > 3, (a > 2).sum(), (a > 2).any(), bool(a[0] < a[1]))
print(str(sorted([np.float64(3.0), np.float64(1.0), 2.0])[0]), max(a), min(a), sum(a), sum([np.float64(0.1)] * 3))
print(a.mean() * 100, np.mean(a) / len(a), a.std() < 1, np.float64(5) == 5, np.int64(5) == 5.0, np.float32(0.5) == 0.5)
print(np.float64(7.0).is_integer(), np.float32(2.5).dtype, np.int32(3).dtype, np.int64(3).itemsize, np.float64(1).shape, np.bool_(0))
print(np.dtype('float32'), np.dtype(np.int64), np.dtype(float), repr(np.dtype('int32')), a.dtype == np.float64, a.dtype == 'float64', a.dtype.name, a.dtype.itemsize, a.dtype.kind)
print(np.float32(2.5).item(), np.array([1, 2], dtype='float32').dtype, np.zeros(2, dtype='i8').dtype, np.ones(3, int).dtype, np.ones(2, dtype=bool))
print(np.finfo(np.float32).eps, np.finfo(np.float64).eps, np.finfo(np.float32).max, np.iinfo(np.int32).max, np.iinfo(np.int64).min, np.finfo(np.float16).eps)
print(np.issubdtype(a.dtype, np.floating), np.issubdtype(np.int32, np.integer), np.issubdtype(np.float32, np.integer), np.isscalar(3.0), np.isscalar(a))
print(np.float64(3.7).__round__(), np.float64(-2.5).__round__(), round(np.float64(2.675), 2), np.float32(1) / np.float32(3))
print(np.float64, np.ndarray, type(np.zeros(2)), type(np.float32(1)))
d = {1: 'a', 2: 'b'}
print(d[np.int64(1)], d.get(np.arange(3)[2]))
print(json.dumps(np.float64(1.5)), json.dumps({'m': np.mean([1.0, 2.0])}))
print(math.isnan(np.float64('nan')), math.floor(np.float64(2.7)), math.exp(np.float32(1.0)), math.log(np.int64(8), 2))
print([1, 2, 3].index(np.int64(2)), np.int64(2) in [1, 2], "x" * np.int64(3), [0, 1, 2, 3, 4, 5][np.int64(2):np.int64(5)])
print(np.float64(2.5) > 2, 3 < np.float64(2.5), np.float32(1.5) < np.float64(2.0), max(np.float64(1), 2), min([np.float32(3), np.float32(1)]))
print(str(np.array([1.5])), f"{np.array([1, 2])}", "%s" % np.array([0.5]), repr([np.array([1.0])]))
x = np.float64(3.0)
x += 1
print(x, type(x).__name__, -np.int64(3), ~np.int64(0), abs(np.float32(-2.5)), np.float32(2) ** 2)
print(bool(np.float64(0.0)), bool(np.array([0])), not np.bool_(False), np.int64(5) / np.int64(2), divmod(7, 2))
print(sum(np.array([1, 2, 3])), sum(np.ones(3) * 0.1), [int(v) for v in np.array([1, 2])], [str(v) for v in np.arange(2.0)], len(list(zip(np.arange(2), "ab"))))
print([str(v) for v in sorted(np.array([3, 1, 2]))], len(np.zeros((4, 2))), np.zeros((4, 2)).shape[0] * 2, enumerate(np.arange(2)) is not None)
print(int(np.array([7])[0]), float(np.array(2.5)), int(np.float64(-2.7)), np.array(3) * 2, np.array([[1]])[0][0])
print(round(np.float64(2.567), 2), round(np.float32(1.5)), round(np.int64(7)), np.round(2.5), np.round(3.14159, 2))
