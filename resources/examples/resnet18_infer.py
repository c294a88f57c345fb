# ResNet-18 inference as torchvision builds it (eval mode, batch 16, 3x128x128
# inputs), compiled with mode="reduce-overhead". With a CUDA device the model
# and the input go there, and Kiln runs the compiled graph on the GPU:
# convolutions as im2col + cuBLAS, the rest as generated kernels, all captured
# once into a CUDA graph and replayed. Without one the same program runs on the
# CPU (CUDA_VISIBLE_DEVICES= chooses that on a GPU machine); both print the
# same numbers to 1e-4 relative. The same file runs under CPython with PyTorch.
# `kiln-cli bench gpu --graph resnet18` times this model's graph.
import torch
import torch.nn as nn


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


def model_and_batch():
    """The seeded model (eval mode) and input batch, on the CPU; scripts/bench_gpu_torch.py builds them here too."""
    torch.manual_seed(0)
    model = ResNet([2, 2, 2, 2]).eval()
    # Running statistics as a trained network has them, so that batch norm is not the identity.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model, torch.randn(16, 3, 128, 128)


device = "cuda" if torch.cuda.is_available() else "cpu"
# Exact float32 convolutions, so that the GPU prints what the CPU does to 1e-4:
# PyTorch's default lets them use TF32 (about 1e-3 relative).
torch.backends.cudnn.allow_tf32 = False
model, x = model_and_batch()
model = model.to(device)
x = x.to(device)
compiled = torch.compile(model, mode="reduce-overhead")
with torch.no_grad():
    for step in range(3):
        out = compiled(x)
        print("step", step, "logits", list(out.shape), "sum of squares", round((out * out).sum().item(), 3))
    probs = out.softmax(-1)
print("top class", probs[:4].argmax(-1).tolist(), "max prob", round(probs.max().item(), 5))
print("eager agrees", (model(x) - out).abs().max().item() < 1e-3)
