# The mean of a float16 tensor of 640,000 elements, compiled: ATen sums and divides
# in float32 and rounds once; a float16 sum (or a float16 element count) overflows to inf.
import torch

torch.manual_seed(0)
x = (torch.rand(3, 213352) + 0.5).half()


def stats(t):
    return t.mean(), t.mean(dim=1), (t * 2).mean(dim=0, keepdim=True).float().sum(), t.abs().mean(dim=(0, 1))


for name, fn in [("eager", stats), ("compiled", torch.compile(stats))]:
    whole, rows, cols, both = fn(x)
    print(name, whole.dtype, "%.4f" % whole.item(), ["%.4f" % v for v in rows.tolist()], "%.1f" % cols.item(),
          "%.4f" % both.item())
