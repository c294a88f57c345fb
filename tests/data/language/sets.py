decay = set()
no_decay = set()
names = ["w1", "b1", "ln.weight", "w2", "b2"]
for n in names:
    if n.startswith("b") or n.startswith("ln"):
        no_decay.add(n)
    else:
        decay.add(n)
params = {n: i for i, n in enumerate(names)}
inter = decay & no_decay
union = decay | no_decay
print(len(inter), len(union), sorted(union) == sorted(params.keys()))
print(sorted(params.keys() - union), sorted(decay), sorted(no_decay))
s = {3, 1, 2}
print(sorted(s), 2 in s, 5 in s, len(s), type(s).__name__, isinstance(s, set))
t = {x % 3 for x in range(10)}
print(sorted(t), set() == set(), {1, 2} == {2, 1}, {1} < {1, 2}, {1, 2} <= {1, 2}, frozenset([1]) == {1})
u = {1, 2}
u |= {3}
u -= {1}
print(sorted(u), sorted({*u, 9}), sorted({1, 2} ^ {2, 3}), sorted(set("abca")))
try:
    u.remove(42)
except KeyError as e:
    print("KeyError", e)
print(set(), {5}, frozenset(), frozenset({7}))
d = {}
print(type(d).__name__, {"a": 1, **{"b": 2}})
