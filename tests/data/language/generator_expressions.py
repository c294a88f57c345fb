import itertools

# A generator expression is a lazy generator, not a list.
g = (i * i for i in range(3))
print(type(g).__name__, type((i for i in [])).__name__)
print(next(g), next(g), list(g), list(g), next(g, "exhausted"))
print(next(i for i in range(5) if i > 2))
print(next(i for i in itertools.count() if i * i > 50))
print(next((c for c in "kiln" if c > "k"), None), next((c for c in "" if c), "none"))

# Laziness: nothing runs until the generator is resumed, one element at a time.
log = []
def noisy(i):
    log.append(i)
    return i >= 2
lazy = (noisy(i) for i in range(5))
print("made", log)
print(next(lazy), log)
print(any(noisy(i) for i in range(5)), log)
log.clear()
print(all(not noisy(i) for i in range(5)), log)
log.clear()
print(any(noisy(i) for i in range(2)), all(noisy(i) for i in []), log)

# The first iterable is evaluated at once, in the enclosing scope; the others lazily.
def source(name, n):
    print("iter", name)
    return range(n)
lazy = ((a, b) for a in source("outer", 2) for b in source("inner", 2))
print("before next")
print(next(lazy))
print(list(lazy))

# A non-iterable first iterable fails where the generator expression is made.
try:
    bad = (x for x in 5)
    print("not reached")
except TypeError as e:
    print("TypeError at creation:", e)
bad = (x for x in [1] for y in 5)
print("made with a bad inner iterable")
try:
    next(bad)
except TypeError as e:
    print("TypeError at next:", e)

# Errors inside end the generator.
def boom(x):
    if x == 2:
        raise ValueError("two")
    return x
gen = (boom(x) for x in range(4))
print(next(gen), next(gen))
try:
    next(gen)
except ValueError as e:
    print("ValueError:", e)
print(next(gen, "finished after error"))

# Consumers.
words = ["a", "bb", "ccc"]
print(sum(len(w) for w in words), max((len(w) for w in words), default=0), max((w for w in [] if w), default="empty"))
print(min(len(w) for w in words), sorted((w[::-1] for w in words), reverse=True))
print("-".join(w.upper() for w in words), tuple(x for x in range(3)), set(x % 2 for x in range(4)))
print(dict((w, len(w)) for w in words), list(enumerate(c for c in "xy")), list(zip((1, 2), (c for c in "ab"))))
print(sum(x for x in range(10) if x % 2 if x > 3), [y for y in (x * 2 for x in range(3))])
print(list((x, y) for x in range(3) for y in range(x)), str(list(x for x in "ab")))
print(list(map(str, (x + 1 for x in range(3)))), list(filter(None, (x % 3 for x in range(6)))))

# Nested generator expressions, and a generator expression over another.
nested = ((x * y for y in range(3)) for x in range(1, 3))
print([list(inner) for inner in nested])
evens = (x for x in range(10) if x % 2 == 0)
squares = (e * e for e in evens)
print(next(squares), list(squares))
print(sum(sum(x * y for y in range(3)) for x in range(3)))

# Closures: the enclosing function's variables are read when the element runs.
def make(scale):
    gen = (x * scale for x in range(3))
    scale = 10
    return gen
print(list(make(2)))
def counter():
    total = 0
    def add(n):
        nonlocal total
        total += n
        return total
    return list(add(i) for i in range(4)), total
print(counter())
def adders():
    return [f(1) for f in (lambda v, i=i: v + i for i in range(3))]
print(adders())

# The generator's variables are its own: they do not leak, nor overwrite.
x = "outer x"
print(list(x for x in range(2)), x)

# In a class body: the first iterable sees the class's names, the rest does not.
class Config:
    sizes = [1, 2, 3]
    doubled = tuple(s * 2 for s in sizes)
    total = sum(s for s in sizes)
    try:
        bad = list(s + len(sizes) for s in sizes)
    except NameError as e:
        error = str(e)
print(Config.doubled, Config.total, Config.error)

# A generator expression as the only argument, without its own parentheses.
print(sum(i for i in range(4)), tuple(str(i) for i in range(2)))

# A generator is an iterator: iter(g) is g, and it can be resumed by for.
g = (i for i in range(4))
print(iter(g) is g)
for v in g:
    if v == 1:
        break
print(list(g))
