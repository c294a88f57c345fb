#pragma once
// Random decomposed-ATen graphs for the code generator fuzzer: pointwise ops
// from the loop lowering's table, reductions, views, broadcasts, scalar
// operands, casts and mixed dtypes, built through GraphEmitter so every node
// has its meta['val'], plus random inputs for them (some non-contiguous).
//
// The graphs are meant to be compared against the ATen interpreter, so the
// generator keeps the comparison meaningful:
//   - log/sqrt/rsqrt see abs(x) + 0.5 and a Tensor divisor abs(y) + 0.5, so no
//     value is a NaN or infinity the eager run did not also get on purpose;
//   - a value is "exact" when every op on its way from the inputs rounds the
//     same however it is computed (views, neg, abs, relu, max/min, integer
//     arithmetic, comparisons, where, amax/amin). Comparisons and casts to an
//     integer or bool dtype take exact values only: a float the generated code
//     rounds one ulp differently (FMA contraction, another summation order,
//     vector libm) would otherwise flip a comparison or a truncation and make
//     a false mismatch;
//   - exp sees tanh(x) * 4 at most, so chains stay well inside the range
//     where a relative tolerance means something.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "graph_draws.h"
#include "core/util/status.h"

namespace kiln::test {

class CodegenGraphGenerator : GraphDraws {
 public:
  explicit CodegenGraphGenerator(uint32_t seed) : GraphDraws(seed), em_(g_) {}

  // The graph, and inputs for it (placeholder order).
  Graph build(std::vector<Tensor>* inputs) {
    special_values_ = chance(0.05);
    Shape base = random_shape(chance(0.05) ? 0 : pick(1, 4));
    int count = pick(1, 3);
    for (int i = 0; i < count; ++i) {
      Shape s = base;
      for (int64_t& d : s)
        if (chance(0.2)) d = 1;  // broadcasts against the others
      if (!s.empty() && chance(0.1)) s.erase(s.begin());  // a lower rank broadcasts too
      DType dtype = input_dtype();
      Tensor data = random_input(s, dtype);
      inputs->push_back(data);
      add(em_.placeholder("x", Tensor::meta(s, dtype)), true);
    }
    int ops = pick(3, 14);
    for (int tries = 0; emitted_ < ops && tries < 300; ++tries) step();
    std::vector<pipeline::Var> outs{vars_.back().var};
    for (int k = pick(0, 2); k > 0; --k) outs.push_back(any().var);
    em_.output(outs);
    return std::move(g_);
  }

 private:
  using Var = pipeline::Var;
  using EArg = pipeline::EArg;
  struct Slot {
    Var var;
    bool exact;
  };

  Slot any() { return vars_[size_t(pick(0, int(vars_.size()) - 1))]; }
  Slot recent() { return vars_[size_t(pick(std::max(0, int(vars_.size()) - 3), int(vars_.size()) - 1))]; }
  Slot exact_one() {
    std::vector<Slot> e;
    for (const Slot& s : vars_)
      if (s.exact) e.push_back(s);
    return e.empty() ? Slot{} : one_of(e);
  }
  Tensor meta(Var v) const { return em_.tensor(v); }  // a copy: the next call may move the metas
  static bool floating(DType d) { return is_floating(d); }

  Shape random_shape(int rank) {
    Shape s(size_t(rank), 1);
    for (int64_t& d : s) d = chance(0.15) ? 1 : pick(2, 7);
    if (rank > 0 && chance(0.1)) s.back() = pick(17, 70);  // longer than one vector
    return s;
  }

  DType input_dtype() {
    double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (r < 0.55) return DType::Float32;
    if (r < 0.67) return DType::Float64;
    if (r < 0.77) return DType::Int64;
    if (r < 0.85) return DType::Int32;
    if (r < 0.93) return DType::Bool;
    return r < 0.965 ? DType::BFloat16 : DType::Float16;
  }

  // Values in [-2, 2] for floats, [-5, 5] for integers (small, so integer
  // chains do not overflow), some NaN and infinities in a few graphs;
  // non-contiguous a third of the time (a transposed or strided view of a
  // bigger buffer, which run() copies to the compiled layout).
  Tensor random_input(const Shape& s, DType dtype) {
    Shape storage_sizes = s;
    bool transposed = s.size() >= 2 && chance(0.2);
    bool strided = !s.empty() && !transposed && chance(0.15);
    if (transposed) std::swap(storage_sizes[0], storage_sizes[1]);
    if (strided) storage_sizes.back() *= 2;
    std::vector<double> v(size_t(shape_numel(storage_sizes)));
    std::uniform_real_distribution<double> real(-2.0, 2.0);
    for (double& x : v) {
      if (dtype == DType::Bool) x = chance(0.5);
      else if (!floating(dtype)) x = pick(-5, 5);
      else x = real(rng_);
      if (floating(dtype) && special_values_ && chance(0.05)) x = one_of<double>({NAN, INFINITY, -INFINITY, 0.0});
    }
    Tensor t = Tensor::from_vector(v, storage_sizes).to(dtype);
    if (transposed) t = t.transpose(0, 1);
    if (strided) t = t.slice(int64_t(s.size()) - 1, 0, storage_sizes.back(), 2);
    return t;
  }

  void add(Var v, bool exact) { vars_.push_back({v, exact}); }

  // Emits the call; an invalid Var (and nothing added) when the meta functions reject it.
  Var call(const std::string& op, const std::vector<EArg>& args, bool exact, const pipeline::EKwargs& kwargs = {}) {
    try {
      Var v = em_.call1(op, args, kwargs);
      add(v, exact);
      ++emitted_;
      return v;
    } catch (const Error&) {
      return Var{};
    }
  }

  // abs(x) + 0.5: positive, away from the poles of log, rsqrt and division.
  Var positive(Var a) {
    if (meta(a).dtype() == DType::Bool) return Var{};  // eager has no abs for bool (the meta function lets it pass)
    Var ab = call("aten::abs.default", {a}, false);
    return ab.valid() ? call("aten::add.Scalar", {ab, 0.5}, false) : Var{};
  }

  EArg scalar() { return one_of<EArg>({EArg(int64_t(0)), EArg(int64_t(2)), EArg(int64_t(-3)), EArg(0.5), EArg(-1.25), EArg(3.0)}); }

  void step() {
    Slot s = chance(0.6) ? recent() : any();
    Var a = s.var;
    Tensor t = meta(a);
    const int64_t rank = t.dim();
    const bool fl = floating(t.dtype());
    auto dim = [&] { return int64_t(pick(0, int(std::max<int64_t>(rank, 1)) - 1)) - (chance(0.3) ? rank : 0); };
    switch (pick(0, 16)) {
      case 0:
      case 1: {  // unary pointwise
        std::string op = one_of<std::string>({"neg", "abs", "relu", "sin", "cos", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt"});
        bool exact = s.exact && (op == "neg" || op == "abs" || op == "relu");
        if (op == "log" || op == "sqrt" || op == "rsqrt") {
          if (Var p = positive(a); p.valid()) call("aten::" + op + ".default", {p}, false);
        } else if (op == "exp") {
          if (Var th = call("aten::tanh.default", {a}, false); th.valid())
            if (Var m = call("aten::mul.Scalar", {th, 4.0}, false); m.valid()) call("aten::exp.default", {m}, false);
        } else if (!(op == "abs" && t.dtype() == DType::Bool)) {
          call("aten::" + op + ".default", {a}, exact);
        }
        break;
      }
      case 2:
      case 3: {  // binary pointwise, broadcasting
        Slot b = any();
        std::string op = one_of<std::string>({"add", "sub", "mul", "maximum", "minimum", "div"});
        bool ints = !fl && !floating(meta(b.var).dtype());
        bool exact = s.exact && b.exact && (op == "maximum" || op == "minimum" || (ints && op != "div"));
        if (op == "div") {
          if (Var p = positive(b.var); p.valid()) call("aten::div.Tensor", {a, p}, false);
        } else {
          call("aten::" + op + (op == "maximum" || op == "minimum" ? ".default" : ".Tensor"),
               chance(0.5) ? std::vector<EArg>{a, b.var} : std::vector<EArg>{b.var, a}, exact);
        }
        break;
      }
      case 4: {  // a scalar operand
        std::string op = one_of<std::string>({"add", "sub", "mul", "div"});
        EArg c = scalar();
        bool int_scalar = c.value.is_int();
        call("aten::" + op + ".Scalar", {a, c}, s.exact && !fl && int_scalar && op != "div");
        break;
      }
      case 5: {  // a comparison of exact values, and where
        Slot x = exact_one();
        if (!x.var.valid()) break;
        std::string op = one_of<std::string>({"eq", "ne", "lt", "le", "gt", "ge"});
        Slot y = exact_one();
        Var c = chance(0.5) ? call("aten::" + op + ".Tensor", {x.var, y.var}, true)
                            : call("aten::" + op + ".Scalar", {x.var, one_of<EArg>({EArg(int64_t(0)), EArg(1.0), EArg(-0.5)})}, true);
        if (c.valid() && chance(0.6)) {
          Slot o = any();
          call("aten::where.self", {c, a, o.var}, s.exact && o.exact);
        }
        break;
      }
      case 6:
      case 7: {  // reductions over one or more dims, keepdim both ways
        std::string op = one_of<std::string>({"sum", "sum", "amax", "amin", "mean"});
        std::vector<int64_t> dims;
        if (rank > 0) {
          std::vector<int64_t> all(static_cast<size_t>(rank));
          std::iota(all.begin(), all.end(), 0);
          std::shuffle(all.begin(), all.end(), rng_);
          dims.assign(all.begin(), all.begin() + pick(1, int(rank)));
          for (int64_t& d : dims)
            if (chance(0.3)) d -= rank;
        }
        bool keep = chance(0.5);
        bool exact = s.exact && (op == "amax" || op == "amin" || (op == "sum" && !fl));
        if (op == "sum" && chance(0.15)) call("aten::sum.default", {a}, exact);
        else if (op == "sum") call("aten::sum.dim_IntList", {a, dims, keep}, exact);
        else if (op == "mean") call("aten::mean.dim", {a, dims, keep}, false);
        else call("aten::" + op + ".default", {a, dims, keep}, exact);
        break;
      }
      case 8: {  // permute / transpose
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        if (chance(0.7)) call("aten::permute.default", {a, perm}, s.exact);
        else call("aten::transpose.int", {a, dim(), dim()}, s.exact);
        break;
      }
      case 9: {  // slice with a step, or select
        if (rank == 0) break;
        int64_t d = dim(), size = t.size(d);
        int64_t start = pick(0, int(std::max<int64_t>(size - 1, 0))), end = pick(int(start) + 1, int(size) + 2);
        if (chance(0.2) && size > 1) call("aten::select.int", {a, d, int64_t(pick(-int(size), int(size) - 1))}, s.exact);
        else call("aten::slice.Tensor", {a, d, start, end, int64_t(pick(1, 3))}, s.exact);
        break;
      }
      case 10: {  // expand size-1 dims, maybe with a new leading dim
        std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
        for (int64_t& d : sizes)
          if (d == 1 && chance(0.7)) d = pick(2, 4);
        if (chance(0.3) || sizes.empty()) sizes.insert(sizes.begin(), pick(1, 3));
        call("aten::expand.default", {a, sizes}, s.exact);
        break;
      }
      case 11:  // unsqueeze / squeeze
        if (chance(0.5)) call("aten::unsqueeze.default", {a, int64_t(pick(0, int(rank)))}, s.exact);
        else if (rank > 0) call("aten::squeeze.dim", {a, dim()}, s.exact);
        break;
      case 12: {  // view (contiguous values only; the meta rejects others) or reshape to another factorization
        int64_t n = t.numel();
        std::vector<int64_t> shape{n};
        for (int64_t f = 2; f < n; ++f)
          if (n % f == 0 && chance(0.4)) {
            shape = {f, n / f};
            break;
          }
        if (chance(0.3)) shape.insert(shape.begin() + pick(0, int(shape.size())), 1);
        if (t.is_contiguous() && chance(0.6)) call("aten::view.default", {a, shape}, s.exact);
        else call("aten::reshape.default", {a, shape}, s.exact);
        break;
      }
      case 13:
      case 14: {  // casts: floats to integers and bool only from exact values
        DType to = one_of<DType>({DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool, DType::Float32,
                                  DType::BFloat16, DType::Float16});
        Slot src = floating(to) ? s : exact_one();
        if (!src.var.valid()) break;
        // NaN and infinities have no integer value (the conversion is undefined).
        if (!floating(to) && to != DType::Bool && special_values_ && floating(meta(src.var).dtype())) break;
        bool exact = src.exact;  // a conversion rounds one way only
        // (prims::convert_element_type, which the lowering takes too, has no eager kernel.)
        call("aten::_to_copy.default", {src.var}, exact, {{"dtype", EArg(to)}});
        break;
      }
      case 15:  // a copy (clone), which the lowering treats as a pointwise identity
        call("aten::clone.default", {a}, s.exact);
        break;
      case 16:  // a 0-dim operand
        if (Var total = call("aten::sum.default", {any().var}, false); total.valid())
          call("aten::mul.Tensor", {a, total}, false);
        break;
    }
  }

  Graph g_;
  pipeline::GraphEmitter em_;
  std::vector<Slot> vars_;
  int emitted_ = 0;
  bool special_values_ = false;
};

}  // namespace kiln::test
