# A graph break inside an inlined call undoes the call's side effects before
# it runs again eagerly: a class attribute, a list (append and +=), a dict and
# a nonlocal counter each change once per call, not twice.
import torch


class Stats:
    seen = 0


log = []
totals = [0]
counts = {"calls": 0}


def make_counter():
    n = 0

    def bump():
        nonlocal n
        n += 1
        return n

    def peek():
        return n

    return bump, peek


bump, peek = make_counter()


def helper(x):
    Stats.seen += 1
    log.append(len(log))
    alias = log
    alias += [100]
    totals[0] += 1
    counts["calls"] += 1
    k = bump()
    if x.sum() > 0:  # a graph break inside the inlined call
        x = x + k
    return x * 2


@torch.compile
def f(x):
    return helper(x * 3) + 1


for i in range(3):
    out = f(torch.ones(2))
    print(out.tolist(), Stats.seen, log, totals, counts, peek())
