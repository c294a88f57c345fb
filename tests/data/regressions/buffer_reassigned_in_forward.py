# A buffer reassigned in forward (self.scale = self.scale.to(h.device), as
# Llama code does): the module keeps a real tensor and the second call runs.
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.ones(4) * 2)

    def forward(self, x):
        h = self.lin(x)
        self.scale = self.scale.to(h.device)
        return h * self.scale


torch.manual_seed(0)
m = torch.compile(M())
print("%f" % m(torch.randn(2, 4)).sum().item())
print("%f" % m(torch.randn(2, 4)).sum().item())
print(m.scale)
