# einops' rearrange/repeat/reduce/einsum/pack/unpack/parse_shape and its layers on torch
# tensors, each checked against the same movement written with plain torch ops; the
# EinopsError texts for the common pattern mistakes.
import torch
import einops
from einops import rearrange, repeat, reduce, einsum, pack, unpack, parse_shape
from einops.layers.torch import Rearrange, Reduce

torch.manual_seed(0)
x = torch.randn(2, 3, 4, 6)

y = rearrange(x, 'b c h w -> b h w c')
print(y.shape, torch.equal(y, x.permute(0, 2, 3, 1)))
y = rearrange(x, 'b c (h p) (w q) -> b (h w) (p q c)', p=2, q=3)
ref = x.reshape(2, 3, 2, 2, 2, 3).permute(0, 2, 4, 3, 5, 1).reshape(2, 4, 18)
print(y.shape, torch.equal(y, ref))
y = rearrange(x, 'b ... w -> b w ...')
print(y.shape, torch.equal(y, x.permute(0, 3, 1, 2)))
y = rearrange(x, 'b c h w -> (b c) 1 h w ()')
print(y.shape, torch.equal(y, x.reshape(6, 1, 4, 6, 1)))
y = rearrange(x, '... -> (...)')
print(y.shape, torch.equal(y, x.reshape(-1)))
print(rearrange([torch.arange(3), torch.arange(3) * 10], 'k n -> n k'))

z = repeat(torch.arange(3), 'n -> n r', r=2)
print(z)
z = repeat(x, 'b c h w -> b c (h 2) (w k)', k=2)
print(z.shape, torch.equal(z, x.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)))
z = repeat(torch.ones(4), 'd -> b t d', b=2, t=3)
print(z.shape, z.stride())

r = reduce(x, 'b c (h 2) (w 3) -> b c h w', 'max')
print(r.shape, torch.equal(r, x.reshape(2, 3, 2, 2, 2, 3).amax(dim=(3, 5))))
print(torch.allclose(reduce(x, 'b c h w -> b c', 'mean'), x.mean(dim=(2, 3))))
print(torch.allclose(reduce(x, 'b c h w -> c', 'sum'), x.sum(dim=(0, 2, 3))))
print(reduce(torch.arange(1, 7).reshape(2, 3), 'a b -> a', 'prod'))
print(reduce(x, 'b c h w -> b', lambda t, axes: t.amin(dim=axes)).shape)

a, b = torch.randn(2, 5, 4), torch.randn(2, 4, 3)
print(torch.allclose(einsum(a, b, 'batch i k, batch k j -> batch i j'), a @ b))
print(einsum(a, 'batch i k -> batch').shape)

packed, shapes = pack([torch.ones(2, 3), torch.zeros(2, 4, 5), torch.full((2,), 7.0)], 'b *')
print(packed.shape, shapes)
parts = unpack(packed, shapes, 'b *')
print([p.shape for p in parts], parts[2])
print(parse_shape(x, 'b c _ w'), parse_shape(x, 'b ...'))

layer = torch.nn.Sequential(Rearrange('b c (h p) w -> b h (p c w)', p=2), Reduce('b h d -> b d', 'mean'))
print(layer)
print(torch.allclose(layer(x), x.reshape(2, 3, 2, 2, 6).permute(0, 2, 3, 1, 4).reshape(2, 2, 36).mean(1)))

for args in [(x, 'b c h -> b c h'), (x, 'b c h w -> b c h'), (x, 'b c (h p) w -> b c h w', {'p': 3}),
             (x, 'b c (h p) w -> b c h p w', {'p': 3}), (x, 'b c h w -> b c (h w) d')]:
    kwargs = args[2] if len(args) > 2 else {}
    try:
        rearrange(args[0], args[1], **kwargs)
    except einops.EinopsError as e:
        print(type(e).__name__, isinstance(e, RuntimeError), repr(str(e)))
try:
    repeat(x, 'b c h w -> b c h w n')
except einops.EinopsError as e:
    print(str(e).splitlines()[-1])
try:
    reduce(x, 'b c h w -> b c', 'median')
except einops.EinopsError as e:
    print(str(e).splitlines()[-1])


@torch.compile
def patches(img):
    return rearrange(img, 'b c (h p) (w q) -> b (h w) (p q c)', p=2, q=3).sum(-1)


print(torch.allclose(patches(x), ref.sum(-1)))
