# The second example of the PyTorch 2.0 introduction: MyModule (Linear + relu) compiled, then a second batch size.
import torch


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))


torch.manual_seed(0)
mod = MyModule()
opt_mod = torch.compile(mod)
print(opt_mod(torch.randn(10, 100)))
x = torch.rand(4, 100)
y = opt_mod(x)
print(y.shape, y.requires_grad, round(y.sum().item(), 4))
print(mod.lin.weight.shape, mod.lin.bias.shape, opt_mod.lin.out_features)
print(mod.training, opt_mod.training, (y > 0).sum().item())
