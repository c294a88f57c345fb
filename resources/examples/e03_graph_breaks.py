# Graph breaks: print, a data-dependent branch, .item(), two explicit graph_break() calls, static shape checks, explain() counts.
import torch
import torch._dynamo


def f_print(x):
    y = x.sin()
    print("inside f_print", y.shape)
    return y.cos() * 2


def f_branch(x):
    y = x * 3
    if y.sum() > 0:
        return y.relu()
    return -y


def f_item(x):
    s = x.abs().sum().item()
    return x / (s + 1.0)


def f_two_breaks(x):
    a = x + 1
    torch._dynamo.graph_break()
    b = a * a
    torch._dynamo.graph_break()
    return b - 1


def f_static_checks(x, flag=True):
    if x.shape[0] > 2 and flag:
        return torch.tanh(x) + x.size(1)
    return x


torch.manual_seed(1)
x = torch.randn(4, 5)
funcs = [f_print, f_branch, f_item, f_two_breaks, f_static_checks]
for fn in funcs:
    out = torch.compile(fn)(x)
    print(fn.__name__, round(out.sum().item(), 4))
print("other branch", torch.compile(f_branch)(-x.abs()).sum().item())
for fn in funcs:
    torch._dynamo.reset()
    ex = torch._dynamo.explain(fn)(x)
    print(f"{fn.__name__}: graphs={ex.graph_count} breaks={ex.graph_break_count} ops={ex.op_count}")
