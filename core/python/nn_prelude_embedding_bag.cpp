// nn.EmbeddingBag and F.embedding_bag in Kiln's Python subset, compiled into
// "torch/nn/modules.py" after the other layers. Each bag gathers its rows
// with F.embedding (so gradients reach the weight as embedding's do) and
// reduces them as ATen's CPU kernel does: rows added in index order, the mean
// divided by the bag's count of non-padding indices, the max by value; an
// empty bag is zeros. sparse=True computes a dense gradient of the same
// values (Kiln has no sparse gradients, as for nn.Embedding).
namespace kiln::py {

extern const char* const kNnEmbeddingBagSource;
const char* const kNnEmbeddingBagSource = R"PY(

# ---- EmbeddingBag ----
def _embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                   sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if weight.dtype == torch.long and input.is_floating_point():
        input, weight = weight, input
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        _raise("ValueError", f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
               f"must have the same shape as the input ({input.shape})")
    if not weight.dim() == 2:
        _raise("ValueError", f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            _raise("ValueError", "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                   f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = torch.arange(0, input.numel(), input.size(1), dtype=input.dtype, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            _raise("ValueError", "offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            _raise("ValueError", "offsets has to be a 1D Tensor")
    else:
        _raise("ValueError", f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        _raise("ValueError", f"mode has to be one of sum, mean or max")
    if max_norm is not None:
        _kiln.raise_unsupported("F.embedding_bag(max_norm=...) renormalizes the weight in place: not supported by Kiln")
    if per_sample_weights is not None and mode != "sum":
        _raise("NotImplementedError", "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
               f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on GitHub.")
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx = weight.size(0) + padding_idx
    starts = offsets.tolist()
    n = input.size(0)
    if include_last_offset:
        ends = starts[1:]
        starts = starts[:-1]
    else:
        ends = starts[1:] + [n]
    if len(starts) > 0 and starts[0] != 0:
        _raise("RuntimeError", f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
               f"position 0. However, got {starts[0]}")
    if len(ends) > 0 and ends[-1] > n:
        _raise("RuntimeError", f"offsets[-1] can not be greater than input's length {n}, but got offsets[-1] of {ends[-1]}")
    rows = F.embedding(input, weight, None, None, 2.0, scale_grad_by_freq, sparse)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    keep = None
    if padding_idx is not None:
        keep = (input != padding_idx).tolist()
    zero = weight.new_zeros(weight.size(1))
    bags = []
    for s, e in zip(starts, ends):
        if keep is not None:
            idx = [i for i in range(s, e) if keep[i]]
            bag = rows[torch.tensor(idx, dtype=torch.long)] if len(idx) < e - s else rows[s:e]
        else:
            bag = rows[s:e]
        count = bag.size(0)
        if count == 0:
            bags.append(zero)
        elif mode == "max":
            bags.append(bag.max(0)[0])
        elif mode == "mean":
            bags.append(bag.sum(0) / count)
        else:
            bags.append(bag.sum(0))
    if len(bags) == 0:
        return weight.new_zeros(0, weight.size(1))
    out = torch.stack(bags)
    return _kiln.name_grad_fn(out, "EmbeddingBagBackward0") if out.requires_grad else out


class EmbeddingBag(Module):
    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < self.num_embeddings, "padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -self.num_embeddings, "padding_idx must be within num_embeddings"
                padding_idx = self.num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(torch.empty((num_embeddings, embedding_dim), device=device, dtype=dtype))
            self.reset_parameters()
        else:
            assert list(_weight.shape) == [num_embeddings, embedding_dim], \
                "Shape of weight does not match num_embeddings and embedding_dim"
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with torch.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return _embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                              self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq=True"
        s += f", mode='{self.mode}'"
        if self.sparse:
            s += ", sparse=True"
        if self.include_last_offset is not False:
            s += ", include_last_offset=True"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
)PY";

}  // namespace kiln::py
