class joint_helper(torch.nn.Module):
    def forward(
        self,
        primals,
        tangents,
    ):
        primals_1: "f32[4][1]cpu"  # PlainAOTInput(idx=0)
        tangents_1: "f32[4][1]cpu"  # TangentAOTInput(output=PlainAOTOutput(idx=0))
        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        # File: /home/dev/models/m.py:3 in f, code: return x.sin()
        sin: "f32[4][1]cpu" = torch.ops.aten.sin.default(primals_1)
        cos: "f32[4][1]cpu" = torch.ops.aten.cos.default(primals_1);  primals_1 = None
        mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, cos);  tangents_1 = cos = None
        return pytree.tree_unflatten([
            sin,  # PlainAOTOutput(idx=0)
            mul,  # GradAOTOutput(grad_of=PlainAOTInput(idx=0))
        ], self._out_spec)
