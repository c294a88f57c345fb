# `with torch.device("meta"):` around model construction, then load_state_dict(assign=True), as
# gpt-fast and other LLM programs build big models (program 79 stopped at the with): the
# constructors inside take the context's device unless given one, meta parameters draw no
# random numbers, nn.Parameter keeps its tensor's device, and torch.set_default_device works.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.proj = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.register_buffer("scale", torch.ones(3))

    def forward(self, idx):
        return self.norm(self.proj(self.emb(idx))) * self.scale


with torch.device("meta"):
    model = Block()
    made = torch.tensor([1.0, 2.0])
    ranged = torch.arange(3)
    kept = torch.zeros(2, device="cpu")
print([(n, str(p.device), p.is_meta) for n, p in model.named_parameters()])
print("buffer", model.scale.device, "tensor", made.device, "arange", ranged.device, "explicit", kept.device)
print("no draw on meta:", torch.randn(3))
reference = Block()
model.load_state_dict(reference.state_dict(), assign=True)
idx = torch.tensor([[1, 2, 3], [4, 5, 6]])
print("after assign:", model.proj.weight.device, torch.equal(model(idx), reference(idx)))
print("%.5f" % model(idx).abs().sum().item())
print("outside:", torch.empty(1).device)
p = nn.Parameter(torch.empty(2, 2, device="meta"))
print("parameter of meta:", p.device, p.is_meta, p.shape)
torch.set_default_device("meta")
print("set_default_device:", torch.ones(2).device, torch.get_default_device())
with torch.device("cpu"):
    print("inner cpu:", torch.ones(2).device)
torch.set_default_device(None)
print("reset:", torch.ones(2).device, torch.get_default_device())
