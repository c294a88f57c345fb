# ResNet-18 as torchvision builds it (BasicBlock, in-place ReLU, 1x1 downsample
# shortcuts, kaiming init), trained for two SGD steps at batch 4 on 3x64x64
# inputs (`-- --batch 16 --size 128 --steps 1` changes them). The same file
# runs under CPython with PyTorch. Kiln runs it with any backend:
# `kiln-cli run --backend aot_eager resnet18_train.py`, and
# `kiln-cli stages resnet18_train.py` shows the joint, forward, backward and
# decomposed graphs of the compiled model. `kiln-cli bench gpu --graph
# resnet18_train` times one training step of this model at batch 16, 3x128x128.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x


def model_and_batch(batch, size):
    """The seeded model, a batch and its labels, on the CPU; scripts/bench_gpu_torch.py builds them here too."""
    torch.manual_seed(0)
    model = ResNet([2, 2, 2, 2])
    x = torch.randn(batch, 3, size, size)
    target = torch.randint(0, 1000, (batch,))
    return model, x, target


parser = argparse.ArgumentParser(description="SGD steps of a ResNet-18 on random data")
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--size", type=int, default=64, help="input height and width")
parser.add_argument("--steps", type=int, default=2)
args = parser.parse_args()
model, x, target = model_and_batch(args.batch, args.size)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
compiled = torch.compile(model)
for step in range(args.steps):
    opt.zero_grad()
    out = compiled(x)
    loss = F.cross_entropy(out, target)
    loss.backward()
    opt.step()
    print("step", step, "loss", loss.item())
print("fc.weight.grad norm", model.fc.weight.grad.norm().item())
print("bn1 running_mean sum", model.bn1.running_mean.sum().item())
print("params", sum([p.numel() for p in model.parameters()]))
