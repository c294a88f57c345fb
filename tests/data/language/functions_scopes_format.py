# Closures, argument passing, scopes, classes and formatting model programs lean on.
def counter():
    n = 0
    def inc(k=1):
        nonlocal n
        n += k
        return n
    return inc
c = counter(); c(); print(c(5))
fs = [lambda i=i: i * 2 for i in range(3)]; print([f() for f in fs])
def f(a, *args, b=2, **kw): return a, args, b, sorted(kw.items())
print(f(1, 2, 3, b=4, z=5, y=6), f(*[1, 2], **{"b": 0}))
print({k: v for k, v in zip("abc", range(3)) if v}, sorted([(2, "b"), (1, "z"), (2, "a")], key=lambda t: (-t[0], t[1])))
print("%s=%r %5.2f %-4d| %x %%" % ("k", "v", 3.14159, 7, 255))
i = 0
while i < 3:
    i += 1
else:
    print("while else", i)
print(1 < 2 < 3, 1 < 3 < 2, None is None, [] is not None)
total = 0
def add(v):
    global total
    total += v
add(3); add(4); print(total)
class Base:
    kind = "base"
    def describe(self): return "I am " + self.kind
class Child(Base):
    kind = "child"
    def describe(self): return super().describe() + "!"
print(Child().describe(), Base.kind, Child.kind, isinstance(Child(), Base))
w = 10; x = 3.14159
print(f"{x:{w}.{2}f}|{'s':>{4}}|{x!r}")
print(*[1, 2, 3], sep=",", end=";\n")
print(list(enumerate(["a", "b"], start=5)), ",".join(str(v) for v in range(4)))
t = (1, 2, 3); a, *rest = t; print(a, rest, t[::-1], t.index(3))
print([[i * j for j in range(3)] for i in range(2)], {i % 2 for i in range(5)} == {0, 1})
print(sorted(["b", "A", "c"], key=str.lower), list(map(lambda p: p[0] + p[1], [(1, 2), (3, 4)])))
try:
    [x for x in [1, 0] if 1 / x]
except ZeroDivisionError as e:
    print("zde", e)
d = {}
d.setdefault("k", []).append(1); print(d, d.get("z", "none"), list(d))
print(str(None), str(True), repr("a'b"), repr('a"b'), "tab\there".expandtabs(4) if False else "")
print(int(True) + 1, 3 / 2, 3 // 2.0, 2 ** 10, 10 ** -2, 0.1 * 3, 1e-7, 123456789.0 * 10)
