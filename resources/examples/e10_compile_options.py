# torch.compile arguments that keep results the same: decorator with fullgraph=True, backend=, mode=, options=, disable=True, reset(), list_backends().
import torch
import torch._dynamo
import torch.nn.functional as F


@torch.compile(fullgraph=True)
def gelu_mlp(x, w1, w2):
    return F.gelu(x @ w1) @ w2


def cube_eager(x):
    return x ** 3 - x


def cube_aot(x):
    return x ** 3 - x


def cube_overhead(x):
    return x ** 3 - x


def cube_options(x):
    return x ** 3 - x


def cube_off(x):
    return x ** 3 - x


torch.manual_seed(8)
x, w1, w2 = torch.randn(4, 6), torch.randn(6, 8), torch.randn(8, 2)
print("fullgraph", gelu_mlp(x, w1, w2))
print("eager", torch.compile(cube_eager, backend="eager")(x).sum().item())
print("aot_eager", torch.compile(cube_aot, backend="aot_eager")(x).sum().item())
print("reduce-overhead", torch.compile(cube_overhead, mode="reduce-overhead")(x).sum().item())
print("options", torch.compile(cube_options, options={"epilogue_fusion": False})(x).sum().item())
print("disabled", torch.compile(cube_off, disable=True)(x).sum().item())
torch._dynamo.reset()
print("after reset", gelu_mlp(x, w1, w2).sum().item())
backends = torch._dynamo.list_backends()
print("inductor" in backends, "eager" in backends, "aot_eager" in backends)
print(backends)
