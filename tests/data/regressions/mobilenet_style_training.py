# A mobilenet-style model (our own code with the constructs of public mobilenet programs) trained
# for three steps through torch.compile: every backend prints what eager prints.
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(inp, out, stride, groups=1):
    return nn.Sequential(nn.Conv2d(inp, out, 3, stride, 1, groups=groups, bias=False), nn.BatchNorm2d(out), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, out, stride, expand):
        super().__init__()
        hidden = inp * expand
        self.use_res = stride == 1 and inp == out
        self.conv = nn.Sequential(
            nn.Conv2d(inp, hidden, 1, 1, 0, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, out, 1, 1, 0, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        if self.use_res:
            return x + self.conv(x)
        return self.conv(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(conv_bn(3, 8, 2), InvertedResidual(8, 8, 1, 2), InvertedResidual(8, 12, 2, 2))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(12, 5))

    def forward(self, x):
        x = self.features(x)
        x = x.mean([2, 3])
        return self.classifier(x)


torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=4e-5)
cnet = torch.compile(net)
for step in range(3):
    x = torch.randn(4, 3, 16, 16)
    y = torch.randint(0, 5, (4,))
    opt.zero_grad()
    loss = F.cross_entropy(cnet(x), y)
    loss.backward()
    opt.step()
    print("step %d loss %.6f" % (step, loss.item()))
print("bn mean %.6f var %.6f" % (net.features[0][1].running_mean.sum().item(), net.features[0][1].running_var.sum().item()))
print("tracked", net.features[0][1].num_batches_tracked.item())
net.eval()
with torch.no_grad():
    print("eval %.6f" % cnet(torch.randn(2, 3, 16, 16)).sum().item())
