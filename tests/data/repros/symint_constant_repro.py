# A dynamic-shape repro in the form PyTorch's minifier writes (after_aot):
# forward reads a SymInt input and a constant of Repro.__init__, which Kiln
# replays at the value load_args recorded and as an input.
import torch
from torch import tensor, device
class Repro(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer('_tensor_constant0', tensor([0.5000, -1.0000, 2.0000, 4.0000]))

    def forward(self, arg0_1, arg1_1, arg2_1):
        _tensor_constant0 = self._tensor_constant0
        mul = arg0_1 * 2
        view = torch.ops.aten.view.default(arg1_1, [mul, 4]);  arg1_1 = mul = None
        add = torch.ops.aten.add.Tensor(view, arg2_1);  view = arg2_1 = None
        mul_1 = torch.ops.aten.mul.Tensor(add, _tensor_constant0);  add = None
        return (mul_1,)

def load_args(reader):
    reader.symint(3)  # arg0_1
    buf0 = reader.storage(None, 32*s0)
    reader.tensor(buf0, (8*s0,), is_leaf=True)  # arg1_1
    buf1 = reader.storage(None, 16)
    reader.tensor(buf1, (4,), is_leaf=True)  # arg2_1
