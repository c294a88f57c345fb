// Products (matmul, mm, bmm, addmm, outer, einsum, tensordot), the norms of
// torch.linalg, and torch.special's aliases of pointwise functions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/ops/linalg_factor.h"
#include "core/ops/pointwise_kernels.h"
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {
namespace {

Handler A(const char* op) { return to_aten(op); }

// ---------------------------------------------------------------- einsum

// An operand during einsum: a tensor and the label of each of its dims.
struct Labeled {
  Tensor t;
  std::vector<int> labels;
};

constexpr int kEllipsisBase = 1000;  // ellipsis dims get labels 1000, 1001, ... aligned from the right

int label_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  KILN_FAIL("einsum(): invalid subscript given at index: '", c, "'; subscripts must be in [a-zA-Z]");
}

// Parses one term ("b...ij") for an operand of `ndim` dims; `ell_max` ellipsis dims in all.
std::vector<int> parse_term(std::string_view term, int64_t ndim, int64_t ell_max, bool check_rank) {
  std::vector<int> labels;
  size_t ell = term.find("...");
  int64_t letters = int64_t(term.size()) - (ell == std::string_view::npos ? 0 : 3);
  int64_t ell_dims = ndim - letters;
  if (check_rank) {
    KILN_USER_CHECK(ell != std::string_view::npos ? ell_dims >= 0 : ell_dims == 0,
                    "einsum(): the number of subscripts in the equation (", letters,
                    ") does not match the number of dimensions (", ndim, ") for operand",
                    ell == std::string_view::npos ? " and no ellipsis was given" : "");
  }
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.substr(i, 3) == "...") {
      for (int64_t k = ell_max - ell_dims; k < ell_max; ++k) labels.push_back(kEllipsisBase + int(k));
      i += 2;
      continue;
    }
    labels.push_back(label_id(term[i]));
  }
  return labels;
}

// Takes diagonals until no label repeats within the operand.
void take_diagonals(Mode m, Labeled& op) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < op.labels.size() && !again; ++i)
      for (size_t j = i + 1; j < op.labels.size() && !again; ++j)
        if (op.labels[i] == op.labels[j]) {
          op.t = aten_t(m, "aten::diagonal", {op.t, 0, int64_t(i), int64_t(j)});
          int l = op.labels[i];
          op.labels.erase(op.labels.begin() + long(j));
          op.labels.erase(op.labels.begin() + long(i));
          op.labels.push_back(l);
          again = true;
        }
  }
}

// Sums out the labels of `op` for which `drop` is true.
void sum_labels(Mode m, Labeled& op, const std::function<bool(int)>& drop) {
  std::vector<int64_t> dims;
  std::vector<int> kept;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (drop(op.labels[i])) dims.push_back(int64_t(i));
    else kept.push_back(op.labels[i]);
  }
  if (dims.empty()) return;
  op.t = aten_t(m, "aten::sum.dim_IntList", {op.t, Value::int_list(dims), false});
  op.labels = kept;
}

int64_t size_of(const Labeled& op, int label) {
  auto it = std::find(op.labels.begin(), op.labels.end(), label);
  return it == op.labels.end() ? 1 : op.t.size(int64_t(it - op.labels.begin()));
}

bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// Permutes `op` to `order` (all of op's labels) and reshapes into groups of dims.
Tensor arrange(Mode m, const Labeled& op, const std::vector<std::vector<int>>& groups, Shape& full_sizes) {
  std::vector<int64_t> perm;
  Shape grouped;
  full_sizes.clear();
  for (const auto& g : groups) {
    int64_t n = 1;
    for (int l : g) {
      auto it = std::find(op.labels.begin(), op.labels.end(), l);
      perm.push_back(int64_t(it - op.labels.begin()));
      n *= op.t.size(perm.back());
      full_sizes.push_back(op.t.size(perm.back()));
    }
    grouped.push_back(n);
  }
  Tensor p = aten_t(m, "aten::permute", {op.t, Value::int_list(perm)});
  return aten_t(m, "aten::reshape", {p, Value::int_list(grouped)});
}

// a (x) b over their shared labels, keeping the labels in `keep`, through one bmm.
Labeled contract(Mode m, Labeled a, Labeled b, const std::vector<int>& keep) {
  auto needed = [&](int l) { return has(keep, l); };
  sum_labels(m, a, [&](int l) { return !has(b.labels, l) && !needed(l); });
  sum_labels(m, b, [&](int l) { return !has(a.labels, l) && !needed(l); });
  // A shared label of size 1 on one side broadcasts: sum it out of the other side first.
  for (int l : std::vector<int>(a.labels)) {
    if (!has(b.labels, l)) continue;
    int64_t sa = size_of(a, l), sb = size_of(b, l);
    if (sa == sb || needed(l)) continue;
    KILN_USER_CHECK(sa == 1 || sb == 1, "einsum(): operands do not broadcast with remapped shapes (original->remapped)");
    Labeled& big = sa == 1 ? b : a;
    sum_labels(m, big, [&](int x) { return x == l; });
  }
  std::vector<int> batch, contracted, a_only, b_only;
  for (int l : a.labels) {
    if (has(b.labels, l)) (needed(l) ? batch : contracted).push_back(l);
    else a_only.push_back(l);
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) b_only.push_back(l);
  // Labels shared but of size 1 on one side after the sums above are batch dims: expand them.
  auto expand_batch = [&](Labeled& op, const Labeled& other) {
    Shape s = op.t.sizes();
    bool change = false;
    for (int l : batch) {
      auto i = size_t(std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin());
      int64_t want = std::max(size_of(op, l), size_of(other, l));
      if (s[i] != want) {
        KILN_USER_CHECK(s[i] == 1, "einsum(): operands do not broadcast with remapped shapes (original->remapped)");
        s[i] = want;
        change = true;
      }
    }
    if (change) op.t = aten_t(m, "aten::expand", {op.t, Value::int_list(s)});
  };
  expand_batch(a, b);
  expand_batch(b, a);
  for (int l : std::vector<int>(contracted))
    if (!has(a.labels, l) || !has(b.labels, l)) contracted.erase(std::find(contracted.begin(), contracted.end(), l));
  Shape sa, sb;
  Tensor left = arrange(m, a, {batch, a_only, contracted}, sa);
  Tensor right = arrange(m, b, {batch, contracted, b_only}, sb);
  Tensor prod = aten_t(m, "aten::bmm", {left, right});
  Shape out;
  for (size_t i = 0; i < batch.size() + a_only.size(); ++i) out.push_back(sa[i]);
  for (size_t i = batch.size() + contracted.size(); i < sb.size(); ++i) out.push_back(sb[i]);
  Labeled r{aten_t(m, "aten::reshape", {prod, Value::int_list(out)}), batch};
  r.labels.insert(r.labels.end(), a_only.begin(), a_only.end());
  r.labels.insert(r.labels.end(), b_only.begin(), b_only.end());
  return r;
}

ValueList einsum(const Bound& b) {
  Mode m = b.mode();
  ValueList args = b[0].to_list();
  KILN_USER_CHECK(!args.empty() && args[0].kind() == Value::Kind::String,
                  "einsum(): must specify the equation string and at least one operand, or at least one operand "
                  "and its subscripts list");
  std::string eq;
  for (char c : args[0].to_string())
    if (c != ' ') eq += c;
  ValueList operands(args.begin() + 1, args.end());
  if (operands.size() == 1 && operands[0].is_list()) operands = operands[0].to_list();
  std::vector<Tensor> ts;
  for (const Value& v : operands) {
    KILN_USER_CHECK(v.is_tensor(), "einsum(): operands must be Tensors, got ", v.repr());
    ts.push_back(v.to_tensor());
  }
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KILN_USER_CHECK(terms.size() == ts.size(), "einsum(): more operands were provided than specified in the equation");
  int64_t ell_max = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    size_t e = terms[i].find("...");
    if (e != std::string::npos) ell_max = std::max(ell_max, ts[i].dim() - int64_t(terms[i].size() - 3));
  }
  std::vector<Labeled> ops;
  std::map<int, int> count;
  for (size_t i = 0; i < ts.size(); ++i) {
    ops.push_back({ts[i], parse_term(terms[i], ts[i].dim(), ell_max, true)});
    for (int l : ops.back().labels) ++count[l];
  }
  std::vector<int> output;
  if (arrow != std::string::npos) {
    std::string out_term = eq.substr(arrow + 2);
    int64_t letters = int64_t(out_term.size()) - (out_term.find("...") == std::string::npos ? 0 : 3);
    output = parse_term(out_term, letters + ell_max, ell_max, false);
    for (int l : output) KILN_USER_CHECK(count.count(l), "einsum(): output subscript does not appear in the equation "
                                                          "for any input operand");
  } else {
    for (int64_t k = 0; k < ell_max; ++k) output.push_back(kEllipsisBase + int(k));
    for (const auto& [l, n] : count)
      if (l < kEllipsisBase && n == 1) output.push_back(l);
  }
  for (Labeled& op : ops) take_diagonals(m, op);
  Labeled acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::vector<int> keep = output;
    for (size_t j = i + 1; j < ops.size(); ++j) keep.insert(keep.end(), ops[j].labels.begin(), ops[j].labels.end());
    acc = contract(m, acc, ops[i], keep);
  }
  sum_labels(m, acc, [&](int l) { return !has(output, l); });
  std::vector<int64_t> perm;
  for (int l : output) {
    auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
    if (it == acc.labels.end()) {  // an ellipsis dim no operand had (broadcast of nothing): size 1
      acc.t = aten_t(m, "aten::unsqueeze", {acc.t, acc.t.dim()});
      acc.labels.push_back(l);
      it = acc.labels.end() - 1;
    }
    perm.push_back(int64_t(it - acc.labels.begin()));
  }
  return aten(m, "aten::permute", {acc.t, Value::int_list(perm)});
}

// ---------------------------------------------------------------- tensordot

ValueList tensordot(const Bound& b) {
  Mode m = b.mode();
  const Tensor &a = b.tensor(0), &c = b.tensor(1);
  std::vector<int64_t> da, dc;
  const Value& dims = b[2];
  if (dims.is_int()) {
    int64_t n = dims.to_int();
    KILN_USER_CHECK(n >= 0, "tensordot expects dims >= 0, but got dims=", n);
    for (int64_t i = 0; i < n; ++i) {
      da.push_back(a.dim() - n + i);
      dc.push_back(i);
    }
  } else {
    KILN_USER_CHECK(dims.is_list() && dims.to_list().size() == 2, "tensordot expects dims to be an int or a pair of lists");
    const ValueList& l = dims.to_list();
    da = l[0].to_int_list();
    dc = l[1].to_int_list();
  }
  KILN_USER_CHECK(da.size() == dc.size(), "both dimension lists should have same length");
  for (auto& d : da) d = wrap_dim(d, a.dim());
  for (auto& d : dc) d = wrap_dim(d, c.dim());
  for (size_t i = 0; i < da.size(); ++i)
    KILN_USER_CHECK(a.size(da[i]) == c.size(dc[i]), "contracted dimensions need to match, but first has size ",
                    a.size(da[i]), " in dim ", da[i], " and second has size ", c.size(dc[i]), " in dim ", dc[i]);
  std::vector<int64_t> pa, pc;
  Shape out;
  int64_t m_size = 1, n_size = 1, k_size = 1;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (std::find(da.begin(), da.end(), d) == da.end()) {
      pa.push_back(d);
      out.push_back(a.size(d));
      m_size *= a.size(d);
    }
  for (int64_t d : da) {
    pa.push_back(d);
    k_size *= a.size(d);
  }
  for (int64_t d : dc) pc.push_back(d);
  for (int64_t d = 0; d < c.dim(); ++d)
    if (std::find(dc.begin(), dc.end(), d) == dc.end()) {
      pc.push_back(d);
      out.push_back(c.size(d));
      n_size *= c.size(d);
    }
  Tensor left = aten_t(m, "aten::reshape", {aten_t(m, "aten::permute", {b[0], Value::int_list(pa)}),
                                            Value::int_list({m_size, k_size})});
  Tensor right = aten_t(m, "aten::reshape", {aten_t(m, "aten::permute", {b[1], Value::int_list(pc)}),
                                             Value::int_list({k_size, n_size})});
  return aten(m, "aten::reshape", {aten_t(m, "aten::mm", {left, right}), Value::int_list(out)});
}

// ---------------------------------------------------------------- norms

// vector norm of `ord` over `dim` (None: all dims), as torch.linalg.vector_norm.
ValueList vector_norm(Mode m, const Value& x, double ord, const Value& dim, bool keepdim, const Value& dtype) {
  Value in = x;
  if (!dtype.is_none()) in = aten_t(m, "aten::to.dtype", {x, dtype});
  Value dims = dim;
  if (dims.is_int()) dims = Value::int_list({dims.to_int()});
  if (dims.is_none()) {
    std::vector<int64_t> all;
    for (int64_t i = 0; i < in.to_tensor().dim(); ++i) all.push_back(i);
    dims = Value::int_list(all);
  }
  if (std::isinf(ord)) {
    Tensor a = aten_t(m, "aten::abs", {in});
    return aten(m, ord > 0 ? "aten::amax" : "aten::amin", {a, dims, keepdim});
  }
  return aten(m, "aten::norm.ScalarOpt_dim", {in, ord, dims, keepdim});
}

void products(Table& t) {
  unsigned both = kTorch | kMethod;
  t.def("matmul", both, {{"(Tensor input, Tensor other)", A("aten::matmul")}});
  t.def("mm", both, {{"(Tensor input, Tensor mat2)", A("aten::mm")}});
  t.def("bmm", both, {{"(Tensor input, Tensor mat2)", A("aten::bmm")}});
  t.def("mv", both, {{"(Tensor input, Tensor vec)", A("aten::mv")}});
  t.def("dot", both, {{"(Tensor input, Tensor tensor)", A("aten::dot")}});
  t.def("vdot", both, {{"(Tensor input, Tensor other)", A("aten::vdot")}});
  t.def("addmm", both | kInplaceMethod,
        {{"(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)", A("aten::addmm")}});
  t.def("addmv", both | kInplaceMethod,
        {{"(Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1)", A("aten::addmv")}});
  t.def("baddbmm", both | kInplaceMethod,
        {{"(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)", A("aten::baddbmm")}});
  Handler outer = [](const Bound& b) {
    KILN_USER_CHECK(b.tensor(0).dim() == 1 && b.tensor(1).dim() == 1, "outer: expected 1D tensors, got ",
                    b.tensor(0).dim(), "D and ", b.tensor(1).dim(), "D");
    return aten(b.mode(), "aten::mul.Tensor", {aten_t(b.mode(), "aten::unsqueeze", {b[0], 1}), b[1]});
  };
  t.def("outer", both, {{"(Tensor input, Tensor vec2)", outer}});
  t.def("ger", both, {{"(Tensor input, Tensor vec2)", outer}});
  Signature es = parse_signature("einsum", "(Any *args)");
  es.handler = einsum;
  t.add("torch", "einsum", PyKind::PyFunction, {es}, "torch.functional.einsum");
  Signature td = parse_signature("tensordot", "(Tensor a, Tensor b, Any dims=2)");
  td.handler = tensordot;
  t.add("torch", "tensordot", PyKind::PyFunction, {td}, "torch.functional.tensordot");
}

double ord_value(const Value& v, double absent) {
  if (v.is_none()) return absent;
  if (v.kind() == Value::Kind::String) {
    KILN_USER_CHECK(v.to_string() == "fro", "linalg norm: ord='", v.to_string(), "' is not supported (only 'fro')");
    return 2.0;
  }
  return v.to_double();
}

// The factorization ops (core/ops/linalg_factor.cpp) with their info outputs;
// linalg.cholesky and linalg.inv are the _ex op and ATen's error check, as in
// ATen, so grad_fn is LinalgCholeskyExBackward0 / LinalgInvExBackward0 there too.
ValueList checked(const Bound& b, const char* op, KwargList kwargs, const char* api) {
  ValueList r = aten(b.mode(), op, {b[0]}, kwargs);
  if (!b.meta()) check_linalg_errors(r[1].to_tensor(), api, b.tensor(0).dim() == 2);
  return ValueList{r[0]};
}

ValueList inverse(const Bound& b) { return checked(b, "aten::linalg_inv_ex", {}, "linalg.inv"); }

// LU: linalg.lu_factor is the _ex op and ATen's error check. torch.lu and
// Tensor.lu are ATen's _lu_with_info, linalg_lu_factor_ex without the check
// whatever get_infos says (and a deprecation warning, once per program:
// run_torch writes it, as bindings have no interpreter to write to).
ValueList lu_with_info(const Bound& b) {
  ValueList r = aten(b.mode(), "aten::linalg_lu_factor_ex", {b[0]}, {{"pivot", b[1]}});
  if (b[2].to_bool()) return r;
  return ValueList{r[0], r[1]};
}

// linalg.solve(A, B) as LAPACK's getrf + getrs: the LU factors of A, B's
// rows permuted by the pivots, then the unit-lower and upper triangular
// solves. Each step is an op with its derivative, so gradients reach A and B
// (equal to PyTorch's LinalgSolveExBackward0 up to rounding).
ValueList solve(const Bound& b) {
  Mode m = b.mode();
  KILN_USER_CHECK(b.boolean(2), "torch.linalg.solve(left=False) is not supported by Kiln");
  const Tensor& a = b.tensor(0);
  const Tensor& rhs = b.tensor(1);
  KILN_USER_CHECK(a.dim() >= 2 && a.size(-1) == a.size(-2), "linalg.solve: A must be batches of square matrices, but they are ",
                  a.dim() >= 2 ? a.size(-2) : 0, " by ", a.dim() >= 1 ? a.size(-1) : 0, " matrices");
  // B is a vector when it has one dimension less than A and A's batch shape.
  const Shape a_sizes = a.sizes();
  const bool vector = rhs.dim() == 1 || (rhs.dim() == a.dim() - 1 && rhs.sizes() == Shape(a_sizes.begin(), a_sizes.end() - 1));
  Value bmat = vector ? Value(aten_t(m, "aten::unsqueeze", {b[1], int64_t(-1)})) : b[1];
  ValueList lu = aten(m, "aten::linalg_lu_factor_ex", {b[0]}, {});
  if (!b.meta()) check_linalg_errors(lu[2].to_tensor(), "torch.linalg.solve", a.dim() == 2);
  ValueList plu = aten(m, "aten::lu_unpack", {lu[0], lu[1]});
  // P^T B as a gather of B's rows (a product with P would turn an infinity in B into NaN).
  Tensor perm = aten_t(m, "aten::argmax", {plu[0], int64_t(-2)});
  Tensor index = aten_t(m, "aten::unsqueeze", {perm, int64_t(-1)});
  const Tensor& bt = bmat.to_tensor();
  Shape expanded = bt.sizes();
  index = aten_t(m, "aten::expand", {index, Value::int_list(expanded)});
  Tensor permuted = aten_t(m, "aten::gather", {bmat, int64_t(-2), index});
  Tensor y = aten_t(m, "aten::linalg_solve_triangular", {plu[1], permuted},
                    {{"upper", false}, {"left", true}, {"unitriangular", true}});
  Tensor x = aten_t(m, "aten::linalg_solve_triangular", {plu[2], y}, {{"upper", true}, {"left", true}, {"unitriangular", false}});
  if (vector) x = aten_t(m, "aten::squeeze.dim", {x, int64_t(-1)});
  return ValueList{x};
}

void lu(Table& t) {
  const std::string mod = "torch.linalg";
  t.def_in(mod, "lu_factor", PyKind::LinalgBuiltin,
           {{"(Tensor A, *, bool pivot=True)",
             [](const Bound& b) {
               ValueList r = aten(b.mode(), "aten::linalg_lu_factor_ex", {b[0]}, {{"pivot", b[1]}});
               if (!b.meta()) check_linalg_errors(r[2].to_tensor(), "torch.linalg.lu_factor", b.tensor(0).dim() == 2);
               return ValueList{r[0], r[1]};
             },
             "linalg_lu_factor(LU,pivots)"}});
  t.def_in(mod, "lu_factor_ex", PyKind::LinalgBuiltin,
           {{"(Tensor A, *, bool pivot=True, bool check_errors=False)",
             [](const Bound& b) {
               return aten(b.mode(), "aten::linalg_lu_factor_ex", {b[0]}, {{"pivot", b[1]}, {"check_errors", b[2]}});
             },
             "linalg_lu_factor_ex(LU,pivots,info)"}});
  t.def_in(mod, "lu", PyKind::LinalgBuiltin,
           {{"(Tensor A, *, bool pivot=True)",
             [](const Bound& b) { return aten(b.mode(), "aten::linalg_lu", {b[0]}, {{"pivot", b[1]}}); },
             "linalg_lu(P,L,U)"}});
  t.def("lu_unpack", kTorch,
        {{"(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True)",
          A("aten::lu_unpack"), "lu_unpack(P,L,U)"}});
  t.def("lu", kMethod, {{"(Tensor self, bool pivot=True, bool get_infos=False)", lu_with_info, "tuple"}});
  t.def_in("torch", "lu", PyKind::Dispatch,
           {{"(Tensor A, bool pivot=True, bool get_infos=False)", lu_with_info, "tuple"}});
}

// Determinants: torch.det and linalg.det are _linalg_det's value (grad_fn
// LinalgDetBackward0), slogdet and linalg.slogdet _linalg_slogdet's sign and
// logabsdet (LinalgSlogdetBackward0 on both). logdet is ATen's composite:
// NaN where the sign is -1, so its grad_fn is WhereBackward0.
ValueList det(const Bound& b) { return ValueList{aten(b.mode(), "aten::_linalg_det", {b[0]})[0]}; }

ValueList slogdet(const Bound& b) {
  ValueList r = aten(b.mode(), "aten::_linalg_slogdet", {b[0]});
  return ValueList{r[0], r[1]};
}

ValueList logdet(const Bound& b) {
  const Tensor& a = b.tensor(0);
  KILN_USER_CHECK(a.dim() >= 2, "logdet: The input tensor A must have at least 2 dimensions.");
  KILN_USER_CHECK(a.size(-1) == a.size(-2), "logdet: A must be batches of square matrices, but they are ", a.size(-2),
                  " by ", a.size(-1), " matrices");
  KILN_USER_CHECK(is_floating(a.dtype()), "logdet: Expected a floating point or complex tensor as input. Got ",
                  pointwise::aten_type_name(a.dtype()));
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "logdet: Low precision dtypes not supported. Got ", pointwise::aten_type_name(a.dtype()));
  ValueList r = aten(b.mode(), "aten::_linalg_slogdet", {b[0]});
  Value negative = aten_t(b.mode(), "aten::eq.Scalar", {r[0], -1.0});
  return aten(b.mode(), "aten::where.ScalarSelf", {negative, std::numeric_limits<double>::quiet_NaN(), r[1]});
}

void determinants(Table& t) {
  t.def("det", kTorch | kMethod, {{"(Tensor input)", det}});
  t.def_in("torch.linalg", "det", PyKind::LinalgBuiltin, {{"(Tensor A)", det}});
  t.def("slogdet", kTorch | kMethod, {{"(Tensor input)", slogdet, "slogdet(sign,logabsdet)"}});
  t.def_in("torch.linalg", "slogdet", PyKind::LinalgBuiltin,
           {{"(Tensor A)", slogdet, "linalg_slogdet(sign,logabsdet)"}});
  t.def("logdet", kTorch | kMethod, {{"(Tensor input)", logdet}});
}

void factorizations(Table& t) {
  const std::string mod = "torch.linalg";
  t.def_in(mod, "cholesky", PyKind::LinalgBuiltin, {{"(Tensor A, *, bool upper=False)", [](const Bound& b) {
             return checked(b, "aten::linalg_cholesky_ex", {{"upper", b[1]}}, "linalg.cholesky");
           }}});
  t.def_in(mod, "cholesky_ex", PyKind::LinalgBuiltin,
           {{"(Tensor A, *, bool upper=False, bool check_errors=False)",
             [](const Bound& b) {
               return aten(b.mode(), "aten::linalg_cholesky_ex", {b[0]}, {{"upper", b[1]}, {"check_errors", b[2]}});
             },
             "linalg_cholesky_ex(L,info)"}});
  t.def_in(mod, "solve_triangular", PyKind::LinalgBuiltin,
           {{"(Tensor A, Tensor B, *, bool upper, bool left=True, bool unitriangular=False)", [](const Bound& b) {
               return aten(b.mode(), "aten::linalg_solve_triangular", {b[0], b[1]},
                           {{"upper", b[2]}, {"left", b[3]}, {"unitriangular", b[4]}});
             }}});
  t.def_in(mod, "inv", PyKind::LinalgBuiltin, {{"(Tensor A)", inverse}});
  t.def_in(mod, "solve", PyKind::LinalgBuiltin, {{"(Tensor A, Tensor B, *, bool left=True)", solve}});
  t.def_in(mod, "inv_ex", PyKind::LinalgBuiltin,
           {{"(Tensor A, *, bool check_errors=False)",
             [](const Bound& b) { return aten(b.mode(), "aten::linalg_inv_ex", {b[0]}, {{"check_errors", b[1]}}); },
             "linalg_inv_ex(inverse,info)"}});
  t.def("inverse", kTorch | kMethod, {{"(Tensor input)", inverse}});
  t.def("cholesky_inverse", kTorch | kMethod,
        {{"(Tensor input, bool upper=False)", A("aten::cholesky_inverse")}});
  lu(t);
  determinants(t);
}

// Eigendecomposition, the matrix exponential and compact QR (core/ops/
// linalg_eigen.cpp, linalg_householder.cpp), what parametrizations.orthogonal
// calls. eigvalsh always asks _linalg_eigh for the eigenvectors, which ATen
// does only when A needs a gradient (a binding cannot tell), so its gradient
// is there whenever autograd wants it; the eigenvalues may differ from
// jobz='N''s in the last bit.
void eigen(Table& t) {
  const std::string mod = "torch.linalg";
  t.def_in(mod, "eigh", PyKind::LinalgBuiltin,
           {{"(Tensor A, str UPLO=\"L\")",
             [](const Bound& b) { return aten(b.mode(), "aten::_linalg_eigh", {b[0], b[1], true}); },
             "linalg_eigh(eigenvalues,eigenvectors)"}});
  t.def_in(mod, "eigvalsh", PyKind::LinalgBuiltin, {{"(Tensor A, str UPLO=\"L\")", [](const Bound& b) {
             return ValueList{aten(b.mode(), "aten::_linalg_eigh", {b[0], b[1], true})[0]};
           }}});
  t.def_in(mod, "matrix_exp", PyKind::LinalgBuiltin, {{"(Tensor A)", A("aten::linalg_matrix_exp")}});
  t.def("matrix_exp", kTorch | kMethod, {{"(Tensor input)", A("aten::linalg_matrix_exp")}});
  t.def_in(mod, "householder_product", PyKind::LinalgBuiltin,
           {{"(Tensor A, Tensor tau)", A("aten::linalg_householder_product")}});
  t.def("orgqr", kTorch | kMethod, {{"(Tensor input, Tensor tau)", A("aten::linalg_householder_product")}});
  t.def("geqrf", kTorch | kMethod, {{"(Tensor input)", A("aten::geqrf"), "geqrf(a,tau)"}});
}

void linalg(Table& t) {
  const std::string mod = "torch.linalg";
  t.def_in(mod, "qr", PyKind::LinalgBuiltin,
           {{"(Tensor A, str mode=\"reduced\")", to_aten("aten::linalg_qr"), "qr(Q,R)"}});
  t.def_in(mod, "vector_norm", PyKind::LinalgBuiltin,
           {{"(Tensor input, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)",
             [](const Bound& b) { return vector_norm(b.mode(), b[0], b.real(1), b[2], b.boolean(3), b[4]); }}});
  t.def_in(mod, "matrix_norm", PyKind::LinalgBuiltin,
           {{"(Tensor input, Any ord=\"fro\", int[] dim=[-2, -1], bool keepdim=False, *, ScalarType? dtype=None)",
             [](const Bound& b) {
               return vector_norm(b.mode(), b[0], ord_value(b[1], 2.0), b[2], b.boolean(3), b[4]);
             }}});
  t.def_in(mod, "norm", PyKind::LinalgBuiltin,
           {{"(Tensor input, Any ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)",
             [](const Bound& b) {
               KILN_USER_CHECK(b.is_none(1) || b.is_none(2) || b.ints(2).size() == 1 ||
                                   b[1].kind() == Value::Kind::String,
                               "linalg.norm: matrix norms other than 'fro' are not supported");
               return vector_norm(b.mode(), b[0], ord_value(b[1], 2.0), b[2], b.boolean(3), b[4]);
             }}});
  t.def_in(mod, "matmul", PyKind::LinalgBuiltin, {{"(Tensor input, Tensor other)", A("aten::matmul")}});
  t.def_in(mod, "vecdot", PyKind::LinalgBuiltin, {{"(Tensor x, Tensor y, *, int dim=-1)", [](const Bound& b) {
             Tensor p = aten_t(b.mode(), "aten::mul.Tensor", {b[0], b[1]});
             return aten(b.mode(), "aten::sum.dim_IntList", {p, Value::int_list({b.integer(2)}), false});
           }}});
}

void special(Table& t) {
  const std::string mod = "torch.special";
  static const std::pair<const char*, const char*> kUnary[] = {
      {"expit", "sigmoid"}, {"erf", "erf"}, {"erfc", "erfc"}, {"erfinv", "erfinv"}, {"exp2", "exp2"},
      {"expm1", "expm1"},   {"log1p", "log1p"}, {"round", "round"},
  };
  for (const auto& [name, op] : kUnary)
    t.def_in(mod, name, PyKind::SpecialBuiltin, {{"(Tensor input)", to_aten(std::string("aten::") + op)}});
  t.def_in(mod, "logit", PyKind::SpecialBuiltin, {{"(Tensor input, float? eps=None)", A("aten::logit")}});
  t.def_in(mod, "xlogy", PyKind::SpecialBuiltin,
           {{"(Tensor input, TensorOrNumber other)", to_aten_tensor_or_scalar("aten::xlogy.Tensor", "aten::xlogy.Scalar_Other")},
            {"(Scalar self, Tensor other)", A("aten::xlogy.Scalar_Self")}});
  t.def_in(mod, "softmax", PyKind::SpecialBuiltin, {{"(Tensor input, int dim, ScalarType? dtype=None)", A("aten::softmax.int")}});
  t.def_in(mod, "log_softmax", PyKind::SpecialBuiltin,
           {{"(Tensor input, int dim, *, ScalarType? dtype=None)", A("aten::log_softmax.int")}});
  t.def_in(mod, "logsumexp", PyKind::SpecialBuiltin, {{"(Tensor input, int[1] dim, bool keepdim=False)", A("aten::logsumexp")}});
}

}  // namespace

void register_linalg(Table& t) {
  products(t);
  factorizations(t);
  eigen(t);
  linalg(t);
  special(t);
}

}  // namespace kiln::torchapi::detail
