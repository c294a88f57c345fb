# torch.autograd.grad (pruned to the inputs asked for, no .grad touched), backward(inputs=),
# torch.func's grad / grad_and_value / vmap / vjp / jacrev / functional_call / stack_module_state
# as per-sample-gradient and ensembling programs use them, vmap's randomness="error", and
# torch.utils.benchmark.Timer running its statement as often as PyTorch does (warm-up included).
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, grad_and_value, jacrev, stack_module_state, vjp, vmap
from torch.utils.benchmark import Timer


def show(name, t):
    if t is None:
        print(name, None)
    else:
        print(name, tuple(t.shape), " ".join("%.5f" % v for v in t.flatten()[:6].tolist()))


torch.manual_seed(0)
x = torch.randn(3, 4, requires_grad=True)
w = torch.randn(4, 2, requires_grad=True)
b = torch.randn(2, requires_grad=True)
h = x @ w
y = (h.tanh() + b).pow(2).sum()
gx, gw = torch.autograd.grad(y, [x, w], retain_graph=True)
show("gx", gx)
show("gw", gw)
print("grads untouched:", x.grad, w.grad, b.grad)
(gh,) = torch.autograd.grad(y, h, retain_graph=True)
show("gh", gh)
z = torch.randn(2, requires_grad=True)
try:
    torch.autograd.grad(y, [z], retain_graph=True)
except RuntimeError as e:
    print("unused:", e)
gz, gb = torch.autograd.grad(y, [z, b], allow_unused=True, retain_graph=True)
print("allow_unused:", gz)
show("gb", gb)
gz, gb = torch.autograd.grad(y, [z, b], materialize_grads=True, retain_graph=True)
show("materialized", gz)
show("grad_outputs", torch.autograd.grad((x * 2).sum(0), x, grad_outputs=torch.arange(4.0))[0])
y.backward()
show("x.grad after backward", x.grad)
try:
    torch.autograd.grad(y, [x])
except RuntimeError as e:
    print("freed:", str(e)[:70])
q = torch.randn(5, requires_grad=True)
r = torch.randn(5, requires_grad=True)
torch.autograd.backward((q * r).sum(), inputs=[q])
show("backward(inputs=[q])", q.grad)
print("r.grad", r.grad)
try:
    torch.autograd.grad((q.detach() * 2).sum(), [q])
except RuntimeError as e:
    print("no grad_fn:", e)
show("float64 output, float32 input", torch.autograd.grad((q.double() * 3).sum(), q)[0])


@torch.compile
def step(p, data):
    loss = ((data @ p) ** 2).mean()
    (g,) = torch.autograd.grad(loss, p)
    return p - 0.1 * g


p = torch.randn(4, 1, requires_grad=True)
show("compiled step", step(p, torch.randn(8, 4)))

model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
data = torch.randn(5, 6)
targets = torch.tensor([0, 2, 1, 1, 0])
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_of(params, sample, target):
    out = functional_call(model, params, (sample.unsqueeze(0),))
    return F.cross_entropy(out, target.unsqueeze(0))


per_sample = vmap(grad(loss_of), in_dims=(None, 0, 0))(params, data, targets)
for k, v in per_sample.items():
    show("per-sample " + k, v)
manual = []
for i in range(5):
    model.zero_grad()
    F.cross_entropy(model(data[i:i + 1]), targets[i:i + 1]).backward()
    manual.append(model[0].weight.grad.clone())
print("vmap(grad) equals a loop of backward:", torch.allclose(torch.stack(manual), per_sample["0.weight"], atol=1e-6))
(gp, gd), value = grad_and_value(loss_of, argnums=(0, 1))(params, data[0], targets[0])
print("grad_and_value %.5f" % value.item(), sorted(gp), tuple(gd.shape))
print("functional_call leaves the module alone:", all(p.requires_grad for p in model.parameters()))
show("vmap in_dims=1", vmap(lambda col: col.sum(), in_dims=1)(data))
show("vmap out_dims=1", vmap(lambda row: row * 2, out_dims=1)(data[:2, :3]))
show("torch.vmap", torch.vmap(torch.dot)(data, data))
out, back = vjp(lambda a: a.sin() * 2, data[0])
show("vjp", back(torch.ones(6))[0])
show("jacrev", jacrev(lambda a: a.sin() * a)(torch.tensor([0.1, 0.2, 0.3])))
ja, jb = jacrev(lambda a, c: (a * c).sum(), argnums=(0, 1))(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))
show("jacrev argnums a", ja)
show("jacrev argnums c", jb)
try:
    vmap(lambda row: row + torch.randn(6))(data)
except RuntimeError as e:
    print("random in vmap:", str(e)[:60])
show("generator untouched", torch.randn(3))
try:
    grad(lambda a: a * 2)(torch.ones(3))
except RuntimeError as e:
    print("non-scalar:", str(e)[:80])

models = [nn.Linear(3, 2) for _ in range(4)]
stacked_params, stacked_buffers = stack_module_state(models)
print("stacked", {k: tuple(v.shape) for k, v in stacked_params.items()}, stacked_params["weight"].requires_grad)
inputs = torch.randn(5, 3)
ensemble = vmap(lambda p, bufs, xs: functional_call(models[0], (p, bufs), (xs,)), in_dims=(0, 0, None))(
    stacked_params, stacked_buffers, inputs)
show("ensemble", ensemble)
show("model 2 alone", models[2](inputs))

calls = []


def work(n):
    calls.append(n)
    return torch.ones(n).sum()


m = Timer(stmt="work(3)", globals={"work": work}).timeit(5)
print("timeit ran", len(calls), "times;", m.number_per_run, "runs per measurement,", len(m.times), "measurement")
print(type(m).__module__, type(m).__name__, m.title)
