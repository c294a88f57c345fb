// Reductions, scans and sorting: sum/mean/var (all of PyTorch's overloads),
// max/min with and without dim, norm, cumsum, sort/topk, unique.
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {
namespace {

Handler A(const char* op) { return to_aten(op); }

std::vector<int64_t> all_dims(const Tensor& t) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < t.dim(); ++i) d.push_back(i);
  return d;
}

void sums(Table& t) {
  unsigned both = kTorch | kMethod;
  for (const char* n : {"sum", "mean"}) {
    std::string op = std::string("aten::") + n;
    t.def(n, both,
          {{"(Tensor input, *, ScalarType? dtype=None)", to_aten(op)},
           {"(Tensor input, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)",
            to_aten(op + (std::string(n) == "sum" ? ".dim_IntList" : ".dim"))}});
  }
  t.def("nansum", both, {{"(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)",
                          [](const Bound& b) {
                            Tensor zeroed = aten_t(b.mode(), "aten::nan_to_num", {b[0], 0.0});
                            if (!is_floating(b.tensor(0).dtype())) zeroed = b.tensor(0);
                            return aten(b.mode(), "aten::sum.dim_IntList", {zeroed, b[1], b[2]}, {{"dtype", b[3]}});
                          }}});
  t.def("prod", both,
        {{"(Tensor input, *, ScalarType? dtype=None)", A("aten::prod")},
         {"(Tensor input, int dim, bool keepdim=False, *, ScalarType? dtype=None)", A("aten::prod.dim_int")}});
  for (const char* n : {"amax", "amin"})
    t.def(n, both, {{"(Tensor input, int[1] dim=[], bool keepdim=False)", to_aten(std::string("aten::") + n)}});
  for (const char* n : {"max", "min"}) {
    std::string op = std::string("aten::") + n;
    t.def(n, both,
          {{"(Tensor input)", to_aten(op)},
           {"(Tensor input, Tensor other)", to_aten(std::string("aten::") + (n[1] == 'a' ? "maximum" : "minimum"))},
           {"(Tensor input, int dim, bool keepdim=False)", to_aten(op + ".dim"),
            n[1] == 'a' ? "max(values,indices)" : "min(values,indices)"}});
  }
  t.def("aminmax", both, {{"(Tensor input, *, int? dim=None, bool keepdim=False)", [](const Bound& b) {
          Value dims = b.is_none(1) ? Value::int_list(all_dims(b.tensor(0))) : Value::int_list({b.integer(1)});
          return ValueList{aten_t(b.mode(), "aten::amin", {b[0], dims, b[2]}),
                           aten_t(b.mode(), "aten::amax", {b[0], dims, b[2]})};
        }, "aminmax(min,max)"}});
  for (const char* n : {"argmax", "argmin"})
    t.def(n, both, {{"(Tensor input, int? dim=None, bool keepdim=False)", to_aten(std::string("aten::") + n)}});
  for (const char* n : {"any", "all"}) {
    std::string op = std::string("aten::") + n;
    t.def(n, both,
          {{"(Tensor input)", to_aten(op)},
           {"(Tensor input, int dim, bool keepdim=False)", to_aten(op + ".dim")},
           {"(Tensor input, int[]? dim=None, bool keepdim=False)", to_aten(op + ".dims")}});
  }
  t.def("logsumexp", both, {{"(Tensor input, int[1] dim, bool keepdim=False)", A("aten::logsumexp")}});
  t.def("count_nonzero", both,
        {{"(Tensor input, int[] dim)", A("aten::count_nonzero.dim_IntList")},
         {"(Tensor input, int? dim=None)", A("aten::count_nonzero")}});
}

void variances(Table& t) {
  unsigned both = kTorch | kMethod;
  for (const char* n : {"var", "std", "var_mean", "std_mean"}) {
    std::string op = std::string("aten::") + n;
    bool pair = std::string(n).find("_mean") != std::string::npos;
    const char* result = pair ? "tuple" : nullptr;
    // var_mean and std_mean are functions only.
    t.def(n, pair ? unsigned(kTorch) : both,
          {{"(Tensor input, int[1]? dim, bool unbiased=True, bool keepdim=False)", to_aten(op + ".dim"), result},
           {"(Tensor input, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)",
            to_aten(op + ".correction"), result},
           {"(Tensor input, bool unbiased=True)", to_aten(op), result}});
  }
}

// torch.norm / Tensor.norm (torch/functional.py): p is a number, "fro" or None.
ValueList norm(const Bound& b) {
  Mode m = b.mode();
  const Tensor& x = b.tensor(0);
  const Value& p = b[1];
  Value dim = b[2];
  bool keepdim = b.boolean(3);
  KILN_USER_CHECK(!(p.kind() == Value::Kind::String && p.to_string() != "fro"), "norm: p='", p.to_string(),
                  "' is not supported (only numbers and 'fro')");
  KILN_USER_CHECK(p.is_none() || p.kind() == Value::Kind::String || p.is_int() || p.is_float(),
                  "norm(): argument 'p' must be a number or 'fro', not ", p.repr());
  Value pv = p.is_none() || p.kind() == Value::Kind::String ? Value(2.0) : p;
  Tensor in = x;
  if (!b.is_none(4)) in = aten_t(m, "aten::to.dtype", {b[0], b[4]});
  if (dim.is_int()) dim = Value::int_list({dim.to_int()});
  if (dim.is_none()) {
    if (!keepdim) return aten(m, "aten::norm.Scalar", {in, pv});
    dim = Value::int_list(all_dims(x));
  }
  return aten(m, "aten::norm.ScalarOpt_dim", {in, pv, dim, keepdim});
}

void norms(Table& t) {
  std::vector<Signature> sigs{parse_signature("norm", "(Tensor input, Any p=\"fro\", Any dim=None, bool keepdim=False, ScalarType? dtype=None)")};
  sigs[0].handler = norm;
  t.add("torch", "norm", PyKind::PyFunction, sigs, "torch.functional.norm");
  t.add("Tensor", "norm", PyKind::Method, sigs);
  t.def_in("torch", "dist", PyKind::TorchBuiltin, {{"(Tensor input, Tensor other, Scalar p=2)", [](const Bound& b) {
             Tensor d = aten_t(b.mode(), "aten::sub.Tensor", {b[0], b[1]});
             return aten(b.mode(), "aten::norm.Scalar", {d, b[2]});
           }}});
  t.add("Tensor", "dist", PyKind::Method, {[] {
          Signature s = parse_signature("dist", "(Tensor input, Tensor other, Scalar p=2)");
          s.handler = [](const Bound& b) {
            return aten(b.mode(), "aten::norm.Scalar", {aten_t(b.mode(), "aten::sub.Tensor", {b[0], b[1]}), b[2]});
          };
          return s;
        }()});
}

void scans_and_sorting(Table& t) {
  unsigned both = kTorch | kMethod;
  t.def("cumsum", both | kInplaceMethod, {{"(Tensor input, int dim, *, ScalarType? dtype=None)", A("aten::cumsum")}});
  t.def("cumprod", both | kInplaceMethod, {{"(Tensor input, int dim, *, ScalarType? dtype=None)", A("aten::cumprod")}});
  t.def("median", both,
        {{"(Tensor input)", A("aten::median")},
         {"(Tensor input, int dim, bool keepdim=False)", A("aten::median.dim"), "median(values,indices)"}});
  t.def("kthvalue", both, {{"(Tensor input, int k, int dim=-1, bool keepdim=False)", A("aten::kthvalue"),
                            "kthvalue(values,indices)"}});
  t.def("sort", both,
        {{"(Tensor input, *, bool? stable, int dim=-1, bool descending=False)", A("aten::sort.stable"),
          "sort(values,indices)"},
         {"(Tensor input, int dim=-1, bool descending=False)", A("aten::sort"), "sort(values,indices)"}});
  t.def("argsort", both,
        {{"(Tensor input, *, bool stable, int dim=-1, bool descending=False)", A("aten::argsort.stable")},
         {"(Tensor input, int dim=-1, bool descending=False)", A("aten::argsort")}});
  t.def("msort", both, {{"(Tensor input)", A("aten::msort")}});
  t.def("topk", both, {{"(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True)", A("aten::topk"),
                        "topk(values,indices)"}});
  t.def("nonzero", both,
        {{"(Tensor input)", A("aten::nonzero")},
         {"(Tensor input, *, bool as_tuple)", [](const Bound& b) {
            Tensor nz = aten_t(b.mode(), "aten::nonzero", {b[0]});
            if (!b.boolean(1)) return ValueList{nz};
            return aten(b.mode(), "aten::unbind.int", {aten_t(b.mode(), "aten::t", {nz}), Value(int64_t{0})}).at(0).to_list();
          }}});
  t.def("argwhere", both, {{"(Tensor input)", A("aten::argwhere")}});
  // torch.unique is a Python function (torch/functional.py) over _unique2.
  auto unique = [](const Bound& b) {
    KILN_USER_CHECK(b.is_none(4), "unique(dim=...) is not supported; only the flattened form");
    ValueList r = aten(b.mode(), "aten::_unique2", {b[0], b[1], b[2], b[3]});
    bool inverse = b.boolean(2), counts = b.boolean(3);
    if (!inverse && !counts) return ValueList{r[0]};
    ValueList out{r[0]};
    if (inverse) out.push_back(r[1]);
    if (counts) out.push_back(r[2]);
    return out;
  };
  std::vector<Signature> sigs{parse_signature(
      "unique", "(Tensor input, bool sorted=True, bool return_inverse=False, bool return_counts=False, int? dim=None)")};
  sigs[0].handler = unique;
  t.add("torch", "unique", PyKind::Dispatch, sigs, "torch.functional.unique");
  t.add("Tensor", "unique", PyKind::Method, sigs);
  t.def("unique_consecutive", kMethod,
        {{"(Tensor input, bool return_inverse=False, bool return_counts=False, int? dim=None)", [](const Bound& b) {
            ValueList r = aten(b.mode(), "aten::unique_consecutive", {b[0], b[1], b[2], b[3]});
            ValueList out{r[0]};
            if (b.boolean(1)) out.push_back(r[1]);
            if (b.boolean(2)) out.push_back(r[2]);
            return out;
          }}});
}

}  // namespace

void register_reductions(Table& t) {
  sums(t);
  variances(t);
  norms(t);
  scans_and_sorting(t);
}

}  // namespace kiln::torchapi::detail
