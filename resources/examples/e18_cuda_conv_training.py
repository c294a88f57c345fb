# A small convolutional network trained for a few SGD steps on a CUDA device
# when there is one, else on the CPU: convolutions with and without bias
# (strided, 1x1 shortcut, depthwise), batch norm in training mode, in-place
# ReLU, max pooling with its indices, average pooling and a linear head, all
# in one compiled region whose backward holds convolution_backward and
# max_pool2d_with_indices_backward. Kiln runs both graphs on the GPU (nothing
# on the host), so the step can be captured; CUDA_VISIBLE_DEVICES= runs the
# CPU path, and the two print the same numbers (to 1e-4 relative).
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
# Exact float32 convolutions on the GPU, so both paths agree to 1e-4.
torch.backends.cudnn.allow_tf32 = False


class Residual(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.depthwise = nn.Conv2d(cout, cout, 3, padding=1, groups=cout)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride=2, bias=False)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)), inplace=True)
        h = self.bn2(self.depthwise(h))
        return F.relu(h + self.shortcut(x))


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 5, stride=1, padding=2)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.block = Residual(8, 16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.stem(x)), inplace=True))
        x = self.block(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


torch.manual_seed(0)
model = SmallNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
images = torch.randn(8, 3, 24, 24).to(device)
labels = torch.randint(0, 10, (8,)).to(device)


@torch.compile
def loss_of(images, labels):
    return F.cross_entropy(model(images), labels)


for step in range(3):
    optimizer.zero_grad()
    loss = loss_of(images, labels)
    loss.backward()
    grad_norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters()))
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 5), "grad norm", round(grad_norm.item(), 5))
print("stem grad", round(model.stem.weight.grad.abs().sum().item(), 5))
print("depthwise weight grad", round(model.block.depthwise.weight.grad.abs().sum().item(), 5))
# The running statistics, updated by the compiled forward and written back.
print("running mean", round(model.bn.running_mean.sum().item(), 5), "running var",
      round(model.block.bn2.running_var.sum().item(), 5), "batches", model.bn.num_batches_tracked.item())
