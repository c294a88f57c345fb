# Kiln's NumPy subset against NumPy: numpy.random.default_rng / Generator over
# PCG64 seeded through SeedSequence, draw for draw (random, uniform, normal,
# standard_normal, exponential, standard_exponential, integers, choice, shuffle,
# permutation), including the 32-bit half PCG64 keeps between calls. Expected
# output: NumPy 2.5.2's (python3 generator.py on the device). /usr/bin/python3's
# numpy 1.24.2 prints the same but for one error text ("probabilities do not
# sum to 1"): the draws are unchanged from 1.24 to 2.5.
# Floats print with repr (all 17 digits) so the check is bit for bit.
import numpy as np


def show(x):
    if isinstance(x, np.ndarray):
        print(x.dtype, x.shape, [repr(float(v)) if x.dtype.kind == "f" else int(v) for v in x.reshape(-1).tolist()])
    else:
        print(type(x).__name__, repr(float(x)) if isinstance(x, float) else int(x))


# tanelp/tiny-diffusion's use
rng = np.random.default_rng(42)
show(rng.uniform(-0.5, 0.5, 3))
show(rng.integers(0, 1000, 5))
show(rng.normal(0, 1, (2, 3)))
show(rng.random())
show(rng.random(4))
show(rng.random((2, 2), dtype=np.float32))
show(rng.random(dtype=np.float32))
show(rng.standard_normal())
show(rng.standard_normal(300))
show(rng.normal())
show(rng.normal(5.0, 2.0))
show(rng.normal([0.0, 10.0, 20.0], [1.0, 0.5, 0.25]))
show(rng.normal(np.arange(3.0), 1.0, size=(2, 3)))
show(rng.uniform())
show(rng.uniform(2, 3, (2, 2)))
show(rng.uniform([0, 10], [1, 20]))
show(rng.exponential())
show(rng.exponential(2.0, 5))
show(rng.exponential([1.0, 3.0]))
show(rng.standard_exponential(400))
show(rng.standard_exponential(3, method="inv"))

# integers: 32-bit Lemire with the kept half, 64-bit Lemire, endpoint, int32
rng = np.random.default_rng(12345)
show(rng.integers(10))
show(rng.integers(5, 10))
show(rng.random())
show(rng.integers(0, 100, size=7))
show(rng.integers(-50, 50, (2, 3)))
show(rng.integers(0, 2**40, size=3))
show(rng.integers(-2**62, 2**62, size=3))
show(rng.integers(0, 2**32, size=3))
show(rng.integers(1, 6, size=10, endpoint=True))
show(rng.integers(0, 256, 5, dtype=np.int32))
show(rng.integers(-2**31, 2**31, 3, dtype=np.int32))
show(rng.integers(7, size=3, dtype=np.int32))
show(rng.integers(3, 4, size=2))
print(type(rng.integers(5, dtype=int)).__name__)

# choice, shuffle, permutation
rng = np.random.default_rng(2024)
show(rng.choice(5))
show(rng.choice(10, 4))
print(rng.choice([1.5, 2.5, 3.5]), rng.choice([7, 8, 9], size=5))
show(rng.choice(5, 3, replace=False))
show(rng.choice(10, size=(2, 2), replace=False))
show(rng.choice(10, 5, replace=False, shuffle=False))
show(rng.choice(20000, 5, replace=False))
show(rng.choice(20000, 1000, replace=False)[:8])
show(rng.choice(20000, 1000, replace=False, shuffle=False)[-8:])
print(rng.choice(4, p=[0.1, 0.2, 0.3, 0.4]))
show(rng.choice(4, 6, p=[0.1, 0.2, 0.3, 0.4]))
show(rng.choice(5, 3, replace=False, p=[0.1, 0.1, 0.2, 0.3, 0.3]))
show(rng.choice(np.arange(10, 15), 2))
print(rng.choice(np.arange(12).reshape(4, 3), 2))
x = np.arange(10)
rng.shuffle(x)
print(x)
l = [1, 2, 3, 4, 5, 6]
rng.shuffle(l)
print(l)
m = np.arange(12).reshape(4, 3)
rng.shuffle(m)
print(m)
print(rng.permutation(8), rng.permutation([10, 20, 30]), rng.permutation(np.arange(6).reshape(3, 2)))
show(rng.permutation(70000)[:6])

# seeds: big ints, sequences, SeedSequence, PCG64, spawn, state
for seed in [0, 1, 2**32 - 1, 2**32, 2**64 + 7, 2**200 + 3, [1, 2, 3], (5, 2**40), np.array([9, 8])]:
    show(np.random.default_rng(seed).random(2))
ss = np.random.SeedSequence(7)
print(ss)
show(np.random.Generator(np.random.PCG64(ss)).random(2))
show(np.random.default_rng(np.random.PCG64(7)).integers(100, size=4))
g = np.random.default_rng(3)
print(g.default_rng if False else np.random.default_rng(g) is g, str(g))
kids = [np.random.default_rng(s) for s in np.random.SeedSequence(3).spawn(2)]  # Generator.spawn is 1.25+
show(kids[0].random(2))
show(kids[1].random(2))
print(np.random.SeedSequence(7, spawn_key=(1, 2)))
show(np.random.default_rng(np.random.SeedSequence(7, spawn_key=(1, 2))).random(2))
show(np.random.default_rng(np.random.SeedSequence(7, pool_size=8)).random(2))
g = np.random.default_rng(99)
g.integers(10)
st = g.bit_generator.state
print(st)
a = g.random(3)
g.bit_generator.state = st
b = g.random(3)
print((a == b).all())
try:
    np.random.default_rng(-1)
except ValueError as e:
    print("ValueError", e)
try:
    np.random.default_rng(1.5)
except TypeError as e:
    print("TypeError", e)
for bad in [lambda r: r.integers(5, 5), lambda r: r.integers(0), lambda r: r.integers(5, 4, endpoint=True),
            lambda r: r.integers(0, 2**63 + 1), lambda r: r.integers(0, 2**31 + 1, dtype=np.int32),
            lambda r: r.normal(0, -1), lambda r: r.uniform(1, 0), lambda r: r.exponential(-1.0),
            lambda r: r.choice(3, 4, replace=False), lambda r: r.choice(3, p=[0.5, 0.5, 0.5]),
            lambda r: r.choice(0), lambda r: r.random(dtype=np.int64)]:
    try:
        bad(np.random.default_rng(0))
    except (ValueError, TypeError) as e:
        print(type(e).__name__, e)
