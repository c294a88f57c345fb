# torch.diff's values and gradient (program 86, torchvision's RegNet, stopped at torch.diff), and
# state_dict versions reaching _load_from_state_dict as torchvision's MNASNet reads them (program
# 87 stopped there): a module's _version, BatchNorm's version 2 and its num_batches_tracked fill-in.
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(4, 6, requires_grad=True)
y = torch.diff(x.exp(), n=2, dim=1, prepend=torch.zeros(4, 1), append=torch.ones(4, 2))
(y * torch.arange(7.0) ** 2).sum().backward()
print(tuple(y.shape), y.grad_fn.name(), "%.5f %.5f" % (y.sum().item(), x.grad.abs().sum().item()))
print(torch.diff(torch.tensor([3, 1, 4, 1, 5, 9])).tolist(), torch.diff(torch.tensor([True, True, False])).tolist())


class Versioned(nn.Module):
    _version = 2

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        print("loading", repr(prefix), "version", version)
        if version not in [1, 2]:
            raise ValueError("version should be 1 or 2, got " + str(version))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)


m = Versioned()
m.bn.running_mean.add_(0.5)
copy = Versioned()
print(copy.load_state_dict(m.state_dict()))
print("running_mean", copy.bn.running_mean.tolist())
hand = {k: v for k, v in m.state_dict().items()}
try:
    copy.load_state_dict(hand)
except ValueError as e:
    print("ValueError:", e)
bn = nn.BatchNorm1d(3)
old_checkpoint = {"weight": torch.ones(3), "bias": torch.zeros(3), "running_mean": torch.zeros(3), "running_var": torch.ones(3)}
print(bn.load_state_dict(old_checkpoint), bn.num_batches_tracked.item())
