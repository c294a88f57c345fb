// F.affine_grid, F.grid_sample and F.dropout2d's checks in Kiln's Python subset, compiled into
// "torch/nn/modules.py" after the other layers and published in
// torch.nn.functional. They are Python here because they are Python in
// PyTorch 2.11's torch/nn/functional.py: the argument checks with their
// exception types and messages, the align_corners warnings (at the caller's
// line, once per line, as 2.11 reports them), and the builtins they call
// (torch.affine_grid_generator, torch.grid_sampler), which is what Dynamo
// records when it traces into them.
namespace kiln::py {

extern const char* const kNnVisionSource;
const char* const kNnVisionSource = R"PY(

# ---- functional.py: affine_grid and grid_sample ----
import warnings

_ALIGN_CORNERS_DEFAULT_WARNING = (
    "Default grid_sample and affine_grid behavior has changed "
    "to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. "
    "See the documentation of grid_sample for details."
)


def _affine_grid(theta, size, align_corners=None):
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_DEFAULT_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        _raise("ValueError", f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            _raise("ValueError", f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {theta.shape}.")
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            _raise("ValueError", f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got {theta.shape}.")
        spatial_size = size[-3:]
    else:
        _raise("NotImplementedError", "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
               f"respectively. Got size {size}.")
    if align_corners and min(spatial_size) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
                      "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        _raise("ValueError", f"Expected non-zero, positive output size. Got {size}")
    return torch.affine_grid_generator(theta, size, align_corners)


def _grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if mode != "bilinear" and mode != "nearest" and mode != "bicubic":
        _raise("ValueError", "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
               f"but got: '{mode}'")
    if padding_mode != "zeros" and padding_mode != "border" and padding_mode != "reflection":
        _raise("ValueError", "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
               f"'reflection', but got: '{padding_mode}'")
    if mode == "bilinear":
        mode_enum = 0
    elif mode == "nearest":
        mode_enum = 1
    else:
        mode_enum = 2
    if padding_mode == "zeros":
        padding_mode_enum = 0
    elif padding_mode == "border":
        padding_mode_enum = 1
    else:
        padding_mode_enum = 2
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_DEFAULT_WARNING, stacklevel=2)
        align_corners = False
    return torch.grid_sampler(input, grid, mode_enum, padding_mode_enum, align_corners)


# ---- functional.py: dropout2d's warnings, then the native feature dropout ----
_native_dropout2d = F.dropout2d


def _dropout2d(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        _raise("ValueError", f"dropout probability has to be between 0 and 1, but got {p}")
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warn_msg = (
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout2d "
            "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs)."
        )
        warnings.warn(warn_msg, stacklevel=2)
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _native_dropout2d(input, p, training, inplace)

)PY";

}  // namespace kiln::py
