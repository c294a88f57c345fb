// Views, reshapes, joins and splits, and the gather/scatter/index family:
// view/reshape/permute (with the x.view(2, 3) varargs form), squeeze,
// flatten, cat/stack, chunk/split/unbind, narrow/select, scatter, index_put,
// masked_fill, flip/roll, tril/triu, broadcast_tensors, meshgrid.
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {
namespace {

Handler A(const char* op) { return to_aten(op); }

void views(Table& t) {
  unsigned both = kTorch | kMethod;
  t.def("view", kMethod,
        {{"(Tensor input, int[] size)", A("aten::view")},
         {"(Tensor input, ScalarType dtype)", [](const Bound& b) {
            KILN_USER_CHECK(b.tensor(0).dtype() == b[1].to_dtype(), "view(dtype) reinterpreting ",
                            dtype_name(b.tensor(0).dtype()), " as ", dtype_name(b[1].to_dtype()),
                            " is not supported");
            return aten(b.mode(), "aten::alias", {b[0]});
          }}});
  t.def("view_as", kMethod, {{"(Tensor input, Tensor other)", A("aten::view_as")}});
  t.def("reshape", both, {{"(Tensor input, int[] shape)", A("aten::reshape")}});
  t.def("reshape_as", kMethod, {{"(Tensor input, Tensor other)", [](const Bound& b) {
          return aten(b.mode(), "aten::reshape", {b[0], Value::int_list(b.tensor(1).sizes())});
        }}});
  t.def("expand", kMethod, {{"(Tensor input, int[] size, *, bool implicit=False)", A("aten::expand")}});
  t.def("expand_as", kMethod, {{"(Tensor input, Tensor other)", A("aten::expand_as")}});
  t.def("broadcast_to", both, {{"(Tensor input, int[] size)", A("aten::broadcast_to")}});
  t.def("permute", both, {{"(Tensor input, int[] dims)", A("aten::permute")}});
  t.def("transpose", both, {{"(Tensor input, int dim0, int dim1)", A("aten::transpose.int")}});
  t.def("swapdims", both, {{"(Tensor input, int dim0, int dim1)", A("aten::swapdims")}});
  t.def("swapaxes", both, {{"(Tensor input, int axis0, int axis1)", A("aten::swapaxes")}});
  t.def("t", both, {{"(Tensor input)", A("aten::t")}});
  t.def("adjoint", both, {{"(Tensor input)", [](const Bound& b) {
          return aten(b.mode(), "aten::transpose.int", {b[0], -2, -1});
        }}});
  t.def("flatten", both, {{"(Tensor input, int start_dim=0, int end_dim=-1)", A("aten::flatten.using_ints")}});
  t.def("unflatten", both, {{"(Tensor input, int dim, int[] sizes)", A("aten::unflatten.int")}});
  t.def("ravel", both, {{"(Tensor input)", A("aten::ravel")}});
  t.def("squeeze", both,
        {{"(Tensor input)", A("aten::squeeze")},
         {"(Tensor input, int dim)", A("aten::squeeze.dim")},
         {"(Tensor input, int[] dim)", A("aten::squeeze.dims")}});
  t.def("unsqueeze", both, {{"(Tensor input, int dim)", A("aten::unsqueeze")}});
  t.def("movedim", both,
        {{"(Tensor input, int source, int destination)", A("aten::movedim.int")},
         {"(Tensor input, int[] source, int[] destination)", A("aten::movedim.intlist")}});
  t.def("moveaxis", both,
        {{"(Tensor input, int source, int destination)", A("aten::moveaxis.int")},
         {"(Tensor input, int[] source, int[] destination)", A("aten::moveaxis.intlist")}});
  t.def("diagonal", both, {{"(Tensor input, int offset=0, int dim1=0, int dim2=1)", A("aten::diagonal")}});
  t.def("unfold", kMethod, {{"(Tensor input, int dimension, int size, int step)", A("aten::unfold")}});
  t.def("as_strided", both,
        {{"(Tensor input, int[] size, int[] stride, int? storage_offset=None)", A("aten::as_strided")}});
  t.def("contiguous", kMethod,
        {{"(Tensor input, *, MemoryFormat memory_format=contiguous_format)", A("aten::contiguous")}});
  t.def("clone", both, {{"(Tensor input, *, MemoryFormat? memory_format=None)", A("aten::clone")}});
  t.def("detach", both, {{"(Tensor input)", A("aten::detach")}});
  // detach_ only drops autograd history, which the interpreter tracks: self as is.
  t.add("Tensor", "detach_", PyKind::Method, {[] {
          Signature s = parse_signature("detach_", "(Tensor input)");
          s.handler = [](const Bound& b) { return ValueList{b[0]}; };
          s.returns_arg = 0;
          return s;
        }()});
}

void joins_and_splits(Table& t) {
  unsigned both = kTorch | kMethod;
  for (const char* n : {"cat", "concat"}) t.def(n, kTorch, {{"(Tensor[] tensors, int dim=0)", A("aten::cat")}});
  t.def("concatenate", kTorch, {{"(Tensor[] tensors, int axis=0)", [](const Bound& b) {
          return aten(b.mode(), "aten::cat", {b[0], b[1]});
        }}});
  t.def("stack", kTorch, {{"(Tensor[] tensors, int dim=0)", A("aten::stack")}});
  t.def("hstack", kTorch, {{"(Tensor[] tensors)", A("aten::hstack")}});
  for (const char* n : {"vstack", "row_stack"}) t.def(n, kTorch, {{"(Tensor[] tensors)", A("aten::vstack")}});
  t.def("dstack", kTorch, {{"(Tensor[] tensors)", [](const Bound& b) {
          ValueList parts;
          for (const Tensor& x : b[0].to_tensor_list()) {
            Shape s = x.sizes();
            if (s.size() == 0) s = {1, 1, 1};
            else if (s.size() == 1) s = {1, s[0], 1};
            else if (s.size() == 2) s = {s[0], s[1], 1};
            parts.push_back(aten_t(b.mode(), "aten::reshape", {x, Value::int_list(s)}));
          }
          return aten(b.mode(), "aten::cat", {Value(parts), 2});
        }}});
  t.def("chunk", both, {{"(Tensor input, int chunks, int dim=0)", A("aten::chunk"), "tuple"}});
  t.def("unbind", both, {{"(Tensor input, int dim=0)", A("aten::unbind.int"), "tuple"}});
  t.def("split_with_sizes", both, {{"(Tensor input, int[] split_sizes, int dim=0)", A("aten::split_with_sizes"), "tuple"}});
  t.def("tensor_split", both,
        {{"(Tensor input, int sections, int dim=0)", A("aten::tensor_split.sections"), "tuple"},
         {"(Tensor input, int[] indices, int dim=0)", A("aten::tensor_split.indices"), "tuple"},
         {"(Tensor input, Tensor tensor_indices_or_sections, int dim=0)",
          A("aten::tensor_split.tensor_indices_or_sections"), "tuple"}});
  // torch.split (torch/functional.py) and Tensor.split (torch/_tensor.py) are
  // Python: an int is split.Tensor, a list split_with_sizes.
  auto split = [](const Bound& b) {
    const Value& s = b[1];
    if (s.is_int()) return aten(b.mode(), "aten::split.Tensor", {b[0], s, b[2]});
    KILN_USER_CHECK(s.is_list(), "split(): split_size_or_sections must be an int or a list of ints, not ",
                    kind_name(s.kind()));
    return aten(b.mode(), "aten::split_with_sizes", {b[0], Value::int_list(s.to_int_list()), b[2]});
  };
  Signature fn = parse_signature("split", "(Tensor tensor, Any split_size_or_sections, int dim=0)");
  fn.handler = split;
  fn.result = ResultKind::Tuple;
  t.add("torch", "split", PyKind::PyFunction, {fn}, "torch.functional.split");
  Signature method = parse_signature("split", "(Tensor input, Any split_size, int dim=0)");
  method.handler = split;
  method.result = ResultKind::Tuple;
  t.add("Tensor", "split", PyKind::Method, {method});

  Signature bt = parse_signature("broadcast_tensors", "(Tensor[] *tensors)");
  bt.result = ResultKind::Tuple;
  bt.handler = [](const Bound& b) {
    std::vector<Tensor> ts = b[0].to_tensor_list();
    Shape shape;
    for (const Tensor& x : ts) shape = broadcast_shapes(shape, x.sizes());
    ValueList out;
    for (const Tensor& x : ts) out.push_back(aten_t(b.mode(), "aten::expand", {x, Value::int_list(shape)}));
    return out;
  };
  t.add("torch", "broadcast_tensors", PyKind::PyFunction, {bt}, "torch.functional.broadcast_tensors");

  Signature mg = parse_signature("meshgrid", "(Tensor[] *tensors, *, str? indexing=None)");
  mg.result = ResultKind::Tuple;
  mg.handler = [](const Bound& b) {
    std::vector<Tensor> ts = b[0].to_tensor_list();
    std::string indexing = b.is_none(1) ? "ij" : b.str(1);
    KILN_USER_CHECK(indexing == "ij" || indexing == "xy",
                    "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
    bool swap = indexing == "xy" && ts.size() >= 2;
    if (swap) std::swap(ts[0], ts[1]);
    Shape shape;
    for (const Tensor& x : ts) {
      KILN_USER_CHECK(x.dim() <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ", x.dim(), "D");
      shape.push_back(x.numel());
    }
    ValueList out;
    for (size_t i = 0; i < ts.size(); ++i) {
      Shape view(ts.size(), 1);
      view[i] = -1;
      Tensor v = aten_t(b.mode(), "aten::view", {ts[i], Value::int_list(view)});
      out.push_back(aten_t(b.mode(), "aten::expand", {v, Value::int_list(shape)}));
    }
    if (swap) {
      for (Value& v : out) v = aten_t(b.mode(), "aten::transpose.int", {v, 0, 1});
      std::swap(out[0], out[1]);
    }
    return out;
  };
  t.add("torch", "meshgrid", PyKind::PyFunction, {mg}, "torch.functional.meshgrid");
}

void gathers(Table& t) {
  unsigned both = kTorch | kMethod, all = kTorch | kMethod | kInplaceMethod;
  t.def("narrow", both,
        {{"(Tensor input, int dim, Tensor start, int length)", A("aten::narrow.Tensor")},
         {"(Tensor input, int dim, int start, int length)", A("aten::narrow")}});
  t.def("narrow_copy", both, {{"(Tensor input, int dim, int start, int length)", A("aten::narrow_copy")}});
  t.def("select", both, {{"(Tensor input, int dim, int index)", A("aten::select.int")}});
  t.def("index_select", both, {{"(Tensor input, int dim, Tensor index)", A("aten::index_select")}});
  t.def("gather", both, {{"(Tensor input, int dim, Tensor index, *, bool sparse_grad=False)", A("aten::gather")}});
  t.def("take", both, {{"(Tensor input, Tensor index)", A("aten::take")}});
  t.def("masked_select", both, {{"(Tensor input, Tensor mask)", A("aten::masked_select")}});
  t.def("scatter", all,
        {{"(Tensor input, int dim, Tensor index, Tensor src)", A("aten::scatter.src")},
         {"(Tensor input, int dim, Tensor index, Tensor src, *, str reduce)", A("aten::scatter.reduce")},
         {"(Tensor input, int dim, Tensor index, Scalar value)", A("aten::scatter.value")},
         {"(Tensor input, int dim, Tensor index, Scalar value, *, str reduce)", A("aten::scatter.value_reduce")}});
  t.def("scatter_add", all, {{"(Tensor input, int dim, Tensor index, Tensor src)", A("aten::scatter_add")}});
  t.def("scatter_reduce", all, {{"(Tensor input, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True)",
                                 A("aten::scatter_reduce.two")}});
  t.def("index_add", all,
        {{"(Tensor input, int dim, Tensor index, Tensor source, *, Scalar alpha=1)", A("aten::index_add")}});
  t.def("index_fill", all,
        {{"(Tensor input, int dim, Tensor index, Tensor value)", A("aten::index_fill.int_Tensor")},
         {"(Tensor input, int dim, Tensor index, Scalar value)", A("aten::index_fill.int_Scalar")}});
  t.def("index_put", all, {{"(Tensor input, Any indices, Tensor values, bool accumulate=False)", [](const Bound& b) {
          KILN_USER_CHECK(b[1].is_list(), "index_put(): argument 'indices' must be tuple of Tensors, not ",
                          kind_name(b[1].kind()));
          for (const Value& v : b[1].to_list())
            KILN_USER_CHECK(v.is_none() || v.is_tensor(), "index_put(): indices must be Tensors or None, got ", v.repr());
          return aten(b.mode(), "aten::index_put", {b[0], b[1], b[2], b[3]});
        }}});
  t.def("masked_fill", all,
        {{"(Tensor input, Tensor mask, Tensor value)", A("aten::masked_fill.Tensor")},
         {"(Tensor input, Tensor mask, Scalar value)", A("aten::masked_fill.Scalar")}});
}

void reorders(Table& t) {
  unsigned both = kTorch | kMethod;
  t.def("flip", both, {{"(Tensor input, int[] dims)", A("aten::flip")}});
  t.def("fliplr", both, {{"(Tensor input)", A("aten::fliplr")}});
  t.def("flipud", both, {{"(Tensor input)", A("aten::flipud")}});
  t.def("roll", both, {{"(Tensor input, int[1] shifts, int[1] dims=[])", A("aten::roll")}});
  // ATen's diff: n differences along dim (n capped at the length), after
  // prepend/append are joined on; booleans differ by xor.
  t.def("diff", both, {{"(Tensor input, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)", [](const Bound& b) {
          Mode m = b.mode();
          Tensor x = b.tensor(0);
          KILN_USER_CHECK(x.dim() >= 1, "diff expects input to be at least one-dimensional");
          int64_t n = b.integer(1);
          KILN_USER_CHECK(n >= 0, "order must be non-negative but got ", n);
          int64_t dim = b.integer(2);
          dim = dim < 0 ? dim + x.dim() : dim;
          KILN_USER_CHECK(dim >= 0 && dim < x.dim(), "Dimension out of range (expected to be in range of [", -x.dim(),
                          ", ", x.dim() - 1, "], but got ", b.integer(2), ")");
          if (!b.is_none(3) || !b.is_none(4)) {
            ValueList parts;
            if (!b.is_none(3)) parts.push_back(b[3]);
            parts.push_back(Value(x));
            if (!b.is_none(4)) parts.push_back(b[4]);
            x = aten_t(m, "aten::cat", {Value(parts), dim});
          }
          if (n == 0) return aten(m, "aten::clone", {x});
          int64_t len = x.sizes()[size_t(dim)];
          n = std::min(n, len);
          const bool xor_ = x.dtype() == DType::Bool;
          for (int64_t i = 0; i < n; ++i, --len) {
            Tensor hi = aten_t(m, "aten::slice.Tensor", {x, dim, int64_t(1), len, int64_t(1)});
            Tensor lo = aten_t(m, "aten::slice.Tensor", {x, dim, int64_t(0), len - 1, int64_t(1)});
            x = aten_t(m, xor_ ? "aten::logical_xor" : "aten::sub.Tensor", {hi, lo});
          }
          return ValueList{x};
        }}});
  t.def("rot90", both, {{"(Tensor input, int k=1, int[] dims=[0, 1])", [](const Bound& b) {
          Mode m = b.mode();
          std::vector<int64_t> dims = b.ints(2);
          KILN_USER_CHECK(dims.size() == 2, "expected total rotation dims == 2, but got dims = ", dims.size());
          int64_t k = ((b.integer(1) % 4) + 4) % 4;
          Value d0 = dims[0], d1 = dims[1];
          if (k == 1) return aten(m, "aten::transpose.int", {aten_t(m, "aten::flip", {b[0], Value::int_list({dims[1]})}), d0, d1});
          if (k == 2) return aten(m, "aten::flip", {b[0], Value::int_list(dims)});
          if (k == 3) return aten(m, "aten::flip", {aten_t(m, "aten::transpose.int", {b[0], d0, d1}), Value::int_list({dims[1]})});
          return aten(m, "aten::clone", {b[0]});
        }}});
  t.def("repeat", kMethod, {{"(Tensor input, int[] repeats)", A("aten::repeat")}});
  t.def("tile", both, {{"(Tensor input, int[] dims)", A("aten::tile")}});
  t.def("repeat_interleave", both,
        {{"(Tensor input, int repeats, int? dim=None, *, int? output_size=None)", [](const Bound& b) {
            Mode m = b.mode();
            Tensor x = b.tensor(0);
            int64_t r = b.integer(1);
            if (b.is_none(2)) x = aten_t(m, "aten::reshape", {x, Value::int_list({-1})});
            int64_t d = b.is_none(2) ? 0 : wrap_dim(b.integer(2), x.dim());
            Shape expanded = x.sizes();
            expanded.insert(expanded.begin() + d + 1, r);
            Tensor u = aten_t(m, "aten::unsqueeze", {x, d + 1});
            Tensor e = aten_t(m, "aten::expand", {u, Value::int_list(expanded)});
            return aten(m, "aten::flatten.using_ints", {e, d, d + 1});
          }}});
  t.def("tril", kTorch | kMethod | kInplaceMethod, {{"(Tensor input, int diagonal=0)", A("aten::tril")}});
  t.def("triu", kTorch | kMethod | kInplaceMethod, {{"(Tensor input, int diagonal=0)", A("aten::triu")}});
  t.def("diag", both, {{"(Tensor input, int diagonal=0)", [](const Bound& b) {
          Mode m = b.mode();
          const Tensor& x = b.tensor(0);
          int64_t k = b.integer(1);
          KILN_USER_CHECK(x.dim() == 1 || x.dim() == 2, "diag(): Supports 1D or 2D tensors. Got ", x.dim(), "D");
          if (x.dim() == 2) return aten(m, "aten::clone", {aten_t(m, "aten::diagonal", {b[0], k})});
          // M[i][j] = v[i] where j - i == k (v[j] for k < 0), else 0: a where() over
          // that mask, so autograd and capture see differentiable ops, the zeros stay
          // +0 (no 0 * inf) and the gradient reaches v from the diagonal only.
          const int64_t pad = k < 0 ? -k : k, n = x.size(0) + pad;
          Tensor padded = pad ? aten_t(m, "aten::constant_pad_nd", {b[0], Value::int_list({0, pad})}) : x;
          Tensor line = aten_t(m, "aten::unsqueeze", {padded, k >= 0 ? 1 : 0});
          Tensor index = aten_t(m, "aten::arange", {n}, {{"dtype", Value(DType::Int64)}});
          Tensor offset = aten_t(m, "aten::sub.Tensor", {aten_t(m, "aten::unsqueeze", {index, 0}),
                                                         aten_t(m, "aten::unsqueeze", {index, 1})});
          Tensor mask = aten_t(m, "aten::eq.Scalar", {offset, k});
          const Value zero = x.dtype() == DType::Bool ? Value(false) : is_floating(x.dtype()) ? Value(0.0) : Value(int64_t(0));
          return aten(m, "aten::where.ScalarOther", {mask, line, zero});
        }}});
  t.def("trace", both, {{"(Tensor input)", [](const Bound& b) {
          KILN_USER_CHECK(b.tensor(0).dim() == 2, "trace: expected a matrix, but got tensor with dim ", b.tensor(0).dim());
          return aten(b.mode(), "aten::sum", {aten_t(b.mode(), "aten::diagonal", {b[0]})});
        }}});
}

}  // namespace

void register_shapes(Table& t) {
  views(t);
  joins_and_splits(t);
  gathers(t);
  reorders(t);
}

}  // namespace kiln::torchapi::detail
