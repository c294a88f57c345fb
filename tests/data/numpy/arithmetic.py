# Kiln's NumPy subset against NumPy: operators and ufuncs across dtypes (type promotion,
# broadcasting, integer division and remainder, comparisons, in-place operators, casts).
# Expected output: /usr/bin/python3 arithmetic.py > arithmetic.txt (numpy 1.24.2); every
# promotion here is the same under NumPy 2's NEP 50.
import numpy as np
a = np.array([1, 2, 3])
f = np.array([0.5, 1.5, -2.5])
s = np.array([1.0, 2.0, 3.0], dtype=np.float32)
i32 = np.array([7, -8, 9], dtype=np.int32)
b = np.array([True, False, True])
u8 = np.array([200, 100, 5], dtype=np.uint8)
for x in (a, f, s, i32, b, u8):
    for y in (a, f, s, i32, b, u8):
        r = x + y
        print(r.dtype, r, (x * y).dtype, (x / (y + 1)).dtype)
for x in (a, f, s, i32, b, u8):
    print((x + 1).dtype, (x + 1.0).dtype, (x * True).dtype, (x > 1).dtype, x + 1, x * 2.5, x - 1 if x.dtype != np.bool_ else x & True)
print(a // 2, a % 2, -a // 2, -a % 2, a ** 2, 2 ** a, f // 1, f % 1, f ** 2, s ** 0.5)
print(a / 0.0 if False else a / 2, i32 // np.array([2, 3, -4], dtype=np.int32), i32 % np.array([2, 3, -4], dtype=np.int32))
print(np.array([-7.5, 7.5, -0.5]) % 2, np.array([-7.5, 7.5]) // 2, np.array([5.0, -5.0]) % -3)
print(a == 2, a != 2, a < 2, a <= 2, a > 2, a >= 2, f == 0.5, s > 1.5)
print(b & True, b | False, b ^ True, ~b, ~a, a & 2, a | 4, a ^ 1)
print(-f, +f, abs(f), abs(-a), -s)
print(a + [10, 20, 30], [1, 2, 3] * f, (1, 2, 3) - a)
m = np.arange(6).reshape(2, 3)
print(m + np.array([10, 20, 30]), m * np.array([[1], [2]]), m.T + m.T)
print(m @ m.T, np.dot(m, m.T), np.matmul(m.T, m), np.dot(a, a), np.dot(f, f))
print(np.array([1.5, 2.5]) @ np.array([[1.0, 2.0], [3.0, 4.0]]))
print(np.exp(f), np.log(np.array([1.0, 2.0, 10.0])), np.sqrt(a), np.sqrt(s), np.abs(i32), np.square(a), np.square(f))
print(np.exp(a).dtype, np.sqrt(i32).dtype, np.sqrt(b).dtype if False else '', np.log(s).dtype)
print(np.maximum(a, 2), np.minimum(f, 0), np.maximum(np.array([1.0, np.nan]), 0.5), np.clip(f, -1, 1), np.clip(a, 2, 2))
print(np.where(a > 1, a, -a), np.where(b, 1.5, 0), np.where(f > 0, f, 0))
print(np.round(np.array([0.5, 1.5, 2.5, -0.5, 2.675])), np.round(np.array([1.2345, 2.5555]), 2), np.floor(f), np.ceil(f))
print(np.isnan(np.array([1.0, np.nan])), np.isinf(np.array([np.inf, 1.0])), np.isfinite(np.array([np.inf, np.nan, 0.0])))
print(np.add(a, 1), np.subtract(a, f), np.multiply(a, f), np.divide(a, 4), np.multiply([1, 2], [3, 4]))
print(np.allclose(f, f + 1e-9), np.allclose(f, f + 1e-3), np.array_equal(a, [1, 2, 3]), np.array_equal(a, a[:2]))
print(np.sign(f), np.sign(a - 2), np.tanh(f), np.sin(f), np.arctan2(f, 1.0))
x = np.array([[1.0, 2.0], [3.0, 4.0]])
x += 1
x *= 2
x[0] -= 1
print(x)
y = np.arange(5)
y += 2
y //= 2
print(y)
z = np.zeros(3)
z += np.array([1, 2, 3])
print(z)
print(a.astype(np.float32) + 0.1, (a.astype(np.float32) + 0.1).dtype, a.astype(float), a.astype('int32').dtype)
print(f.astype(int), np.array([2.9, -2.9]).astype(np.int64), b.astype(int), a.astype(bool))
