// The recurrent layers of torch.nn in Kiln's Python subset, compiled into
// "torch/nn/modules.py" after the other layers, following PyTorch 2.11's
// torch/nn/modules/rnn.py (constructor arguments, parameter names, creation and
// initialization order, reprs, input checks and messages). PyTorch's _VF.rnn_*,
// _VF.lstm, _VF.gru and the *_cell functions are ATen C++; here they are the
// same cell math written with torch calls, in ATen's CPU order: each layer
// projects the whole sequence through weight_ih once, then each step adds
// linear(h, weight_hh, bias_hh) (aten/src/ATen/native/RNN.cpp's FullLayer).
namespace kiln::py {

extern const char* const kNnRnnSource;
const char* const kNnRnnSource = R"PY(

# ---- rnn.py ----

def _rnn_step(mode, igates, h, c, w_hh, b_hh, w_hr=None):
    # One step of a cell; igates = linear(input, w_ih, b_ih). Returns (h, c).
    if mode == "LSTM":
        gates = F.linear(h, w_hh, b_hh) + igates
        chunks = gates.chunk(4, 1)
        ingate = torch.sigmoid(chunks[0])
        forgetgate = torch.sigmoid(chunks[1])
        cellgate = torch.tanh(chunks[2])
        outgate = torch.sigmoid(chunks[3])
        cy = forgetgate * c + ingate * cellgate
        hy = outgate * torch.tanh(cy)
        if w_hr is not None:
            hy = torch.matmul(hy, w_hr.t())
        return hy, cy
    if mode == "GRU":
        ig = igates.chunk(3, 1)
        hg = F.linear(h, w_hh, b_hh).chunk(3, 1)
        reset_gate = torch.sigmoid(hg[0] + ig[0])
        input_gate = torch.sigmoid(hg[1] + ig[1])
        new_gate = torch.tanh(ig[2] + hg[2] * reset_gate)
        return (h - new_gate) * input_gate + new_gate, None
    pre = F.linear(h, w_hh, b_hh) + igates
    if mode == "RNN_TANH":
        return torch.tanh(pre), None
    return torch.relu(pre), None


# _VF's cell functions. Dynamo keeps each call as one node (torch.lstm_cell,
# ...), as they are ATen builtins; AOTAutograd decomposes them into the math
# below, which the node's replay runs.
def _lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn_step("LSTM", F.linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)


def _gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn_step("GRU", F.linear(input, w_ih, b_ih), hx, None, w_hh, b_hh)[0]


def _rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn_step("RNN_TANH", F.linear(input, w_ih, b_ih), hx, None, w_hh, b_hh)[0]


def _rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn_step("RNN_RELU", F.linear(input, w_ih, b_ih), hx, None, w_hh, b_hh)[0]


_lstm_cell.__kiln_graph_target__ = "torch.lstm_cell"
_gru_cell.__kiln_graph_target__ = "torch.gru_cell"
_rnn_tanh_cell.__kiln_graph_target__ = "torch.rnn_tanh_cell"
_rnn_relu_cell.__kiln_graph_target__ = "torch.rnn_relu_cell"


class _PackedSequence:
    # torch.nn.utils.rnn.PackedSequence (a namedtuple in PyTorch): the steps of
    # sequences sorted by length, time-major, batch_sizes[t] rows at step t.
    def __init__(self, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert_permutation(sorted_indices)
        self.data = data
        self.batch_sizes = batch_sizes
        self.sorted_indices = sorted_indices
        self.unsorted_indices = unsorted_indices

    def __iter__(self):
        return iter((self.data, self.batch_sizes, self.sorted_indices, self.unsorted_indices))

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return (self.data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)[i]

    def __repr__(self):
        return (f"PackedSequence(data={self.data!r}, batch_sizes={self.batch_sizes!r}, "
                f"sorted_indices={self.sorted_indices!r}, unsorted_indices={self.unsorted_indices!r})")

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return _PackedSequence(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self.to("cuda")


def _invert_permutation(permutation):
    if permutation is None:
        return None
    output = torch.empty_like(permutation)
    output.scatter_(0, permutation, torch.arange(0, permutation.numel(), device=permutation.device))
    return output


def _pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    if not isinstance(lengths, torch.Tensor):
        lengths = torch.as_tensor(lengths, dtype=torch.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=torch.int64)
    if enforce_sorted:
        sorted_indices = None
        for i in range(1, lengths.numel()):
            if lengths[i].item() > lengths[i - 1].item():
                _raise("RuntimeError", "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                                       "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                                       "pack_sequence to sidestep this requirement if you do not need ONNX exportability.")
    else:
        lengths, sorted_indices = torch.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if lengths.dim() != 1:
        _raise("RuntimeError", f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.device.type} Long tensor")
    steps = input.transpose(0, 1) if batch_first else input
    batch = steps.size(1)
    if lengths.numel() != batch:
        _raise("RuntimeError", f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.numel()} "
                               f"(batch_size={batch})")
    lens = [int(v) for v in lengths.tolist()]
    if lens and lens[-1] <= 0:
        _raise("RuntimeError", "Length of all samples has to be greater than 0, but found an element in 'lengths' "
                               "that is <= 0")
    if lens and lens[0] > steps.size(0):
        _raise("RuntimeError", f"Expected sequence length to be larger than or equal to {lens[0]}")  # PyTorch checks too
    sizes = []
    pieces = []
    for t in range(lens[0] if lens else 0):
        bs = sum(1 for n in lens if n > t)
        sizes.append(bs)
        pieces.append(steps[t, :bs])
    data = torch.cat(pieces, 0)
    data = _kiln.name_grad_fn(data, "PackPaddedSequenceBackward0") if data.requires_grad else data
    return _PackedSequence(data, torch.tensor(sizes, dtype=torch.int64), sorted_indices, None)


def _pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    max_len = len(sizes)
    if total_length is not None:
        if total_length < max_len:
            _raise("ValueError", "Expected total_length to be at least the length of the longest sequence in input, "
                                 f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    batch = sizes[0]
    data = sequence.data
    rows = []
    offset = 0
    for t in range(max_len):
        bs = sizes[t] if t < len(sizes) else 0
        step = data[offset:offset + bs]
        offset += bs
        if bs < batch:
            pad = torch.full((batch - bs,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
            step = torch.cat([step, pad], 0) if bs > 0 else pad
        rows.append(step)
    padded = torch.stack(rows, 0)
    lengths = torch.tensor([sum(1 for bs in sizes if bs > b) for b in range(batch)], dtype=torch.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    return padded, lengths


def _pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    if padding_side != "right":
        _kiln.raise_unsupported("pad_sequence(padding_side='left')")
    max_len = max(s.size(0) for s in sequences)
    out = []
    for s in sequences:
        if s.size(0) < max_len:
            pad = torch.full((max_len - s.size(0),) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = torch.cat([s, pad], 0)
        out.append(s)
    return torch.stack(out, 0 if batch_first else 1)


def _pack_sequence(sequences, enforce_sorted=True):
    lengths = torch.as_tensor([v.size(0) for v in sequences])
    return _pack_padded_sequence(_pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def _run_packed(self, data, batch_sizes, h0, c0):
    # ATen's PackedLayer / ReversedPackedLayer: each step runs the first
    # batch_sizes[t] rows (the sequences still going); rows that end keep
    # their last hidden state. The input projection is done once, as on the CPU.
    num_directions = 2 if self.bidirectional else 1
    sizes = [int(v) for v in batch_sizes.tolist()]
    layer_input = data
    h_out = []
    c_out = []
    for layer in range(self.num_layers):
        outs = []
        for direction in range(num_directions):
            idx = layer * num_directions + direction
            w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(idx)
            igates = F.linear(layer_input, w_ih, b_ih)
            h_all = h0[idx]
            c_all = c0[idx] if c0 is not None else None
            ys = []
            if direction == 0:
                h, c = h_all, c_all
                done_h, done_c = [], []
                offset = 0
                last = sizes[0]
                for bs in sizes:
                    if bs < last:
                        done_h.append(h[bs:last])
                        done_c.append(c[bs:last] if c is not None else None)
                        h = h[:bs]
                        c = c[:bs] if c is not None else None
                    last = bs
                    h, c = _rnn_step(self.mode, igates[offset:offset + bs], h, c, w_hh, b_hh, w_hr)
                    offset += bs
                    ys.append(h)
                done_h.append(h)
                done_c.append(c)
                done_h.reverse()
                done_c.reverse()
                h_final = torch.cat(done_h, 0)
                c_final = torch.cat(done_c, 0) if c is not None else None
            else:
                offset = igates.size(0)
                last = sizes[-1]
                h = h_all[:last]
                c = c_all[:last] if c_all is not None else None
                for bs in reversed(sizes):
                    if bs > last:
                        h = torch.cat([h, h_all[last:bs]], 0)
                        c = torch.cat([c, c_all[last:bs]], 0) if c is not None else None
                    last = bs
                    h, c = _rnn_step(self.mode, igates[offset - bs:offset], h, c, w_hh, b_hh, w_hr)
                    offset -= bs
                    ys.append(h)
                ys.reverse()
                h_final, c_final = h, c
            outs.append(torch.cat(ys, 0))
            h_out.append(h_final)
            c_out.append(c_final)
        layer_input = outs[0] if num_directions == 1 else torch.cat(outs, 1)
        if self.dropout != 0 and self.training and layer < self.num_layers - 1:
            layer_input = F.dropout(layer_input, self.dropout, True)
    h_n = torch.stack(h_out, 0)
    c_n = torch.stack(c_out, 0) if self.mode == "LSTM" else None
    return layer_input, h_n, c_n


def _forward_packed(self, input, hx):
    # RNN, GRU and LSTM on a PackedSequence: hx is in the caller's batch order.
    num_directions = 2 if self.bidirectional else 1
    max_batch_size = int(input.batch_sizes[0])
    real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
    lstm = self.mode == "LSTM"
    if hx is None:
        h0 = torch.zeros(self.num_layers * num_directions, max_batch_size, real_hidden, dtype=input.data.dtype,
                         device=input.data.device)
        c0 = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.data.dtype,
                         device=input.data.device) if lstm else None
    else:
        h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
        if input.sorted_indices is not None:
            h0 = h0.index_select(1, input.sorted_indices)
            c0 = c0.index_select(1, input.sorted_indices) if c0 is not None else None
    output, h_n, c_n = _run_packed(self, input.data, input.batch_sizes, h0, c0)
    if input.unsorted_indices is not None:
        h_n = h_n.index_select(1, input.unsorted_indices)
        c_n = c_n.index_select(1, input.unsorted_indices) if c_n is not None else None
    packed = _PackedSequence(output, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
    return packed, ((h_n, c_n) if lstm else h_n)


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if isinstance(dropout, bool) or not (isinstance(dropout, int) or isinstance(dropout, float)) or \
                not (0 <= dropout and dropout <= 1):
            _raise("ValueError", "dropout should be a number in range [0, 1] representing the probability of an "
                                 "element being zeroed")
        if not isinstance(bias, bool):
            _raise("TypeError", f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            _raise("TypeError", f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if isinstance(input_size, bool) or not isinstance(input_size, int):
            _raise("TypeError", f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            _raise("ValueError", "input_size must be greater than zero")
        if isinstance(hidden_size, bool) or not isinstance(hidden_size, int):
            _raise("TypeError", f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            _raise("ValueError", "hidden_size must be greater than zero")
        if num_layers <= 0:
            _raise("ValueError", "num_layers must be greater than zero")
        if proj_size < 0:
            _raise("ValueError", "proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            _raise("ValueError", "proj_size has to be smaller than hidden_size")
        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        elif mode == "RNN_TANH" or mode == "RNN_RELU":
            gate_size = hidden_size
        else:
            _raise("ValueError", "Unrecognized RNN mode: " + mode)
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                w_ih = Parameter(torch.empty((gate_size, layer_input_size), device=device, dtype=dtype))
                w_hh = Parameter(torch.empty((gate_size, real_hidden_size), device=device, dtype=dtype))
                b_ih = Parameter(torch.empty(gate_size, device=device, dtype=dtype))
                b_hh = Parameter(torch.empty(gate_size, device=device, dtype=dtype))
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                params = [w_ih, w_hh]
                if bias:
                    names = names + [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    params = params + [b_ih, b_hh]
                if proj_size > 0:
                    names = names + [f"weight_hr_l{layer}{suffix}"]
                    params = params + [Parameter(torch.empty((proj_size, hidden_size), device=device, dtype=dtype))]
                for i in range(len(names)):
                    setattr(self, names[i], params[i])
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        pass

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    def check_input(self, input):
        if input.dtype != getattr(self, self._flat_weights_names[0]).dtype:
            w = getattr(self, self._flat_weights_names[0])
            _raise("ValueError", f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                                 f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        if input.dim() != 3:
            _raise("RuntimeError", f"input must have 3 dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            _raise("RuntimeError", f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                                   f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input):
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        if self.proj_size > 0:
            return (self.num_layers * num_directions, mini_batch, self.proj_size)
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != expected_hidden_size:
            _raise("RuntimeError", msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden):
        self.check_input(input)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input))

    def _layer_weights(self, idx):
        # (w_ih, w_hh, b_ih, b_hh, w_hr) of layer * num_directions + direction; None where absent.
        names = self._all_weights[idx]
        return (getattr(self, names[0]), getattr(self, names[1]), getattr(self, names[2]) if self.bias else None,
                getattr(self, names[3]) if self.bias else None,
                getattr(self, names[-1]) if self.proj_size > 0 else None)

    def _run(self, input, h0, c0):
        # input (T, N, H_in) (batch_first already undone); h0, c0 (layers * dirs, N, H).
        # Returns output (T, N, dirs * H), h_n and c_n (None unless LSTM). As ATen, dropout
        # applies to each layer's output but the last's, in training mode.
        num_directions = 2 if self.bidirectional else 1
        steps = input.size(0)
        layer_input = input
        h_out = []
        c_out = []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(idx)
                h = h0[idx]
                c = c0[idx] if c0 is not None else None
                igates = F.linear(layer_input, w_ih, b_ih)
                ys = []
                order = range(steps) if direction == 0 else range(steps - 1, -1, -1)
                for t in order:
                    h, c = _rnn_step(self.mode, igates[t], h, c, w_hh, b_hh, w_hr)
                    ys.append(h)
                if direction == 1:
                    ys.reverse()
                out = torch.stack(ys, 0)
                if self.mode == "LSTM" and self.proj_size == 0 and out.dtype == torch.float32:
                    # PyTorch runs a float32 LSTM layer on the CPU through oneDNN: its node's name.
                    out = _kiln.name_grad_fn(out, "MkldnnRnnLayerBackward0")
                outs.append(out)
                h_out.append(h)
                c_out.append(c)
            layer_input = outs[0] if num_directions == 1 else torch.cat(outs, 2)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        h_n = torch.stack(h_out, 0)
        c_n = torch.stack(c_out, 0) if self.mode == "LSTM" else None
        return layer_input, h_n, c_n

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _rnn_forward_single(self, name, input, hx):
    # RNN and GRU: hx is one tensor.
    if input.dim() != 2 and input.dim() != 3:
        if name == "RNN":
            _raise("ValueError", f"RNN: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
        _raise("ValueError", f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead")
    num_directions = 2 if self.bidirectional else 1
    is_batched = input.dim() == 3
    batch_dim = 0 if self.batch_first else 1
    if not is_batched:
        input = input.unsqueeze(batch_dim)
        if hx is not None:
            if hx.dim() != 2:
                _raise("RuntimeError", f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
            hx = hx.unsqueeze(1)
    else:
        if hx is not None and hx.dim() != 3:
            _raise("RuntimeError", f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
    max_batch_size = input.size(0) if self.batch_first else input.size(1)
    if hx is None:
        hx = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype,
                         device=input.device)
    self.check_forward_args(input, hx)
    x = input.transpose(0, 1) if self.batch_first else input
    output, hidden, _ = self._run(x, hx, None)
    if self.batch_first:
        output = output.transpose(0, 1)
    if not is_batched:
        output = output.squeeze(batch_dim)
        hidden = hidden.squeeze(1)
    return output, hidden


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            _raise("ValueError", "proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            _raise("ValueError", f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        if isinstance(input, _PackedSequence):
            return _forward_packed(self, input, hx)
        return _rnn_forward_single(self, "RNN", input, hx)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            _raise("ValueError", "proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        if isinstance(input, _PackedSequence):
            return _forward_packed(self, input, hx)
        return _rnn_forward_single(self, "GRU", input, hx)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input):
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden):
        self.check_input(input)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input), "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input), "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        if isinstance(input, _PackedSequence):
            return _forward_packed(self, input, hx)
        num_directions = 2 if self.bidirectional else 1
        if input.dim() != 2 and input.dim() != 3:
            _raise("ValueError", f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
            h_zeros = torch.zeros(self.num_layers * num_directions, max_batch_size, real_hidden_size,
                                  dtype=input.dtype, device=input.device)
            c_zeros = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size,
                                  dtype=input.dtype, device=input.device)
            hx = (h_zeros, c_zeros)
        else:
            if is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    _raise("RuntimeError", f"For batched 3-D input, hx and cx should also be 3-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    _raise("RuntimeError", f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        x = input.transpose(0, 1) if self.batch_first else input
        output, h_n, c_n = self._run(x, hx[0], hx[1])
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(batch_dim)
            return output, (h_n.squeeze(1), c_n.squeeze(1))
        return output, (h_n, c_n)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(torch.empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(torch.empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(torch.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(torch.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        d = _kiln.instance_dict(self)
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in d and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in d and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name, input, hx):
        if input.dim() != 1 and input.dim() != 2:
            _raise("ValueError", f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() != 1 and hx.dim() != 2:
            _raise("ValueError", f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        return input, hx, is_batched


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, is_batched = self._prepare("RNNCell", input, hx)
        if self.nonlinearity == "tanh":
            ret = _rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = _rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            _raise("RuntimeError", f"Unknown nonlinearity: {self.nonlinearity}")
        if not is_batched:
            ret = ret.squeeze(0)
        return ret


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if input.dim() != 1 and input.dim() != 2:
            _raise("ValueError", f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx in range(len(hx)):
                if hx[idx].dim() != 1 and hx[idx].dim() != 2:
                    _raise("ValueError", f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {hx[idx].dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        ret = _lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            return (ret[0].squeeze(0), ret[1].squeeze(0))
        return ret


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        input, hx, is_batched = self._prepare("GRUCell", input, hx)
        ret = _gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            ret = ret.squeeze(0)
        return ret
)PY";

}  // namespace kiln::py
