# Gradients of gradients: autograd.grad(create_graph=True) differentiated again,
# a Hessian-vector product, backward(create_graph=True) into .grad, torch.func's
# hessian and nested grad, and a WGAN-GP critic step whose gradient penalty
# differentiates through convolutions and leaky ReLUs a second time.
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(5, dtype=torch.float64, requires_grad=True)
y = (x ** 3 * torch.sin(x)).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
print(g.grad_fn is not None, g.requires_grad)
(h,) = torch.autograd.grad(g.sum(), x)
exact = 6 * x * torch.sin(x) + 6 * x ** 2 * torch.cos(x) - x ** 3 * torch.sin(x)
print("second derivative error %.2e" % (h - exact.detach()).abs().max().item())

w = torch.randn(4, 3, requires_grad=True)
inp = torch.randn(6, 4)
loss = torch.tanh(inp @ w).pow(2).mean() + torch.sigmoid(w).sum() * 0.1
(gw,) = torch.autograd.grad(loss, w, create_graph=True)
v = torch.randn(4, 3)
(hv,) = torch.autograd.grad((gw * v).sum(), w)
print("hvp", " ".join("%.6f" % t for t in hv.flatten()[:6].tolist()))

z = torch.tensor([1.5, -0.5], requires_grad=True)
out = (z.exp() * z).sum()
out.backward(create_graph=True)
print("z.grad", [round(t, 6) for t in z.grad.tolist()], z.grad.requires_grad)
first = z.grad.clone()
z.grad = None
first.sum().backward()
print("z.grad after second backward", [round(t, 6) for t in z.grad.tolist()])


def f(a):
    return (a.sin() * a.sum()).sum()


a = torch.tensor([0.3, -1.2, 2.0])
H = torch.func.hessian(f)(a)
print("hessian", " ".join("%.5f" % t for t in H.flatten().tolist()))
gg = torch.func.grad(lambda t: torch.func.grad(f)(t).sum())(a)
print("grad of grad", " ".join("%.5f" % t for t in gg.tolist()))
print("nested closure", torch.func.grad(lambda q: torch.func.grad(lambda r: q * r)(q))(torch.tensor(2.0)).item())


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 2 * 2, 1)

    def forward(self, img):
        h = nn.functional.leaky_relu(self.conv1(img), 0.2)
        h = nn.functional.leaky_relu(self.conv2(h), 0.2)
        return self.fc(h.flatten(1))


critic = Critic()
opt = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
for step in range(3):
    real = torch.randn(6, 1, 8, 8)
    fake = torch.randn(6, 1, 8, 8) * 0.5
    alpha = torch.rand(6, 1, 1, 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    score = critic(mixed)
    (grads,) = torch.autograd.grad(score, mixed, grad_outputs=torch.ones_like(score), create_graph=True)
    penalty = ((grads.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
    norms = " ".join("%.5f" % p.grad.norm().item() for p in critic.parameters())
    print(f"step {step} loss {loss.item():.5f} penalty {penalty.item():.5f} grads {norms}")
