# torch.amp.GradScaler on the CPU (enabled): a scaled loss, gradients unscaled
# by step() or by an explicit unscale_ before clipping, an inf gradient that
# skips the optimizer's step and backs the scale off, growth after
# growth_interval clean steps, state_dict/load_state_dict, torch.cpu.amp's
# deprecated class and a disabled scaler passing through. The model is compiled.
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
step_fn = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
print("start", scaler.is_enabled(), scaler.get_scale(), scaler._get_growth_tracker(), scaler.state_dict())
x = torch.randn(16, 4)
y = torch.randn(16, 1)
for it in range(9):
    opt.zero_grad()
    loss = ((step_fn(x) - y) ** 2).mean()
    scaled = scaler.scale(loss)
    scaled.backward()
    print(f"{it} loss {loss.item():.6f} scaled {scaled.item():.4f} grad {model[0].weight.grad.abs().sum().item():.4f}")
    if it == 3:
        model[0].weight.grad[1, 2] = math.inf  # an overflowed gradient: the step is skipped
    if it == 6:
        model[2].bias.grad.fill_(math.nan)
    if it == 5:
        scaler.unscale_(opt)  # unscaled before clipping, as the AMP recipe does
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        print(f"  unscaled grad {model[0].weight.grad.abs().sum().item():.6f} norm {norm.item():.6f}")
    before = model[0].weight.detach().clone()
    scaler.step(opt)
    found = [v.item() for v in scaler._found_inf_per_device(opt).values()]
    moved = not torch.equal(before, model[0].weight.detach())
    scaler.update()
    print(f"  found_inf {found} stepped {moved} scale {scaler.get_scale()} tracker {scaler._get_growth_tracker()}")
print("weights", [round(v, 6) for v in model[0].weight.sum(1).tolist()], round(model[2].bias.item(), 6))

state = scaler.state_dict()
print("state", state)
other = torch.amp.GradScaler("cpu")
other.load_state_dict(state)
print("loaded", other.get_scale(), other._get_growth_tracker(), other.get_growth_interval())
a, b = other.scale([torch.ones(2), torch.full((1,), 0.5)])
print("list", a.tolist(), b.tolist(), other.scale((torch.ones(1),))[0].item())
other.set_growth_factor(4.0)
other.set_backoff_factor(0.25)
other.set_growth_interval(1)
print("setters", other.get_growth_factor(), other.get_backoff_factor(), other.get_growth_interval())

old = torch.cpu.amp.GradScaler(init_scale=8.0)
print("cpu.amp", type(old).__module__, isinstance(old, torch.amp.GradScaler), old.get_scale(), old.state_dict()["scale"])
off = torch.amp.GradScaler("cpu", enabled=False)
t = torch.ones(2)
print("disabled", off.scale(t) is t, off.get_scale(), off.state_dict(), off.is_enabled())
