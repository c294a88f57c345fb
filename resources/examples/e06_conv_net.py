# A small CNN: Conv2d, BatchNorm2d (train mode updates running stats), MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten.
import torch
import torch.nn as nn


class SmallCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.SiLU(),
            nn.AvgPool2d(kernel_size=2, stride=2),
        )
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.flatten = nn.Flatten()
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = self.flatten(self.pool(x))
        return self.head(x)


torch.manual_seed(4)
net = SmallCNN()
images = torch.randn(2, 3, 16, 16)
more = torch.randn(3, 3, 16, 16)
compiled = torch.compile(net)
net.train()
with torch.no_grad():
    y_train = compiled(images)
print("train-mode logits", y_train)
bn = net.features[1]
print("running_mean[:3]", bn.running_mean[:3])
print("num_batches_tracked", bn.num_batches_tracked.item())
net.eval()
with torch.no_grad():
    y_eval = compiled(images)
    y_more = compiled(more)
print("eval-mode logits", y_eval)
print("pred", y_eval.argmax(-1).tolist(), y_more.shape, round(y_more.sum().item(), 4))
print("feature shape", tuple(net.features(images).shape), net.features[3].kernel_size)
