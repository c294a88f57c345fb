# Packed sequences as NLP tutorials batch variable-length sentences (the chatbot
# tutorial's encoder: pack_padded_sequence -> GRU -> pad_packed_sequence):
# packing sorted and unsorted batches, every recurrent layer on packed input
# (layers, directions, initial states) and gradients through it all.
# Compared with PyTorch 2.11's output (expected.txt).
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence, pack_sequence, PackedSequence

torch.manual_seed(3)
print("== packing")
x = torch.randn(4, 3, 5)
p = pack_padded_sequence(x, [4, 2, 1])
print(p.batch_sizes, p.data.shape, isinstance(p, PackedSequence), type(p).__name__, len(p), p.sorted_indices)
print(p.data[:3, :2])
seqs = [torch.ones(3, 2), torch.ones(1, 2) * 2, torch.ones(2, 2) * 3]
print(pad_sequence(seqs, batch_first=True, padding_value=-1))
print(pack_sequence(seqs, enforce_sorted=False))
try:
    pack_padded_sequence(x, [1, 4, 2])
except RuntimeError as e:
    print(e)

print("== layers")
for layer in [nn.GRU(5, 6), nn.LSTM(5, 6, num_layers=2), nn.RNN(5, 6, bidirectional=True),
              nn.GRU(5, 4, bidirectional=True, num_layers=2)]:
    out, h = layer(p)
    padded, lens = pad_packed_sequence(out)
    hh = h[0] if isinstance(h, tuple) else h
    print(type(layer).__name__, padded.shape, lens, "%.5f %.5f" % (padded.sum().item(), hh.sum().item()))
    print(padded[:, 2, :3], hh[-1])

print("== unsorted with gradients")
xb = torch.randn(3, 4, 5, requires_grad=True)
packed = pack_padded_sequence(xb, torch.tensor([2, 4, 1]), batch_first=True, enforce_sorted=False)
print(packed.sorted_indices, packed.unsorted_indices, type(packed.data.grad_fn).__name__)
gru = nn.GRU(5, 3, batch_first=True, bidirectional=True)
h0 = torch.randn(2, 3, 3)
out, hn = gru(packed, h0)
pad, lens = pad_packed_sequence(out, batch_first=True, total_length=5)
print(pad.shape, lens, "%.5f" % pad.sum().item())
print(hn)
(pad.pow(2).sum() + hn.sum()).backward()
print(xb.grad[0, :2], xb.grad[2, 1:])
print(gru.weight_hh_l0.grad[:2], h0.grad is None)
