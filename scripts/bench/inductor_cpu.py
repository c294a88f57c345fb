# PyTorch eager and Inductor (CPU) on the graphs of kiln-cli bench cpu, same sizes.
import json, os, statistics, sys, time
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
import torch
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 16
torch.set_num_threads(threads)
torch.manual_seed(0)
n = 8 << 20
def sin_cos(x): return torch.sin(x) + torch.cos(x)
def chain(x, y): return ((x * 2 + 1).relu() * y - 0.5).sigmoid() * x
def softmax(x):
    m = x.amax(-1, keepdim=True); e = (x - m).exp(); return e / e.sum(-1, keepdim=True)
def layer_norm(x, w, b):
    mean = x.mean(-1, keepdim=True); xc = x - mean; var = (xc * xc).mean(-1, keepdim=True)
    return xc * torch.rsqrt(var + 1e-5) * w + b
def mm_relu(a, b): return torch.relu(a @ b + 1)
cases = [("sin_cos", sin_cos, [torch.randn(n)]),
         ("pointwise_chain", chain, [torch.randn(n), torch.randn(n)]),
         ("softmax", softmax, [torch.randn(2048, 2048)]),
         ("layer_norm", layer_norm, [torch.randn(2048, 2048), torch.randn(2048), torch.randn(2048)]),
         ("mm_relu", mm_relu, [torch.randn(512, 512), torch.randn(512, 512)]),
         ("mm_relu_1024", mm_relu, [torch.randn(1024, 1024), torch.randn(1024, 1024)])]
def med(f, args, reps=21):
    for _ in range(3): f(*args)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(*args); ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)
rows = []
for name, f, args in cases:
    torch._dynamo.reset()
    eager = med(f, args)
    t0 = time.perf_counter(); cf = torch.compile(f); cf(*args); compile_s = time.perf_counter() - t0
    ind = med(cf, args)
    rows.append({"name": name, "threads": threads, "eager_ms": round(eager, 3), "inductor_ms": round(ind, 3), "compile_s": round(compile_s, 2)})
    print(json.dumps(rows[-1]), flush=True)
