# The workbench's bundled example: a small training step whose compiled model
# has one graph break (a print) and recompiles once (a new batch size).
import torch
import torch.nn as nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        print("hidden", h.shape)
        y = self.fc2(h) * 0.5
        return torch.tanh(y).sum()


torch.manual_seed(0)
model = TinyNet()
step = torch.compile(model)
for batch in [8, 8, 12]:
    loss = step(torch.randn(batch, 16))
    loss.backward()
    print("batch", batch, "loss", round(loss.item(), 4))
