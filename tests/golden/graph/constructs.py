class GraphModule(torch.nn.Module):
    def forward(self, s0: "Sym(s0)", L_x_: "f32[s0, 8][8, 1]cuda:0", L_idx_: "i64[4][1]cuda:0", L_t_: "FunctionalTensor(bf16[2, 2][2, 1]cpu)"):
        l_x_ = L_x_
        l_idx_ = L_idx_
        l_t_ = L_t_

        # No stacktrace found for following nodes
        _tensor_constant0 = self._tensor_constant0
        l__self___layer1_0_conv1_weight = getattr(self.layer1, "0").conv1.weight

        # File: /home/dev/models/m.py:10 in forward, code: y = -(x * 2 + 1)
        mul: "f32[s0, 8][8, 1]cuda:0" = l_x_ * 2
        add: "f32[s0, 8][8, 1]cuda:0" = mul + 1;  mul = None
        neg: "f32[s0, 8][8, 1]cuda:0" = -add;  add = None

        # File: /home/dev/models/m.py:11 in forward, code: n = y.size(0)
        size = neg.size(0)
        shape = neg.shape
        getitem = shape[-1];  shape = None
        sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(neg, 0)
        slice_1: "f32[s0 - 1, 8][8, 1]cuda:0" = neg[(slice(1, None, None), Ellipsis)]

        # Annotation: {'stage': 1} # recompute: MUST_SAVE File: /home/dev/models/m.py:12 in forward, code: z = torch.where(y > 0, y, -inf)
        gt: "b8[s0, 8][8, 1]cuda:0" = neg > 0
        full: "f32[][]cuda:0" = torch.ops.aten.full.default([], -inf, dtype = torch.float32, layout = torch.strided, device = device(type='cuda', index=0), pin_memory = False)
        where: "f32[s0, 8][8, 1]cuda:0" = torch.ops.aten.where.self(gt, neg, full);  gt = neg = full = None

        # File: /home/dev/models/m.py:13 in forward, code: z += 1e-05
        where += 1e-05;  where_1: "f32[s0, 8][8, 1]cuda:0" = where;  where = None
        l_x_[l_idx_] = 0.5;  setitem = l_x_;  l_idx_ = setitem = None

        # File: /home/dev/models/m.py:14 in forward, code: w = self.fc(z).view(8, -1)
        fc: "f32[s0, 16][16, 1]cuda:0" = self.fc(where_1);  where_1 = None
        view: "f32[8, 2*s0][2*s0, 1]cuda:0" = fc.view(8, -1);  fc = None
        gelu: "f32[8, 2*s0][2*s0, 1]cuda:0" = torch.ops.aten.gelu.default(view, approximate = 'tanh');  view = None
        fill: "f32[8, 2*s0][2*s0, 1]cuda:0" = torch.ops.aten.fill.Scalar(gelu, nan);  gelu = None
        clone: "f32[8, 2*s0][2*s0, 1]cuda:0" = torch.ops.aten.clone.default(fill, memory_format = torch.contiguous_format);  fill = None
        convert_element_type: "bf16[8, 2*s0][2*s0, 1]cuda:0" = torch.ops.prims.convert_element_type.default(clone, torch.bfloat16);  clone = None
        tag = torch.ops.test.tag.default(convert_element_type, "it's", 'a\nb', 18446744073709551615, 1e+16, 0.1, -0.0, True, None, ())
        relu: "f32[s0, 8][8, 1]cuda:0" = torch.nn.functional.relu(l_x_, inplace = False);  l_x_ = None
        linear = torch._C._nn.linear(relu, l__self___layer1_0_conv1_weight, _tensor_constant0);  relu = l__self___layer1_0_conv1_weight = _tensor_constant0 = None
        add_1 = operator.add(size, getitem, extra = 1);  size = getitem = None
        return (convert_element_type, sym_size_int, slice_1, tag, linear, add_1, l_t_, s0)
