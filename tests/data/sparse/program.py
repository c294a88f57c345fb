# Sparse COO tensors as graph networks use them (pytorch/examples' GCN and
# GAT: a normalized adjacency matrix, sparse features, sparse @ dense
# products with gradients), printing, coalescing and PyTorch's errors.
# Compared with PyTorch 2.11's output (expected.txt).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

print("== construct")
indices = torch.tensor([[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]])
values = torch.tensor([3.0, 4.0, 5.0, 1.5, -2.0])
s = torch.sparse_coo_tensor(indices, values, (3, 3))
print(s)
print(s.is_sparse, s.layout, s.shape, s.size(1), s.dim(), s._nnz(), s.is_coalesced(), s.dtype, s.sparse_dim(), s.dense_dim())
print(torch.ones(2).layout, torch.ones(2).is_sparse)
c = s.coalesce()
print(c)
print(c.indices(), c.values(), c.is_coalesced())
print(s.to_dense())
print(torch.sparse_coo_tensor(indices, values).shape, torch.sparse_coo_tensor(indices, torch.ones(5), (3, 4), dtype=torch.int64))
print(torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (2, 2)))

print("== to_sparse")
dense = torch.tensor([[0.0, 2.5, 0.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 4.0]])
sp = dense.to_sparse()
print(sp)
print(torch.diag(torch.tensor([1.0, 0.0, 3.0])).to_sparse().to_dense())
print(sp.t().to_dense(), (sp * 2).to_dense(), (sp / 4).coalesce().values(), (-sp).to_dense())

print("== products")
x = torch.randn(3, 4, requires_grad=True)
y = torch.sparse.mm(s, x)
print(y)
(y * torch.arange(4.0)).sum().backward()
print(x.grad)
w = torch.randn(2, 3)
print(torch.mm(w, c).shape, (torch.mm(w, c) - w @ c.to_dense()).abs().max().item() < 1e-5)
print(torch.spmm(c, x.detach()).shape, (s @ x.detach()).shape, torch.matmul(s, x.detach()).shape)
print(torch.mm(c, c).to_dense())

print("== sums")
print(torch.eye(3) + s, torch.eye(3) - s)
try:
    s + torch.eye(3)
except RuntimeError as e:
    print("RuntimeError:", e)
print((s + s).coalesce().values(), (s - s).coalesce().values(), s.sum())

print("== graph convolution")
nodes, feats, classes = 12, 8, 3
src = torch.randint(0, nodes, (30,))
dst = torch.randint(0, nodes, (30,))
adj = torch.sparse_coo_tensor(torch.stack([src, dst]), torch.ones(30), (nodes, nodes), dtype=torch.int64)
adj = torch.eye(nodes) + adj
degree = torch.sqrt(1 / torch.sum(adj, dim=1))
degree[degree == float("inf")] = 0
degree = torch.diag(degree).to_sparse()
adj = (degree @ adj @ degree).to_sparse()
features = (torch.rand(nodes, feats) < 0.3).float().to_sparse()
labels = torch.randint(0, classes, (nodes,))


class GraphConv(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.kernel = nn.Parameter(torch.Tensor(n_in, n_out))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x, a):
        return torch.spmm(a, torch.mm(x, self.kernel)) + self.bias


layer1, layer2 = GraphConv(feats, 6), GraphConv(6, classes)
optimizer = torch.optim.Adam(list(layer1.parameters()) + list(layer2.parameters()), lr=0.05)
for step in range(6):
    optimizer.zero_grad()
    out = layer2(F.relu(layer1(features, adj)), adj)
    loss = F.cross_entropy(out, labels)
    loss.backward()
    optimizer.step()
    print(step, round(loss.item(), 5), round(layer1.kernel.grad.abs().sum().item(), 5))

print("== errors")
# An index past the size is Kiln's error always; PyTorch checks only when asked.
for make in (lambda: torch.sparse_coo_tensor(indices, values[:3], (3, 3)),
             lambda: s.indices(),
             lambda: torch.sparse_coo_tensor(indices.float(), values, (3, 3)).coalesce().indices().dtype):
    try:
        make()
    except RuntimeError as e:
        print("RuntimeError:", e)
