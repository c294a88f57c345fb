class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[3][1]cpu", L_pred_: "b8[][]cpu"):
        l_x_ = L_x_
        l_pred_ = L_pred_

        # File: /home/dev/models/cond.py:9 in forward, code: return torch.cond(pred, true_fn, false_fn, (x,))
        cond_true_0 = self.cond_true_0
        cond_false_0 = self.cond_false_0
        cond = torch.ops.higher_order.cond(l_pred_, cond_true_0, cond_false_0, (l_x_,));  l_pred_ = cond_true_0 = cond_false_0 = l_x_ = None
        getitem: "f32[3][1]cpu" = cond[0];  cond = None
        return (getitem,)

    class cond_true_0(torch.nn.Module):
        def forward(self, l_x_: "f32[3][1]cpu"):
            l_x__1 = l_x_

            # File: /home/dev/models/cond.py:5 in true_fn, code: return (x.sin(),)
            sin: "f32[3][1]cpu" = l_x__1.sin();  l_x__1 = None
            return (sin,)

    class cond_false_0(torch.nn.Module):
        def forward(self, l_x_: "f32[3][1]cpu"):
            l_x__1 = l_x_

            # File: /home/dev/models/cond.py:7 in false_fn, code: return (x.cos(),)
            cos: "f32[3][1]cpu" = l_x__1.cos();  l_x__1 = None
            return (cos,)
