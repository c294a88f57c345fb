# Python control flow traced by Dynamo: for/while/break/continue/pass, enumerate/zip, dicts, list comprehensions, lambdas, chained comparisons.
import torch

ACTS = {"relu": torch.relu, "tanh": torch.tanh, "sig": torch.sigmoid}


def pipeline(x, names, weights, limit=3):
    outs = []
    for i, (name, w) in enumerate(zip(names, weights)):
        if i >= limit:
            break
        if name not in ACTS:
            continue
        outs.append(ACTS[name](x) * w)
    total = sum(outs[1:], outs[0])
    n = 0
    while n < 4:
        n += 1
        if n % 2 == 0:
            continue
        total = total + n
    square = lambda t: t * t
    stats = dict([("min", total.min()), ("max", total.max())])
    scale = 0.5 if 0 < len(outs) <= 2 else 0.25
    return square(total) * scale, stats, [o.shape[0] for o in outs]


torch.manual_seed(6)
x = torch.randn(5)
fn = torch.compile(pipeline)
y, stats, sizes = fn(x, ["relu", "gelu", "tanh", "sig"], [1.0, 2.0, 3.0, 4.0])
print(y)
print(sorted(stats.keys()), round(stats["max"].item() - stats["min"].item(), 4), sizes)
y2, stats2, sizes2 = fn(x, ("tanh", "sig"), (0.5, 0.5), limit=10)
print(y2, sizes2)
pairs = [(k, round(float(v), 3)) for k, v in sorted(stats2.items())]
print(pairs, any([s > 4 for s in sizes]), all([s == 5 for s in sizes]))
vals = x.tolist()
print([round(v, 2) for v in sorted(vals, reverse=True)], min(vals) < 0 < max(vals), len(vals))
count = 0
for v in vals:
    if v > 1.5:
        break
    if -0.5 < v < 0.5:
        continue
    elif v < -1.8:
        pass
    count += 1
print("count", count, "abs max", round(max([abs(v) for v in vals]), 3))
