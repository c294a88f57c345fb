# A break inside torch.no_grad(): the region after it is entered with grad
# mode off and turns it on; its ops must still record autograd history.
import torch

w = torch.ones(3, requires_grad=True)


@torch.compile
def f(x):
    y = x * w
    with torch.no_grad():
        if y.sum() > 0:  # a graph break inside no_grad
            s = 1.0
        else:
            s = 2.0
    return (y * s).sum()


for i in range(2):
    w.grad = None
    loss = f(torch.full((3,), 2.0))
    loss.backward()
    print(loss.item(), w.grad.tolist())
