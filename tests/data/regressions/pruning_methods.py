# torch.nn.utils.prune (program 83 stopped at the import): random, L1, Ln-structured, random
# structured, global and custom masks drawn from the same random state as PyTorch's, iterative
# pruning in a PruningContainer, the forward pre-hook recomputing weight = weight_orig * mask,
# prune.remove (delattr), parameters_to_vector, and training through the mask.
import torch
import torch.nn as nn
import torch.nn.utils.prune as prune
from torch.nn.utils import parameters_to_vector
torch.manual_seed(0)
m = nn.Conv2d(2, 4, 3)
prune.random_unstructured(m, name="weight", amount=0.3)
print([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()])
print(int((m.weight == 0).sum()), m.weight_mask.sum())
prune.l1_unstructured(m, name="bias", amount=2)
print(m.bias_mask, m.bias)
prune.ln_structured(m, name="weight", amount=0.5, n=2, dim=0)
print(int((m.weight == 0).sum()), m.weight_mask.sum(dim=(1, 2, 3)))
print([type(h).__name__ for h in m._forward_pre_hooks.values()], len(list(m._forward_pre_hooks.values())[1]))
print(list(m.state_dict()))
x = torch.randn(1, 2, 5, 5)
print(m(x).sum())
prune.remove(m, "weight")
print([n for n, _ in m.named_parameters()], prune.is_pruned(m))
net = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
prune.global_unstructured([(net[0], "weight"), (net[2], "weight")], pruning_method=prune.L1Unstructured, amount=0.4)
print(int((net[0].weight == 0).sum()), int((net[2].weight == 0).sum()))
l = nn.Linear(5, 3)
prune.random_structured(l, "weight", amount=2, dim=1)
print(l.weight_mask)
print(parameters_to_vector(l.parameters()).shape, torch.randn(2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loss = net(torch.randn(3, 6)).pow(2).sum(); loss.backward(); opt.step()
print(int((net[0].weight == 0).sum()), net[0].weight_orig.grad.abs().sum() > 0)
