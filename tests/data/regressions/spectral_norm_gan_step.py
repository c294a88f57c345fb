# torch.nn.utils.spectral_norm as GAN discriminators use it: u and v drawn at registration (the
# random state after it is PyTorch's), one power iteration per training forward updating the
# buffers in place, eval without it, the state dict's version metadata and reload, removal.
import torch
import torch.nn as nn
from torch.nn.utils import remove_spectral_norm, spectral_norm

torch.manual_seed(0)
disc = nn.Sequential(spectral_norm(nn.Conv2d(3, 4, 3)), nn.LeakyReLU(0.2), nn.Flatten(),
                     spectral_norm(nn.Linear(4 * 6 * 6, 1)))
print([n for n, _ in disc.named_parameters()], [n for n, _ in disc.named_buffers()])
print(" ".join("%.5f" % v for v in disc[0].weight_u.tolist()), " ".join("%.5f" % v for v in torch.randn(2).tolist()))
real = torch.randn(4, 3, 8, 8)
fake = torch.randn(4, 3, 8, 8)
opt = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.0, 0.9))
for step in range(3):
    loss = torch.relu(1 - disc(real)).mean() + torch.relu(1 + disc(fake)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", step, "%.6f" % loss.item(), "%.6f" % disc[0].weight_u.sum().item(), "%.6f" % disc[3].weight_v.abs().sum().item())
disc.eval()
print("eval %.6f" % disc(real).sum().item())
sd = disc.state_dict()
print(list(sd))
copy = nn.Sequential(spectral_norm(nn.Conv2d(3, 4, 3)), nn.LeakyReLU(0.2), nn.Flatten(), spectral_norm(nn.Linear(4 * 6 * 6, 1)))
print(copy.load_state_dict(sd))
copy.eval()
print("reloaded equal:", torch.allclose(copy(real), disc(real)))
remove_spectral_norm(disc[0])
print([n for n, _ in disc[0].named_parameters()], "%.6f" % disc(real).sum().item())
try:
    remove_spectral_norm(disc[0])
except ValueError as e:
    print("ValueError:", str(e)[:40])
