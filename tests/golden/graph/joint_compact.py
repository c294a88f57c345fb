class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[4][1]cpu"; tangents_1: "f32[4][1]cpu"; 

        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        # No stacktrace found for following nodes
        cos: "f32[4][1]cpu" = torch.ops.aten.cos.default(primals_1);  primals_1 = None
        mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, cos);  tangents_1 = cos = None
        return pytree.tree_unflatten([mul, None], self._out_spec)
