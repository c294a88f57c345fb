def count(n):
    i = 0
    while i < n:
        yield i
        i += 1
    return "done"

def pairs(xs):
    for a, b in zip(xs, xs[1:]):
        yield a, b

def chained():
    yield from count(2)
    yield from ["a", "b"]
    try:
        yield "in try"
    finally:
        print("gen finally")

print(list(count(4)), list(pairs([1, 2, 3])), list(chained()))
g = count(2)
print(next(g), next(g), next(g, "end"))
print(type(g).__name__, sum(x * x for x in count(5)))

class Sampler:
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        for i in range(self.n - 1, -1, -1):
            yield i
    def __len__(self):
        return self.n

def batches(sampler, size):
    batch = []
    for idx in sampler:
        batch.append(idx)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
print(list(batches(Sampler(7), 3)))

def failing():
    yield 1
    raise ValueError("inside generator")
try:
    for v in failing():
        print("got", v)
except ValueError as e:
    print("caught", e)

def gen_with_value():
    x = yield 1
    print("x is", x)
    yield 2
print(list(gen_with_value()))
it = iter(count(3))
for v in it:
    if v == 1:
        break
print("rest", list(it))
