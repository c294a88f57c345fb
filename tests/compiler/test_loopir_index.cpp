// Loop-IR index expressions: builders, printer, evaluation, the simplifier's
// rules one by one, a randomized equivalence check of the simplifier, and views
// folded into indexing checked against Kiln's own strided tensors.
#include <random>

#include "compiler/loopir/index_expr.h"
#include "compiler/loopir/simplify_index.h"
#include "compiler/loopir/view_index.h"
#include "core/util/status.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::loopir;

namespace {

IndexRef x(int64_t i) { return index_var(i); }
IndexRef c(int64_t v) { return index_const(v); }
IndexRef fdiv(IndexRef a, int64_t b) { return index_floordiv(std::move(a), c(b)); }
IndexRef fmod(IndexRef a, int64_t b) { return index_mod(std::move(a), c(b)); }

std::string simp(const IndexRef& e, const IndexRanges& r = {}) { return to_string(simplify_index(e, r)); }

int node_count(const IndexRef& e) {
  int n = 1;
  for (const auto& o : e->operands) n += node_count(o);
  return n;
}

// Every point of the loop ranges (extents small) and of the symbol ranges.
void for_each_point(const std::vector<int64_t>& extents_or_minus1, const std::vector<std::pair<std::string, IndexRange>>& syms,
                    const std::function<void(const IndexEnv&)>& fn) {
  IndexEnv env;
  env.vars.assign(extents_or_minus1.size(), 0);
  std::function<void(size_t)> over_syms, over_vars;
  over_vars = [&](size_t i) {
    if (i == env.vars.size()) return fn(env);
    int64_t n = extents_or_minus1[i] >= 0 ? extents_or_minus1[i] : env.syms.at(syms[0].first);
    for (int64_t v = 0; v < n; ++v) {
      env.vars[i] = v;
      over_vars(i + 1);
    }
  };
  over_syms = [&](size_t k) {
    if (k == syms.size()) return over_vars(0);
    for (int64_t v = syms[k].second.lo; v <= syms[k].second.hi; ++v) {
      env.syms[syms[k].first] = v;
      over_syms(k + 1);
    }
  };
  over_syms(0);
}

// Random expressions over x0..x2 and s0, with divisors that are never zero.
class ExprGen {
 public:
  explicit ExprGen(uint32_t seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  IndexRef divisor() {
    static const int64_t kDivisors[] = {1, 2, 2, 3, 4, 4, 6, 8, 8, 16, -3};
    int k = pick(10);
    if (k < 7) return c(kDivisors[pick(11)]);
    if (k < 9) return index_sym("s0");
    return leaf() * c(0) + x(pick(3)) + 1;  // a non-constant divisor >= 1
  }
  // A number split into mixed-radix digits, as reshapes produce them, with the
  // occasional wrong coefficient so that the merge must also refuse.
  IndexRef digits(int depth) {
    IndexRef base = pick(2) ? x(pick(3)) : gen(depth);
    int64_t r1 = 2 + pick(3), r2 = 2 + pick(3), s = 1 + pick(3);
    int64_t below = pick(2) ? 1 : 2;
    auto digit = [&](int64_t divisor, int64_t modulus) {
      IndexRef q = divisor == 1 ? base : index_floordiv(base, c(divisor));
      return modulus ? index_mod(q, c(modulus)) : q;
    };
    auto coeff = [&](int64_t v) { return c(pick(6) == 0 ? v + 1 : v); };
    IndexRef e = coeff(s) * digit(below, r1) + coeff(s * r1) * digit(below * r1, r2);
    if (pick(2)) e = e + coeff(s * r1 * r2) * digit(below * r1 * r2, 0);
    return e;
  }
  IndexRef leaf() {
    switch (pick(6)) {
      case 0: return c(int64_t(pick(2) ? 1 << pick(5) : pick(25) - 6));
      case 1: return index_sym("s0");
      default: return x(pick(3));
    }
  }
  IndexRef gen(int depth) {
    if (depth == 0 || pick(5) == 0) return leaf();
    switch (pick(9)) {
      case 0:
      case 1: return gen(depth - 1) + gen(depth - 1);
      case 2: return c(static_cast<int64_t>(1) << pick(4)) * gen(depth - 1);
      case 3: return (pick(2) ? leaf() : c(pick(7) - 3)) * gen(depth - 1);
      case 4: return index_floordiv(gen(depth - 1), divisor());
      case 5: return index_mod(gen(depth - 1), divisor());
      case 6: return pick(2) ? index_min(gen(depth - 1), gen(depth - 1)) : index_max(gen(depth - 1), gen(depth - 1));
      case 7: return digits(depth - 1);
      default: return gen(depth - 1) + c(pick(9) - 4) * gen(depth - 1);
    }
  }

 private:
  std::mt19937 rng_;
};

// Index values of a view, in row-major order of its loop variables.
std::vector<double> index_values(const IndexRef& e, const std::vector<int64_t>& sizes) {
  std::vector<double> out;
  std::vector<int64_t> extents(sizes.begin(), sizes.end());
  for_each_point(extents, {}, [&](const IndexEnv& env) { out.push_back(double(evaluate_index(e, env))); });
  return out;
}

std::vector<int64_t> shape(const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }
std::vector<int64_t> strides(const Tensor& t) { return std::vector<int64_t>(t.strides().begin(), t.strides().end()); }

// The simplified flat index of a strided view.
IndexRef view_index(const Tensor& t) {
  auto vars = loop_vars(t.sizes().size());
  return simplify_index(strided_index(shape(t), strides(t), t.storage_offset(), vars), loop_ranges(shape(t)));
}

}  // namespace

class TestLoopirIndex : public QObject {
  Q_OBJECT
 private slots:
  void printer_matches_inductor_style() {
    QCOMPARE(to_string(x(0) + 8 * x(1)), std::string("x0 + 8*x1"));
    QCOMPARE(to_string(fdiv(x(0), 8)), std::string("(x0//8)"));
    QCOMPARE(to_string(fmod(fdiv(x(0), 8), 4)), std::string("ModularIndexing(x0, 8, 4)"));
    QCOMPARE(to_string(fmod(x(0), 8)), std::string("ModularIndexing(x0, 1, 8)"));
    QCOMPARE(to_string(x(1) + -8 * x(0)), std::string("x1 - 8*x0"));
    QCOMPARE(to_string(-1 * x(0)), std::string("-x0"));
    QCOMPARE(to_string(x(1) + c(-3)), std::string("x1 - 3"));
    QCOMPARE(to_string(2 * (x(0) + x(1))), std::string("2*(x0 + x1)"));
    QCOMPARE(to_string(index_min(x(0), index_sym("s0"))), std::string("Min(x0, s0)"));
    QCOMPARE(to_string(8 * x(0) + x(1), {"p"}), std::string("8*p0 + p1"));
  }

  void evaluation_rounds_toward_negative_infinity() {
    IndexEnv env{{-7, 2}, {}};
    QCOMPARE(evaluate_index(index_floordiv(x(0), x(1)), env), int64_t(-4));
    QCOMPARE(evaluate_index(index_mod(x(0), x(1)), env), int64_t(1));
    QCOMPARE(evaluate_index(index_mod(c(7), c(-2)), env), int64_t(-1));
    QCOMPARE(evaluate_index(index_floordiv(c(7), c(-2)), env), int64_t(-4));
    QVERIFY_THROWS_EXCEPTION(kiln::Error, evaluate_index(index_floordiv(x(0), c(0)), env));
    QVERIFY_THROWS_EXCEPTION(kiln::Error, evaluate_index(index_sym("s9"), env));
  }

  void constant_folding() {
    QCOMPARE(simp((c(3) + c(4)) * c(2)), std::string("14"));
    QCOMPARE(simp(fdiv(c(-7), 2)), std::string("-4"));
    QCOMPARE(simp(fmod(c(-7), 2)), std::string("1"));
    QCOMPARE(simp(index_min(c(3), c(5))), std::string("3"));
    QCOMPARE(simp(index_max(c(3), c(5))), std::string("5"));
    QCOMPARE(simp(fdiv(x(0), 1)), std::string("x0"));
    QCOMPARE(simp(fmod(x(0), 1)), std::string("0"));
    QCOMPARE(simp(x(0) * c(0) + c(2)), std::string("2"));
  }

  void sums_and_products_are_canonical() {
    QCOMPARE(simp(2 * x(0) + 3 * x(0)), std::string("5*x0"));
    QCOMPARE(simp(x(0) + -1 * x(0)), std::string("0"));
    QCOMPARE(simp(x(1) + x(0)), std::string("x0 + x1"));
    QCOMPARE(simp(c(3) + 8 * x(1) + x(0)), std::string("x0 + 8*x1 + 3"));
    QCOMPARE(simp(x(1) * x(0)), simp(x(0) * x(1)));
    QCOMPARE(simp(2 * (x(0) + c(3))), std::string("2*x0 + 6"));
    QCOMPARE(simp((x(0) + x(1)) + (x(2) + x(0))), std::string("2*x0 + x1 + x2"));
    QCOMPARE(simp(4 * index_sym("s0") * x(1) + x(0)), std::string("x0 + 4*x1*s0"));
    QCOMPARE(simp(index_max(x(1), x(0))), simp(index_max(x(0), x(1))));
  }

  void floordiv_and_mod_use_ranges() {
    IndexRanges r = IndexRanges().extent(0, 8).extent(1, 5);
    QCOMPARE(simp(fdiv(x(0) + 8 * x(1), 8), r), std::string("x1"));
    QCOMPARE(simp(fmod(x(0) + 8 * x(1), 8), r), std::string("x0"));
    QCOMPARE(simp(fdiv(x(0), 8), r), std::string("0"));
    QCOMPARE(simp(fmod(x(0), 8), r), std::string("x0"));
    QCOMPARE(simp(fdiv(x(0) + 16, 8), r), std::string("2"));
    QCOMPARE(simp(fmod(x(0) + 17, 8), r), simp(fmod(x(0) + 1, 8), r));
    QCOMPARE(simp(fdiv(x(0) + 8 * x(1) + c(17), 8)), std::string("x1 + ((x0 + 1)//8) + 2"));
    // Without ranges, only the exact multiples come out.
    QCOMPARE(simp(fdiv(x(0) + 8 * x(1), 8)), std::string("x1 + (x0//8)"));
    QCOMPARE(simp(fmod(x(0) + 8 * x(1), 8)), std::string("ModularIndexing(x0, 1, 8)"));
    // A value that may be negative keeps its division ((-1) // 8 == -1); the
    // constant is normalized into [0, 8).
    QCOMPARE(simp(fdiv(x(0) + c(-1), 8), r), std::string("((x0 + 7)//8) - 1"));
    QCOMPARE(simp(fmod(x(0) + c(-1), 8), r), std::string("ModularIndexing(x0 + 7, 1, 8)"));
    // ModularIndexing(x, b, m) whose base stays below b*m is a plain division.
    QCOMPARE(simp(fmod(fdiv(x(0), 2), 4), r), std::string("(x0//2)"));
    // Min and Max decided by ranges.
    QCOMPARE(simp(index_min(x(0), c(8)), r), std::string("x0"));
    QCOMPARE(simp(index_max(x(0), c(0)), r), std::string("x0"));
  }

  void nested_division_and_modulo() {
    IndexRanges r = IndexRanges().extent(0, 64);
    QCOMPARE(simp(fdiv(fdiv(x(0), 4), 2), r), std::string("(x0//8)"));
    QCOMPARE(simp(fmod(fmod(x(0), 16), 4), r), std::string("ModularIndexing(x0, 1, 4)"));
    QCOMPARE(simp(fdiv(fmod(x(0), 16), 4), r), std::string("ModularIndexing(x0, 4, 4)"));
  }

  void common_factors_and_small_terms() {
    IndexRanges r = IndexRanges().extent(0, 64).extent(1, 64);
    QCOMPARE(simp(fdiv(4 * x(0) + 8 * x(1), 8), r), std::string("x1 + (x0//2)"));
    QCOMPARE(simp(fmod(4 * x(0) + 8 * x(1), 8), r), std::string("4*ModularIndexing(x0, 1, 2)"));
    IndexRanges small = IndexRanges().extent(0, 4).extent(1, 10);
    QCOMPARE(simp(fdiv(x(0) + 4 * x(1), 8), small), std::string("(x1//2)"));
    QCOMPARE(simp(fmod(x(0) + 4 * x(1), 8), small), std::string("x0 + 4*ModularIndexing(x1, 1, 2)"));
  }

  void mixed_radix_digits_merge() {
    IndexRanges r = IndexRanges().extent(0, 64);
    QCOMPARE(simp(4 * fmod(fdiv(x(0), 4), 2) + fmod(x(0), 4), r), std::string("ModularIndexing(x0, 1, 8)"));
    QCOMPARE(simp(fmod(x(0), 4) + 4 * fdiv(x(0), 4), r), std::string("x0"));
    QCOMPARE(simp(fmod(fdiv(x(0), 2), 4) + 4 * fdiv(x(0), 8), r), std::string("(x0//2)"));
    QCOMPARE(simp(3 * fmod(x(0), 4) + 12 * fmod(fdiv(x(0), 4), 2) + 24 * fdiv(x(0), 8), r), std::string("3*x0"));
    IndexRanges r8 = IndexRanges().extent(0, 8);
    QCOMPARE(simp(4 * fmod(fdiv(x(0), 4), 2) + fmod(x(0), 4), r8), std::string("x0"));
    // Different coefficients are different numbers: nothing merges.
    QCOMPARE(simp(5 * fmod(fdiv(x(0), 4), 2) + fmod(x(0), 4), r), std::string("ModularIndexing(x0, 1, 4) + 5*ModularIndexing(x0, 4, 2)"));
  }

  void symbolic_sizes() {
    IndexRef s0 = index_sym("s0");
    IndexRanges r = IndexRanges().extent(0, s0).extent(1, 4);
    QCOMPARE(simp(index_floordiv(x(0) + s0 * x(1), s0), r), std::string("x1"));
    QCOMPARE(simp(index_mod(x(0) + s0 * x(1), s0), r), std::string("x0"));
    QCOMPARE(simp(index_floordiv(x(0), s0), r), std::string("0"));
    QCOMPARE(simp(index_mod(x(0), s0), r), std::string("x0"));
    QCOMPARE(simp(x(1) * s0 + x(0), r), std::string("x0 + x1*s0"));
    // x1 is not bounded by s0: the division stays.
    QCOMPARE(simp(index_floordiv(x(1), s0), r), std::string("(x1//s0)"));
    QCOMPARE(index_range(x(0) + 8 * s0, r).lo, int64_t(8));
    QCOMPARE(index_range(x(0) + 8 * s0, r).hi, IndexRange::kInf);
  }

  void unchanged_expressions_are_the_same_object() {
    IndexRanges r = IndexRanges().extent(0, 64).extent(1, 3);
    IndexRef canonical = simplify_index(x(0) + 8 * x(1) + fdiv(x(0), 4), r);
    QVERIFY(simplify_index(canonical, r) == canonical);
    IndexRef e = x(0) + 8 * x(1);
    QVERIFY(substitute_vars(e, {{5, x(2)}}) == e);
    IndexRef moved = substitute_vars(e, {{1, x(2) + 1}});
    QCOMPARE(simp(moved), std::string("x0 + 8*x2 + 8"));
    int vars = 0;
    struct CountVars : IndexVisitor {
      int* n;
      explicit CountVars(int* count) : n(count) {}
      void visit_node(const IndexRef& node) override { *n += node->kind == IndexKind::Var; }
    } counter(&vars);
    counter.visit(moved);
    QCOMPARE(vars, 2);
  }

  void randomized_simplification_is_exact_and_idempotent() {
    // Seeds fixed for reproducibility; KILN_LOOPIR_SEEDS=<n> runs n seeds for a long hunt.
    const int kPerSeed = 4000;
    const int seeds = qEnvironmentVariableIsSet("KILN_LOOPIR_SEEDS") ? qEnvironmentVariableIntValue("KILN_LOOPIR_SEEDS") : 4;
    const int kExpressions = kPerSeed * seeds;
    int checked_points = 0, shrunk = 0, nodes_before = 0, nodes_after = 0;
    for (int n = 0; n < kExpressions; ++n) {
      static ExprGen gen(0);
      if (n % kPerSeed == 0) gen = ExprGen(uint32_t(20261122 + n / kPerSeed));
      std::vector<int64_t> extents(3);
      for (auto& v : extents) v = 1 + gen.pick(12);
      IndexRange s0_range{1 + gen.pick(4), 0};
      s0_range.hi = s0_range.lo + gen.pick(5);
      bool symbolic_extent = gen.pick(4) == 0;
      IndexRanges ranges;
      ranges.extent(0, extents[0]).extent(1, extents[1]);
      if (symbolic_extent) {
        ranges.extent(2, index_sym("s0"));
        extents[2] = -1;
      } else {
        ranges.extent(2, extents[2]);
      }
      ranges.sym_ranges["s0"] = s0_range;
      IndexRef e = gen.gen(1 + gen.pick(4));
      IndexRef s = simplify_index(e, ranges);
      IndexRef again = simplify_index(s, ranges);
      if (again != s)
        QFAIL(qPrintable(QString("not idempotent: %1 -> %2 -> %3")
                             .arg(QString::fromStdString(to_string(e)), QString::fromStdString(to_string(s)),
                                  QString::fromStdString(to_string(again)))));
      IndexRange bounds = index_range(s, ranges);
      for_each_point(extents, {{"s0", s0_range}}, [&](const IndexEnv& env) {
        int64_t want = evaluate_index(e, env), got = evaluate_index(s, env);
        if (want != got || want < bounds.lo || want > bounds.hi) {
          QString vars;
          for (int64_t v : env.vars) vars += QString::number(v) + " ";
          qFatal("mismatch at x=[%s] s0=%lld: %s = %lld but %s = %lld (range [%lld, %lld])", qPrintable(vars),
                 (long long)env.syms.at("s0"), to_string(e).c_str(), (long long)want, to_string(s).c_str(),
                 (long long)got, (long long)bounds.lo, (long long)bounds.hi);
        }
        ++checked_points;
      });
      nodes_before += node_count(e);
      nodes_after += node_count(s);
      shrunk += node_count(s) < node_count(e);
    }
    qInfo("%d expressions, %d points compared, %d got smaller, nodes %d -> %d", kExpressions, checked_points, shrunk,
          nodes_before, nodes_after);
    QVERIFY(checked_points > 100000);
    QVERIFY(shrunk > kExpressions / 4);
  }

  void views_fold_into_indexing() {
    Tensor t = test::arange_f32({2, 3, 4});  // element value == storage index
    Tensor permuted = t.permute(std::vector<int64_t>{2, 0, 1});
    QCOMPARE(to_string(view_index(permuted)), std::string("x0 + 12*x1 + 4*x2"));
    QCOMPARE(index_values(view_index(permuted), shape(permuted)), test::values(permuted));

    Tensor sliced = t.slice(2, 1, 4, 2);
    QCOMPARE(to_string(view_index(sliced)), std::string("12*x0 + 4*x1 + 2*x2 + 1"));
    QCOMPARE(index_values(view_index(sliced), shape(sliced)), test::values(sliced));

    Tensor column = test::arange_f32({3, 1});
    Tensor expanded = column.expand({3, 4});
    QCOMPARE(to_string(view_index(expanded)), std::string("x0"));
    QCOMPARE(index_values(view_index(expanded), shape(expanded)), test::values(expanded));
  }

  void reshape_folds_through_division_and_modulo() {
    // Flattening a contiguous tensor and viewing it back is the identity.
    std::vector<int64_t> flat{24};
    auto back = reshape_indices({4, 6}, flat, loop_vars(1));
    IndexRef flat_index = simplify_index(strided_index({4, 6}, {6, 1}, 0, back), loop_ranges(flat));
    QCOMPARE(to_string(flat_index), std::string("x0"));
    QCOMPARE(to_string(simplify_index(back[0], loop_ranges(flat))), std::string("(x0//6)"));
    QCOMPARE(to_string(simplify_index(back[1], loop_ranges(flat))), std::string("ModularIndexing(x0, 1, 6)"));

    // Reshaping a permuted tensor copies in eager mode; here it is only indexing.
    Tensor t = test::arange_f32({2, 3, 4});
    for (auto perm : std::vector<std::vector<int64_t>>{{2, 0, 1}, {1, 2, 0}, {0, 1, 2}, {2, 1, 0}}) {
      Tensor p = t.permute(perm);
      for (auto to : std::vector<std::vector<int64_t>>{{24}, {8, 3}, {4, 6}, {2, 2, 6}, {3, 8}, {6, 2, 2}}) {
        auto from_index = reshape_indices(shape(p), to, loop_vars(to.size()));
        IndexRef e = simplify_index(strided_index(shape(p), strides(p), p.storage_offset(), from_index), loop_ranges(to));
        QCOMPARE(index_values(e, to), test::values(p.reshape(to)));
        QVERIFY(simplify_index(e, loop_ranges(to)) == e);
      }
    }
    // A contiguous source reshapes to plain affine indexing.
    auto idx = reshape_indices({2, 3, 4}, {6, 4}, loop_vars(2));
    QCOMPARE(to_string(simplify_index(strided_index({2, 3, 4}, {12, 4, 1}, 0, idx), loop_ranges({6, 4}))),
             std::string("4*x0 + x1"));
    QVERIFY_THROWS_EXCEPTION(kiln::Error, reshape_indices({2, 3}, {5}, loop_vars(1)));
  }
};

QTEST_GUILESS_MAIN(TestLoopirIndex)
#include "test_loopir_index.moc"
