# An MLP with Sequential and Dropout: eval/train recompiles, no_grad, backward and a manual SGD step.
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in, d_hidden, d_out, p=0.5):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, d_hidden),
            nn.ReLU(),
            nn.Dropout(p),
            nn.Linear(d_hidden, d_out),
        )

    def forward(self, x):
        return F.log_softmax(self.net(x), dim=-1)


torch.manual_seed(3)
model = MLP(8, 16, 3)
opt_model = torch.compile(model)
x = torch.randn(5, 8)
target = torch.tensor([0, 2, 1, 1, 0])

model.eval()
with torch.no_grad():
    before = opt_model(x)
print("eval row0", before[0])
print("eval loss", round(F.nll_loss(before, target).item(), 5))

model.train()
train_out = opt_model(x)  # dropout is random here (and differs between backends): print only its shape
print("train", tuple(train_out.shape), train_out.requires_grad, model.net[2].training)

model.eval()
loss = F.nll_loss(opt_model(x), target)
loss.backward()
grad_norms = [round(p.grad.norm().item(), 4) for p in model.parameters()]
print("grad norms", grad_norms)
with torch.no_grad():
    for p in model.parameters():
        p -= 0.5 * p.grad
    after = opt_model(x)
print("loss after step", round(F.nll_loss(after, target).item(), 5))
print("pred", after.argmax(dim=1).tolist(), "params", sum([p.numel() for p in model.parameters()]))
print("flags", model.training, model.net[2].training, len(model.net))
