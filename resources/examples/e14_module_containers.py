# Module containers: ModuleList, ModuleDict, Sequential, Identity; replacing a layer, eval(), named_parameters, state_dict, hasattr/getattr/setattr.
import torch
import torch.nn as nn


class Router(nn.Module):
    def __init__(self, dim=6, depth=3):
        super().__init__()
        self.depth = depth
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.acts = nn.ModuleDict({"relu": nn.ReLU(), "tanh": nn.Tanh(), "sig": nn.Sigmoid(), "id": nn.Identity()})
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2, bias=False))

    def forward(self, x, act="relu"):
        for i, layer in enumerate(self.layers):
            x = self.acts[act](layer(x)) + 0.1 * i
        for name, mod in self.acts.items():
            if name != act:
                x = x + 0.01 * mod(x)
        return self.head(x)


torch.manual_seed(12)
r = Router()
x = torch.randn(3, 6)
cr = torch.compile(r)
print(cr(x))
print(round(cr(x, act="tanh").sum().item(), 5))
r.layers[2] = nn.Identity()
print(round(cr(x).sum().item(), 5))
r.eval()
print(round(cr(x).sum().item(), 5), r.training, r.head[0].training)
print(len(r.layers), list(r.acts.keys()), len(list(r.parameters())))
print(sum([p.numel() for p in r.parameters()]))
for name, p in r.named_parameters():
    print(name, tuple(p.shape), p.requires_grad)
print(list(r.state_dict().keys()))
print(list(cr.state_dict().keys())[:2])
print(hasattr(r, "head"), hasattr(r, "tail"), getattr(r, "depth"), getattr(r, "width", 6))
setattr(r, "depth", 2)
print(r.depth, isinstance(r.layers[0], nn.Linear), isinstance(r.layers[2], nn.Linear), isinstance(r.head, nn.Module))
