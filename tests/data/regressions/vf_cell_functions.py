# The recurrent cells as functions: torch.lstm_cell / gru_cell / rnn_*_cell and
# the same through torch._VF (what nn.LSTMCell calls, and what copies of
# nn.LSTMCell in model code call), eager and inside a compiled function.
import torch
from torch import _VF
from torch import nn

torch.manual_seed(0)
x = torch.randn(3, 5)
cell = nn.LSTMCell(5, 4)
h0, c0 = torch.randn(3, 4), torch.randn(3, 4)
h1, c1 = _VF.lstm_cell(x, (h0, c0), cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
h2, c2 = cell(x, (h0, c0))
print("lstm", f"{h1.sum().item():.6f}", f"{c1.sum().item():.6f}", torch.equal(h1, h2), torch.equal(c1, c2))

gru = nn.GRUCell(5, 4)
g = torch.gru_cell(x, h0, gru.weight_ih, gru.weight_hh, gru.bias_ih, gru.bias_hh)
print("gru", f"{g.sum().item():.6f}", torch.equal(g, gru(x, h0)))

w_ih, w_hh = torch.randn(4, 5), torch.randn(4, 4)
print("rnn_tanh", f"{torch._VF.rnn_tanh_cell(x, h0, w_ih, w_hh).sum().item():.6f}")
print("rnn_relu", f"{torch.rnn_relu_cell(x, h0, w_ih, w_hh, None, None).sum().item():.6f}")


@torch.compile(backend="eager")
def step(x, h, c):
    h, c = _VF.lstm_cell(x, (h, c), cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    return (h * 2 + c).sum()


loss = step(x, h0, c0)
loss.backward()
print("compiled", f"{loss.item():.6f}", f"{cell.weight_hh.grad.abs().sum().item():.6f}")
