import torch
import torch.nn as nn
import torch.nn.functional as F


def flat(o):
    if o is None:
        return []
    if isinstance(o, torch.Tensor):
        return [o]
    r = []
    for e in o:
        r = r + flat(e)
    return r


def st(name, t):
    n = t.numel()
    w = torch.arange(n, dtype=torch.float32) / max(n, 1) + 1.0
    a = t.detach().float().flatten()
    print(name, list(t.shape), a.abs().sum().item(), (a.abs() * w).sum().item())


def show_params(m):
    for name, p in m.named_parameters():
        st("  p." + name, p)


def show_grads(m):
    for name, p in m.named_parameters():
        if p.grad is not None:
            st("  g." + name, p.grad)


def check(name, m, inputs, call=None):
    print("==", name)
    print(m)
    show_params(m)
    torch.manual_seed(7)
    out = m(*inputs) if call is None else call(m, inputs)
    outs = flat(out)
    loss = None
    k = 0
    for o in outs:
        st("  out" + str(k), o)
        if o.requires_grad:
            term = (o * torch.randn_like(o)).sum()
            loss = term if loss is None else loss + term
        k += 1
    if loss is not None:
        loss.backward()
        k = 0
        for x in inputs:
            if isinstance(x, torch.Tensor) and x.grad is not None:
                st("  gin" + str(k), x.grad)
            k += 1
        show_grads(m)


def rin(*shape):
    return torch.randn(*shape, requires_grad=True)


# ---- normalization
torch.manual_seed(0)
check("groupnorm", nn.GroupNorm(2, 4), [rin(2, 4, 3, 3)])
check("groupnorm_noaffine", nn.GroupNorm(3, 6, eps=1e-3, affine=False), [rin(2, 6, 5)])
torch.manual_seed(1)
m = nn.InstanceNorm1d(3)
check("instancenorm1d", m, [rin(2, 3, 5)])
check("instancenorm1d_unbatched", nn.InstanceNorm1d(3, affine=True), [rin(3, 5)])
m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.2)
check("instancenorm2d_track", m, [rin(2, 3, 4, 4)])
st("  running_mean", m.running_mean)
st("  running_var", m.running_var)
print("  batches", m.num_batches_tracked.item())
m.eval()
check("instancenorm2d_eval", m, [rin(2, 3, 4, 4)])

# ---- transposed convolutions
torch.manual_seed(2)
check("convtranspose1d", nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1), [rin(2, 3, 5)])
check("convtranspose2d_groups", nn.ConvTranspose2d(4, 2, (3, 2), stride=(2, 1), padding=(1, 0), groups=2, bias=False),
      [rin(1, 4, 3, 3)])
check("convtranspose2d_dilation", nn.ConvTranspose2d(2, 3, 3, stride=2, dilation=2, padding=1), [rin(2, 2, 3, 4)])
check("convtranspose2d_output_size", nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), [rin(1, 2, 3, 3)],
      lambda m, xs: m(xs[0], output_size=[6, 6]))

# ---- shuffles and padding
torch.manual_seed(3)
check("pixelshuffle", nn.PixelShuffle(2), [rin(1, 8, 2, 3)])
check("pixelunshuffle", nn.PixelUnshuffle(2), [rin(1, 2, 4, 6)])
check("reflectionpad1d", nn.ReflectionPad1d(2), [rin(2, 3, 5)])
check("reflectionpad1d_tuple", nn.ReflectionPad1d((3, 1)), [rin(3, 5)])
check("reflectionpad2d", nn.ReflectionPad2d((1, 0, 2, 1)), [rin(1, 2, 4, 4)])
check("replicationpad2d", nn.ReplicationPad2d(1), [rin(1, 2, 3, 3)])
check("replicationpad2d_tuple", nn.ReplicationPad2d((2, 0, 1, 3)), [rin(2, 3, 3)])
check("zeropad2d", nn.ZeroPad2d((1, 2, 0, 1)), [rin(1, 2, 3, 3)])
check("constantpad2d", nn.ConstantPad2d(1, 3.5), [rin(1, 1, 2, 3)])
check("upsample_nearest", nn.Upsample(scale_factor=2), [rin(1, 2, 2, 3)])
check("upsample_bilinear", nn.Upsample(size=(5, 7), mode="bilinear"), [rin(1, 2, 3, 3)])
check("upsample_bilinear_ac", nn.Upsample(scale_factor=(2, 1.5), mode="bilinear", align_corners=True), [rin(1, 1, 3, 4)])
check("upsample_linear", nn.Upsample(scale_factor=3, mode="linear"), [rin(2, 2, 4)])

# ---- losses
torch.manual_seed(4)
x = rin(3, 4)
t = torch.rand(3, 4)
check("bceloss", nn.BCELoss(), [torch.sigmoid(x).detach().requires_grad_(True), t])
check("bceloss_weight_sum", nn.BCELoss(weight=torch.rand(4), reduction="sum"), [torch.rand(3, 4).requires_grad_(True), t])
check("bcewithlogits", nn.BCEWithLogitsLoss(), [rin(3, 4), t])
check("bcewithlogits_pos_weight", nn.BCEWithLogitsLoss(pos_weight=torch.rand(4) * 3, weight=torch.rand(3, 1)),
      [rin(3, 4), t])
check("bcewithlogits_none", nn.BCEWithLogitsLoss(reduction="none"), [rin(3, 4), t])

# ---- recurrent cells
torch.manual_seed(5)
check("rnncell", nn.RNNCell(3, 4), [rin(2, 3), rin(2, 4)])
check("rnncell_relu_nobias", nn.RNNCell(3, 4, bias=False, nonlinearity="relu"), [rin(2, 3)])
check("rnncell_unbatched", nn.RNNCell(3, 4), [rin(3)])
check("lstmcell", nn.LSTMCell(3, 4), [rin(2, 3), (rin(2, 4), rin(2, 4))], lambda m, xs: m(xs[0], xs[1]))
check("lstmcell_nohx", nn.LSTMCell(3, 5, bias=False), [rin(2, 3)])
check("grucell", nn.GRUCell(3, 4), [rin(2, 3), rin(2, 4)])
check("grucell_unbatched", nn.GRUCell(3, 4), [rin(3)])

# ---- recurrent layers
torch.manual_seed(6)
check("rnn", nn.RNN(3, 4, num_layers=2), [rin(5, 2, 3)])
check("rnn_relu_batch_first_h0", nn.RNN(3, 4, nonlinearity="relu", batch_first=True), [rin(2, 5, 3), rin(1, 2, 4)])
check("rnn_unbatched", nn.RNN(3, 4), [rin(5, 3)])
check("lstm", nn.LSTM(3, 5), [rin(4, 2, 3)])
check("lstm_2layer_batch_first", nn.LSTM(3, 5, num_layers=2, batch_first=True), [rin(2, 4, 3)])
m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, bias=False)
check("lstm_bidirectional_hx", m, [rin(4, 2, 3), (rin(4, 2, 4), rin(4, 2, 4))], lambda m, xs: m(xs[0], xs[1]))
check("gru", nn.GRU(3, 4), [rin(4, 2, 3)])
check("gru_bidirectional_2layer", nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True), [rin(2, 4, 3)])
check("gru_unbatched_h0", nn.GRU(3, 4, num_layers=2), [rin(4, 3), rin(2, 4)])

# ---- attention
torch.manual_seed(8)
check("mha_self", nn.MultiheadAttention(8, 2), [rin(4, 2, 8)], lambda m, xs: m(xs[0], xs[0], xs[0]))
q = rin(3, 2, 8)
kv = rin(5, 2, 8)
kpm = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
check("mha_kpm_per_head", nn.MultiheadAttention(8, 2, bias=False), [q, kv, kpm],
      lambda m, xs: m(xs[0], xs[1], xs[1], key_padding_mask=xs[2], average_attn_weights=False))
am = torch.randn(3, 5)
check("mha_float_mask_no_weights", nn.MultiheadAttention(8, 4), [rin(3, 2, 8), rin(5, 2, 8), rin(5, 2, 8), am],
      lambda m, xs: m(xs[0], xs[1], xs[2], attn_mask=xs[3], need_weights=False))
check("mha_kdim_vdim_batch_first", nn.MultiheadAttention(6, 3, kdim=4, vdim=5, batch_first=True),
      [rin(2, 3, 6), rin(2, 4, 4), rin(2, 4, 5)])
check("mha_bias_kv_zero_attn", nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True),
      [rin(3, 1, 4), rin(2, 1, 4)], lambda m, xs: m(xs[0], xs[1], xs[1]))
check("mha_unbatched_causal_mask", nn.MultiheadAttention(4, 1), [rin(3, 4)],
      lambda m, xs: m(xs[0], xs[0], xs[0], attn_mask=torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)))

# ---- transformer
torch.manual_seed(9)
check("encoder_layer", nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0), [rin(4, 2, 8)])
check("encoder_layer_norm_first_gelu", nn.TransformerEncoderLayer(8, 2, 16, 0.0, activation="gelu", batch_first=True,
                                                                  norm_first=True), [rin(2, 4, 8)])
layer = nn.TransformerEncoderLayer(8, 2, 12, 0.0)
enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=False)
mask = nn.Transformer.generate_square_subsequent_mask(4)
print(mask)
check("encoder_causal", enc, [rin(4, 2, 8), mask, torch.tensor([[False, False, False, True], [False, False, False, False]])],
      lambda m, xs: m(xs[0], mask=xs[1], src_key_padding_mask=xs[2]))
check("decoder_layer", nn.TransformerDecoderLayer(8, 2, 16, 0.0), [rin(3, 2, 8), rin(4, 2, 8)])
dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=True), 2)
check("decoder_causal", dec, [rin(3, 2, 8), rin(4, 2, 8)],
      lambda m, xs: m(xs[0], xs[1], tgt_mask=nn.Transformer.generate_square_subsequent_mask(3), tgt_is_causal=True))
tr = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0)
check("transformer", tr, [rin(5, 2, 8), rin(3, 2, 8)],
      lambda m, xs: m(xs[0], xs[1], tgt_mask=m.generate_square_subsequent_mask(3)))
check("encoder_layer_dropout", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25), [rin(3, 2, 8)])

# ---- init
torch.manual_seed(10)
w = torch.empty(3, 5)
nn.init.orthogonal_(w)
print("orth35", w.tolist())
w = torch.empty(6, 3)
nn.init.orthogonal_(w, gain=2.0)
print("orth63", w.tolist())
w = torch.empty(2, 3, 2)
nn.init.orthogonal_(w)
print("orth232", w.tolist())
print("qq", (w.flatten(1) @ w.flatten(1).t()).tolist())

# ---- recurrent options, attention dropout, qr
torch.manual_seed(11)
check("lstm_proj", nn.LSTM(3, 5, num_layers=2, proj_size=2), [rin(4, 2, 3)])
check("lstm_proj_bidirectional_batch_first", nn.LSTM(3, 4, proj_size=3, bidirectional=True, batch_first=True),
      [rin(2, 3, 3)])
check("lstm_dropout_train", nn.LSTM(3, 4, num_layers=3, dropout=0.4), [rin(4, 2, 3)])
check("gru_dropout_bidirectional_train", nn.GRU(3, 4, num_layers=2, dropout=0.3, bidirectional=True), [rin(4, 2, 3)])
check("rnn_dropout_train", nn.RNN(3, 4, num_layers=2, dropout=0.5, nonlinearity="relu"), [rin(4, 2, 3)])
m = nn.LSTM(3, 4, num_layers=2, dropout=0.4)
m.eval()
check("lstm_dropout_eval", m, [rin(4, 2, 3)])
check("mha_dropout_train", nn.MultiheadAttention(8, 2, dropout=0.3), [rin(3, 2, 8)], lambda m, xs: m(xs[0], xs[0], xs[0]))
tr = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=12, dropout=0.1,
                    activation="gelu", batch_first=True, norm_first=True)
check("transformer_batch_first_masks", tr, [rin(2, 5, 8), rin(2, 3, 8)],
      lambda m, xs: m(xs[0], xs[1], src_key_padding_mask=torch.tensor([[False] * 5, [False] * 3 + [True] * 2]),
                      memory_key_padding_mask=torch.tensor([[False] * 5, [False] * 3 + [True] * 2]),
                      tgt_mask=nn.Transformer.generate_square_subsequent_mask(3), tgt_is_causal=True))
a = torch.randn(4, 3)
q, r = torch.linalg.qr(a)
print("qr43", q.tolist(), r.tolist())
q, r = torch.linalg.qr(a, mode="complete")
print("qr43c", q.tolist(), r.tolist())
b = torch.randn(2, 3, 5, dtype=torch.float64)
res = torch.linalg.qr(b)
print("qrb", res.Q.dtype, res.Q.tolist(), res.R.tolist())
q, r = torch.linalg.qr(a.t(), mode="r")
print("qrr", q.shape, r.tolist())
