# torch.autocast on the CPU in bfloat16: which ops cast (lower precision,
# float32, promote), nesting with enabled=False, the decorator form, and a
# small model's loss and gradients flowing back to float32 parameters.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)
a = torch.randn(5, 7)
b = torch.randn(7, 4)
idx = torch.tensor([1, 0, 2])
print("before", torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype())
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    print("inside", torch.is_autocast_cpu_enabled())
    c = a @ b
    print("matmul", c.dtype, torch.mm(a, b).dtype, torch.matmul(a, b).dtype)
    print("bmm", torch.bmm(a[None], b[None]).dtype, F.linear(a, b.t()).dtype)
    print("add", (c + 1).dtype, (c + a[:, :4]).dtype)
    print("cat", torch.cat([c, a[:, :4]]).dtype, torch.stack([c, c]).dtype)
    print("softmax", torch.softmax(c, 1).dtype, c.sum().dtype, a.sum().dtype)
    print("mse", F.mse_loss(c, a[:, :4]).dtype, F.cross_entropy(c[:3], idx).dtype)
    print("ints", (idx @ idx).dtype, torch.mm(a.double(), b.double()).dtype)
    with torch.autocast(device_type="cpu", enabled=False):
        print("nested off", (a @ b).dtype, torch.is_autocast_cpu_enabled())
    print("back on", (a @ b).dtype, torch.is_autocast_cpu_enabled())
print("after", (a @ b).dtype, torch.is_autocast_cpu_enabled())


@torch.autocast(device_type="cpu")
def project(u, v):
    return u @ v


print("decorated", project(a, b).dtype, (a @ b).dtype)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(7, 12)
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x, y):
        h = torch.relu(self.fc1(x))
        logits = self.fc2(h)
        return logits, F.cross_entropy(logits, y)


net = Net()
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    logits, loss = net(a, torch.tensor([0, 1, 2, 1, 0]))
print("logits", logits.dtype, "loss", loss.dtype, f"{loss.item():.3f}")
loss.backward()
for name, p in net.named_parameters():
    print(name, p.dtype, p.grad.dtype, f"{p.grad.abs().sum().item():.2f}")

# Compiled: the casts are part of the captured graph (outside and inside the region).
step = torch.compile(net)
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    logits2, loss2 = step(a, torch.tensor([0, 1, 2, 1, 0]))
print("compiled", logits2.dtype, loss2.dtype, f"{loss2.item():.2f}")


def inner(u, v):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        w = u @ v
    return w, w.float().sum()


w, s = torch.compile(inner)(a, b)
print("compiled inside", w.dtype, s.dtype, torch.equal(w, project(a, b)))
