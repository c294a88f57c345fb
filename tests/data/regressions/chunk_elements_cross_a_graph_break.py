# Both elements of a chunk made before a graph break reach the region after it.
import torch


@torch.compile
def f(x):
    a, b = x.chunk(2)
    y = a * 2
    if y.sum() > 0:  # a graph break after the chunk
        return b + y
    return b - y


x = torch.arange(4.0) + 1
print(f(x).tolist())
print(f(-x).tolist())
