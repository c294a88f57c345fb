# Writes ops.json and ops.safetensors beside this file: conformance cases for
# the ATen ops Kiln gained with the real-program work (normalizations, transposed
# convolutions, padding modes, losses, 3-D pooling, QR, ...) that the reference
# op corpus does not cover, in its format (see ../../../../shared/reference/README.md).
# Run with PyTorch 2.11 on the device: python3 generate.py
import json
import os

import struct

import torch


def save_file(named, path):
    # safetensors: an 8-byte little-endian header length, the JSON header, the raw bytes.
    kinds = {torch.float32: "F32", torch.int64: "I64", torch.int32: "I32", torch.bool: "BOOL"}
    header, blobs, offset = {}, [], 0
    for name in sorted(named):
        t = named[name].contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": kinds[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)

torch.manual_seed(2024)
aten = torch.ops.aten
here = os.path.dirname(os.path.abspath(__file__))
cases, tensors = [], {}


def enc(v, name):
    if isinstance(v, torch.Tensor):
        tensors[name] = v.detach().contiguous().clone()
        return {"tensor": name}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, float):
        return {"float": v}
    if v is None:
        return {"none": True}
    if isinstance(v, str):
        return {"str": v}
    if isinstance(v, (list, tuple)):
        return {"list": [enc(x, f"{name}.{i}") for i, x in enumerate(v)]}
    raise TypeError(type(v))


def case(op, args, kwargs=None, grad=True, grad_args=None, graded_outputs=1):
    # grad_args: the argument indices differentiated (default: every float tensor);
    # graded_outputs: how many leading outputs get a random gradient.
    cid = "w%03d" % len(cases)
    kwargs = kwargs or {}
    fn = eval("aten." + op.replace("aten::", ""))
    leaves = [a.detach().clone().requires_grad_(grad and a.is_floating_point() and (grad_args is None or i in grad_args))
              if isinstance(a, torch.Tensor) else a for i, a in enumerate(args)]
    with torch.enable_grad():
        out = fn(*leaves, **kwargs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    entry = {"id": cid, "op": op,
             "args": [enc(a, f"{cid}.arg{i}") for i, a in enumerate(leaves)],
             "kwargs": {k: enc(v, f"{cid}.kw.{k}") for k, v in kwargs.items()},
             "outputs": [enc(o, f"{cid}.out{i}") for i, o in enumerate(outs)], "tag": ""}
    inputs = [(i, a) for i, a in enumerate(leaves) if isinstance(a, torch.Tensor) and a.requires_grad]
    first = outs[0]
    if grad and inputs and isinstance(first, torch.Tensor) and first.requires_grad:
        graded = outs[:graded_outputs]
        gouts = [torch.randn_like(o) for o in graded]
        grads = torch.autograd.grad(graded, [a for _, a in inputs], gouts, allow_unused=True)
        entry["grad_outputs"] = [enc(g, f"{cid}.gout{i}")["tensor"] for i, g in enumerate(gouts)]
        entry["grad_inputs"] = {}
        for (i, a), g in zip(inputs, grads):
            if g is None:
                g = torch.zeros_like(a)
            entry["grad_inputs"][f"{cid}.arg{i}"] = enc(g, f"{cid}.grad.arg{i}")["tensor"]
    cases.append(entry)


r = torch.randn
# Normalizations (GroupNorm, InstanceNorm, BatchNorm without stats).
case("aten::native_group_norm.default", [r(2, 6, 3, 3), r(6), r(6), 2, 6, 9, 3, 1e-5])
case("aten::native_group_norm.default", [r(3, 4, 5), None, None, 3, 4, 5, 2, 1e-5])
case("aten::_native_batch_norm_legit.no_stats", [r(2, 3, 4, 4), r(3), r(3), True, 0.1, 1e-5])
case("aten::_native_batch_norm_legit_no_training.default",
     [r(2, 3, 4), r(3), r(3), r(3), r(3).abs() + 0.5, 0.1, 1e-5], grad_args={0, 1, 2})
# Transposed convolutions (ConvTranspose1d/2d/3d), groups and output padding.
case("aten::convolution.default", [r(1, 4, 5, 5), r(4, 3, 3, 3), r(3), [2, 2], [1, 1], [1, 1], True, [1, 1], 1])
case("aten::convolution.default", [r(2, 4, 6), r(4, 2, 3), r(4), [2], [0], [1], True, [0], 2])
case("aten::convolution.default", [r(1, 2, 3, 3, 3), r(2, 2, 2, 2, 2), None, [1, 1, 1], [0, 0, 0], [1, 1, 1], True, [0, 0, 0], 1])
case("aten::convolution.default", [r(1, 2, 7, 7), r(4, 2, 3, 3), r(4), [1, 1], [2, 2], [2, 2], False, [0, 0], 1])
# Padding modes.
case("aten::pad.default", [r(2, 3, 4, 5), [1, 2, 2, 1], "reflect"])
case("aten::pad.default", [r(2, 3, 6), [2, 3], "replicate"])
case("aten::pad.default", [r(1, 2, 3, 4, 4), [1, 1, 1, 1, 1, 1], "replicate"])
case("aten::pad.default", [r(1, 2, 5), [2, 1], "circular"])
case("aten::pad.default", [r(2, 3, 4), [1, 2], "constant", 0.5])
# Losses.
p = torch.rand(4, 5) * 0.9 + 0.05
# The losses are differentiated with respect to their input only.
case("aten::binary_cross_entropy.default", [p, (torch.rand(4, 5) > 0.5).float(), r(4, 5).abs(), 1], grad_args={0})
case("aten::binary_cross_entropy_with_logits.default", [r(4, 5), torch.rand(4, 5), None, r(5).abs(), 1], grad_args={0})
case("aten::smooth_l1_loss.default", [r(6, 3), r(6, 3), 1, 0.5], grad_args={0})
case("aten::huber_loss.default", [r(6, 3), r(6, 3), 0, 0.7], grad_args={0})
case("aten::mse_loss.default", [r(3, 4), r(3, 4), 2], grad_args={0})
case("aten::kl_div.default", [torch.log_softmax(r(4, 6), 1), torch.softmax(r(4, 6), 1), 1], {"log_target": False}, grad_args={0})
case("aten::nll_loss_nd.default", [torch.log_softmax(r(3, 5, 2), 1), torch.randint(0, 5, (3, 2)), None, 1, -100], grad_args={0})
# Activations.
case("aten::softplus.default", [r(5, 4) * 10, 2.0, 5.0])
case("aten::silu.default", [r(4, 5)])
case("aten::relu6.default", [r(4, 5) * 4])
case("aten::logit.default", [torch.rand(10) * 0.9 + 0.05, 1e-6])
case("aten::erfinv.default", [torch.rand(10) * 1.8 - 0.9])
# Pooling in 1-D and 3-D, adaptive max.
case("aten::adaptive_max_pool2d.default", [r(1, 2, 5, 7), [2, 3]])
case("aten::max_pool3d_with_indices.default", [r(1, 2, 4, 4, 4), [2, 2, 2], [2, 2, 2]])
case("aten::avg_pool3d.default", [r(1, 2, 4, 4, 4), [2, 2, 2]])
case("aten::_adaptive_avg_pool3d.default", [r(1, 2, 4, 5, 6), [2, 1, 3]])
case("aten::avg_pool1d.default", [r(2, 3, 9), [3], [2], [1]])
case("aten::im2col.default", [r(1, 2, 5, 5), [2, 3], [1, 1], [1, 0], [2, 1]])
case("aten::col2im.default", [r(1, 12, 9), [5, 5], [2, 3], [1, 1], [1, 0], [2, 1]])
# Pointwise and reductions.
case("aten::atan2.default", [r(5), r(5)])
case("aten::lerp.Tensor", [r(4), r(4), torch.rand(4)])
case("aten::addcmul.default", [r(3, 4), r(3, 4), r(4)], {"value": 0.5})
case("aten::addcdiv.default", [r(3, 4), r(3, 4), r(4).abs() + 1], {"value": -2.0})
case("aten::baddbmm.default", [r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)], {"beta": 0.5, "alpha": 2.0})
case("aten::xlogy.Tensor", [r(6), torch.rand(6) + 0.1])
case("aten::hypot.default", [r(5), r(5)])
case("aten::cumprod.default", [r(3, 4), 1])
case("aten::tril.default", [r(4, 5), -1])
case("aten::amin.default", [r(3, 4, 5), [0, 2], True])
case("aten::median.dim", [r(3, 7), 1, True])
case("aten::kthvalue.default", [r(4, 6), 2, 1])
case("aten::scatter_add.default", [r(3, 5), 1, torch.randint(0, 5, (3, 4)), r(3, 4)])
case("aten::index_add.default", [r(5, 3), 0, torch.tensor([0, 4, 2, 0]), r(4, 3)], {"alpha": 1.5})
case("aten::frac.default", [r(8) * 5])
case("aten::nan_to_num.default", [torch.tensor([1.0, float("nan"), float("inf"), -float("inf")]), 0.5, 100.0, -100.0], grad=False)
case("aten::linalg_qr.default", [r(5, 3)], grad=False)
case("aten::linalg_qr.default", [r(3, 4), "complete"], grad=False)
# Sampling for spatial transformers and image resizing (ViT position embeddings):
# grid values reach past [-1, 1] so that every padding mode has work to do.
grid = torch.rand(2, 4, 5, 2) * 2.4 - 1.2
case("aten::affine_grid_generator.default", [r(2, 2, 3), [2, 3, 4, 5], False])
case("aten::affine_grid_generator.default", [r(1, 2, 3), [1, 1, 3, 3], True])
case("aten::grid_sampler_2d.default", [r(2, 3, 6, 7), grid, 0, 0, False])
case("aten::grid_sampler_2d.default", [r(2, 3, 6, 7), grid, 0, 1, True])
case("aten::grid_sampler_2d.default", [r(2, 3, 6, 7), grid, 0, 2, False])
case("aten::grid_sampler_2d.default", [r(2, 3, 6, 7), grid, 1, 0, False], grad_args={0})
case("aten::grid_sampler_2d.default", [r(2, 3, 6, 7), grid, 2, 1, True])
case("aten::upsample_bicubic2d.default", [r(1, 2, 5, 6), [7, 9], False])
case("aten::upsample_bicubic2d.default", [r(1, 2, 5, 6), [3, 4], True])

# Cholesky, triangular solves and inverses (MultivariateNormal, normalizing flows).
def spd(*s):
    m = torch.randn(*s)
    return m @ m.mT + s[-1] * torch.eye(s[-1])


# Well-conditioned factors (diagonal 2..3): the gradients of an inverse grow with the
# condition number, and with them float32's rounding in any summation order.
def tri(*s, upper=False):
    m = torch.randn(*s) * 0.3
    m = m.triu() if upper else m.tril()
    return m + torch.diag_embed(torch.rand(*s[:-1]) + 2)


case("aten::linalg_cholesky_ex.default", [spd(4, 4)])
case("aten::linalg_cholesky_ex.default", [spd(2, 3, 3)], {"upper": True})
case("aten::linalg_solve_triangular.default", [tri(4, 4), r(4, 3)], {"upper": False})
case("aten::linalg_solve_triangular.default", [tri(2, 3, 3, upper=True), r(3, 2)], {"upper": True, "left": True})
case("aten::linalg_solve_triangular.default", [tri(3, 3), r(2, 5, 3)], {"upper": False, "left": False, "unitriangular": True})
case("aten::cholesky_inverse.default", [tri(4, 4)])
case("aten::cholesky_inverse.default", [tri(2, 3, 3, upper=True), True])
case("aten::linalg_inv_ex.default", [spd(4, 4)])
case("aten::linalg_inv_ex.default", [r(2, 3, 3) + 3 * torch.eye(3)])

# LU factorization (normalizing flows' invertible 1x1 convolutions). Diagonally
# dominant inputs, so that PyTorch's and Kiln's LAPACK pick the same pivots.
def dd(*s):
    m = torch.randn(*s)
    return m + 3 * torch.eye(s[-2], s[-1])


case("aten::linalg_lu_factor_ex.default", [dd(4, 4)])
case("aten::linalg_lu_factor_ex.default", [dd(2, 3, 5)])
case("aten::linalg_lu_factor_ex.default", [dd(5, 3)])
case("aten::linalg_lu.default", [dd(4, 4)])
case("aten::linalg_lu.default", [dd(2, 3, 5)])
case("aten::linalg_lu.default", [dd(5, 3)])
lu43, piv43 = torch.linalg.lu_factor(dd(4, 3))
case("aten::lu_unpack.default", [lu43, piv43])
case("aten::lu_unpack.default", [dd(2, 3, 3), torch.linalg.lu_factor(dd(2, 3, 3))[1], True, False])

# Determinants (_linalg_det, _linalg_slogdet: torch.det, slogdet, logdet). Their
# own seed, so the cases do not depend on the draws above. A singular matrix
# whose U gets an exact zero pivot: PyTorch's det gradient there is zero.
torch.manual_seed(2411)
case("aten::_linalg_det.default", [r(4, 4)])
case("aten::_linalg_det.default", [r(2, 3, 3)])
case("aten::_linalg_det.default", [dd(5, 5)])
case("aten::_linalg_det.default", [torch.tensor([[1.0, 2.0], [2.0, 4.0]])])
case("aten::_linalg_det.default", [r(2, 0, 0)])
case("aten::_linalg_slogdet.default", [r(4, 4)], graded_outputs=2)
case("aten::_linalg_slogdet.default", [r(3, 2, 3, 3)], graded_outputs=2)

# Scaled dot-product attention as PyTorch's CPU graphs carry it
# (_scaled_dot_product_flash_attention_for_cpu: output and logsumexp; its
# gradient is the op's own backward). Their own seed. Shapes [B, H, L, E]
# (the CPU kernel wants one head size for q, k and v, and a mask of the
# query's dtype: SDPA turns a boolean mask into one first): L != S, causal,
# float masks broadcast over batch and heads, an explicit scale.
torch.manual_seed(2611)
sdpa = "aten::_scaled_dot_product_flash_attention_for_cpu.default"
case(sdpa, [r(2, 3, 5, 4), r(2, 3, 5, 4), r(2, 3, 5, 4)])
case(sdpa, [r(1, 2, 4, 8), r(1, 2, 6, 8), r(1, 2, 6, 8), 0.0, True])
case(sdpa, [r(2, 2, 3, 4), r(2, 2, 7, 4), r(2, 2, 7, 4)], {"attn_mask": r(3, 7), "scale": 0.3})
case(sdpa, [r(1, 3, 4, 4), r(1, 3, 4, 4), r(1, 3, 4, 4)], {"attn_mask": r(1, 1, 4, 4)})

with open(os.path.join(here, "ops.json"), "w") as f:
    json.dump({"torch_version": torch.__version__, "cases": cases}, f, indent=1)
save_file(tensors, os.path.join(here, "ops.safetensors"))
print(len(cases), "cases,", sum(1 for c in cases if "grad_outputs" in c), "with gradients")
