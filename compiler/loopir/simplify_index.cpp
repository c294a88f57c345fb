#include "compiler/loopir/simplify_index.h"

#include <algorithm>
#include <numeric>

#include "core/util/status.h"

namespace kiln::loopir {

namespace {

constexpr int64_t kInf = IndexRange::kInf;
constexpr int64_t kNegInf = IndexRange::kNegInf;

bool is_inf(int64_t v) { return v == kInf || v == kNegInf; }

int64_t clamp128(__int128 v) {
  if (v >= __int128(kInf)) return kInf;
  if (v <= __int128(kNegInf)) return kNegInf;
  return int64_t(v);
}

int64_t sat_add(int64_t a, int64_t b) {
  if (a == kInf || b == kInf) return kInf;
  if (a == kNegInf || b == kNegInf) return kNegInf;
  return clamp128(__int128(a) + b);
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? kNegInf : kInf;
  return clamp128(__int128(a) * b);
}

// floor(a / b) for b > 0, where either may be unbounded.
int64_t sat_floor_div(int64_t a, int64_t b) {
  if (b == kInf) return a >= 0 ? 0 : -1;
  if (is_inf(a)) return a;
  return floor_div(a, b);
}

// Wrapping arithmetic for coefficients: defined behaviour, matches evaluation.
int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

}  // namespace

IndexRange index_range(const IndexRef& e, const IndexRanges& ranges) {
  auto sub = [&](size_t i) { return index_range(e->operands[i], ranges); };
  switch (e->kind) {
    case IndexKind::Const: return {e->value, e->value};
    case IndexKind::Var: {
      auto it = ranges.var_extents.find(e->value);
      if (it == ranges.var_extents.end()) return {0, kInf};
      return {0, sat_add(index_range(it->second, ranges).hi, -1)};
    }
    case IndexKind::Sym: {
      auto it = ranges.sym_ranges.find(e->name);
      return it == ranges.sym_ranges.end() ? IndexRange{1, kInf} : it->second;
    }
    case IndexKind::Add: {
      IndexRange r{0, 0};
      for (size_t i = 0; i < e->operands.size(); ++i) {
        IndexRange o = sub(i);
        r = {sat_add(r.lo, o.lo), sat_add(r.hi, o.hi)};
      }
      return r;
    }
    case IndexKind::Mul: {
      IndexRange r{1, 1};
      for (size_t i = 0; i < e->operands.size(); ++i) {
        IndexRange o = sub(i);
        int64_t c[4] = {sat_mul(r.lo, o.lo), sat_mul(r.lo, o.hi), sat_mul(r.hi, o.lo), sat_mul(r.hi, o.hi)};
        r = {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
      }
      return r;
    }
    case IndexKind::FloorDiv: {
      IndexRange a = sub(0), b = sub(1);
      if (b.lo < 1) return {};
      // For a positive divisor a/b is monotone in each argument: the corners bound it.
      int64_t c[4] = {sat_floor_div(a.lo, b.lo), sat_floor_div(a.lo, b.hi), sat_floor_div(a.hi, b.lo),
                      sat_floor_div(a.hi, b.hi)};
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case IndexKind::Mod: {
      IndexRange a = sub(0), b = sub(1);
      if (b.lo >= 1) {
        if (a.lo >= 0 && a.hi < b.lo) return a;
        return {0, a.lo >= 0 ? std::min(a.hi, sat_add(b.hi, -1)) : sat_add(b.hi, -1)};
      }
      if (b.hi <= -1) return {sat_add(b.lo, 1), 0};
      return {};
    }
    case IndexKind::Min: {
      IndexRange a = sub(0), b = sub(1);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case IndexKind::Max: {
      IndexRange a = sub(0), b = sub(1);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
  }
  return {};
}

namespace {

struct MonoLess {
  bool operator()(const IndexRef& a, const IndexRef& b) const { return compare_index(*a, *b) < 0; }
};

// A sum of coefficient * monomial plus a constant. A monomial is one atom
// (variable, symbol, //, %, Min, Max) or a Mul of sorted atoms, no constant.
struct Poly {
  int64_t constant = 0;
  std::map<IndexRef, int64_t, MonoLess> terms;

  void add_term(const IndexRef& mono, int64_t coeff) {
    int64_t& c = terms[mono];
    c = wrap_add(c, coeff);
    if (c == 0) terms.erase(mono);
  }
  void add(const Poly& p, int64_t scale = 1) {
    constant = wrap_add(constant, wrap_mul(p.constant, scale));
    for (const auto& [m, c] : p.terms) add_term(m, wrap_mul(c, scale));
  }
};

std::vector<IndexRef> atoms_of(const IndexRef& mono) {
  if (mono->kind == IndexKind::Mul) return mono->operands;
  return {mono};
}

IndexRef mono_of_atoms(std::vector<IndexRef> atoms) {
  KILN_CHECK(!atoms.empty(), "empty monomial");
  std::sort(atoms.begin(), atoms.end(), MonoLess());
  return atoms.size() == 1 ? atoms[0] : index_mul(std::move(atoms));
}

// The expression must already be canonical (the output of simplify).
Poly poly_of(const IndexRef& e) {
  Poly p;
  auto add_canonical_term = [&](const IndexRef& t) {
    if (t->kind == IndexKind::Const) {
      p.constant = wrap_add(p.constant, t->value);
    } else if (t->kind == IndexKind::Mul && t->operands[0]->kind == IndexKind::Const) {
      std::vector<IndexRef> rest(t->operands.begin() + 1, t->operands.end());
      p.add_term(mono_of_atoms(std::move(rest)), t->operands[0]->value);
    } else {
      p.add_term(t, 1);
    }
  };
  if (e->kind == IndexKind::Add)
    for (const auto& t : e->operands) add_canonical_term(t);
  else
    add_canonical_term(e);
  return p;
}

IndexRef term_expr(const IndexRef& mono, int64_t coeff) {
  if (coeff == 1) return mono;
  std::vector<IndexRef> ops{index_const(coeff)};
  for (const auto& a : atoms_of(mono)) ops.push_back(a);
  return index_mul(std::move(ops));
}

IndexRef expr_of(const Poly& p) {
  std::vector<IndexRef> ops;
  for (const auto& [m, c] : p.terms) ops.push_back(term_expr(m, c));
  if (p.constant != 0 || ops.empty()) ops.push_back(index_const(p.constant));
  return ops.size() == 1 ? ops[0] : index_add(std::move(ops));
}

Poly poly_product(const Poly& a, const Poly& b) {
  Poly r;
  r.constant = wrap_mul(a.constant, b.constant);
  if (b.constant != 0)
    for (const auto& [m, c] : a.terms) r.add_term(m, wrap_mul(c, b.constant));
  if (a.constant != 0)
    for (const auto& [m, c] : b.terms) r.add_term(m, wrap_mul(c, a.constant));
  for (const auto& [ma, ca] : a.terms)
    for (const auto& [mb, cb] : b.terms) {
      std::vector<IndexRef> atoms = atoms_of(ma);
      for (const auto& x : atoms_of(mb)) atoms.push_back(x);
      r.add_term(mono_of_atoms(std::move(atoms)), wrap_mul(ca, cb));
    }
  return r;
}

// When a term is divisible by the (single-term) divisor, its quotient: the
// coefficient divides and the divisor's atoms are a sub-multiset of the term's.
bool divide_term(const IndexRef& mono, int64_t coeff, const IndexRef& dmono, int64_t dcoeff, IndexRef* qmono,
                 int64_t* qcoeff) {
  if (dcoeff == 0 || coeff % dcoeff != 0) return false;
  std::vector<IndexRef> rest = mono ? atoms_of(mono) : std::vector<IndexRef>{};
  if (dmono) {
    for (const auto& d : atoms_of(dmono)) {
      auto it = std::find_if(rest.begin(), rest.end(), [&](const IndexRef& a) { return equal_index(a, d); });
      if (it == rest.end()) return false;
      rest.erase(it);
    }
  }
  *qmono = rest.empty() ? nullptr : mono_of_atoms(std::move(rest));
  *qcoeff = coeff / dcoeff;
  return true;
}

class Simplifier {
 public:
  explicit Simplifier(const IndexRanges& ranges) : ranges_(ranges) {}

  IndexRef run(const IndexRef& e) {
    switch (e->kind) {
      case IndexKind::Const:
      case IndexKind::Var:
      case IndexKind::Sym: return e;
      case IndexKind::Add: {
        Poly p;
        for (const auto& o : e->operands) p.add(poly_of(run(o)));
        return expr_of(join_dimensions(std::move(p)));
      }
      case IndexKind::Mul: {
        Poly p;
        p.constant = 1;
        for (const auto& o : e->operands) p = poly_product(p, poly_of(run(o)));
        return expr_of(join_dimensions(std::move(p)));
      }
      case IndexKind::FloorDiv: return floordiv(run(e->operands[0]), run(e->operands[1]));
      case IndexKind::Mod: return mod(run(e->operands[0]), run(e->operands[1]));
      case IndexKind::Min:
      case IndexKind::Max: return min_max(e->kind, run(e->operands[0]), run(e->operands[1]));
    }
    return e;
  }

 private:
  IndexRange range(const IndexRef& e) const { return index_range(e, ranges_); }
  IndexRef sum(const Poly& a, const IndexRef& b) {
    Poly p = a;
    p.add(poly_of(b));
    return expr_of(join_dimensions(std::move(p)));
  }

  // The divisor as one term (coefficient * monomial), when it is one.
  static bool single_term(const IndexRef& b, IndexRef* mono, int64_t* coeff) {
    Poly p = poly_of(b);
    if (p.terms.empty()) {
      *mono = nullptr;
      *coeff = p.constant;
      return true;
    }
    if (p.constant != 0 || p.terms.size() != 1) return false;
    *mono = p.terms.begin()->first;
    *coeff = p.terms.begin()->second;
    return true;
  }

  // Splits `a` into divisor * quotient + remainder, moving every term the
  // divisor divides (and, for a constant divisor, the constant's multiple).
  bool split_multiples(const IndexRef& a, const IndexRef& b, Poly* quotient, Poly* remainder) {
    IndexRef dmono;
    int64_t dcoeff = 0;
    if (!single_term(b, &dmono, &dcoeff) || dcoeff <= 0) return false;
    Poly p = poly_of(a);
    for (const auto& [m, c] : p.terms) {
      IndexRef qm;
      int64_t qc = 0;
      if (divide_term(m, c, dmono, dcoeff, &qm, &qc)) {
        if (qm) quotient->add_term(qm, qc);
        else quotient->constant = wrap_add(quotient->constant, qc);
      } else {
        remainder->add_term(m, c);
      }
    }
    if (!dmono) {
      quotient->constant = wrap_add(quotient->constant, floor_div(p.constant, dcoeff));
      remainder->constant = floor_mod(p.constant, dcoeff);
    } else {
      remainder->constant = p.constant;
    }
    return true;
  }

  // True when 0 <= r < b for every value in range.
  bool known_below(const IndexRef& r, const IndexRef& b) const {
    IndexRange rr = range(r);
    if (rr.lo < 0) return false;
    if (rr.hi < range(b).lo) return true;
    // x in [0, n) against the divisor n itself (symbolic sizes).
    if (r->kind == IndexKind::Var) {
      auto it = ranges_.var_extents.find(r->value);
      return it != ranges_.var_extents.end() && equal_index(it->second, b);
    }
    return false;
  }

  IndexRef floordiv(const IndexRef& a, const IndexRef& b) {
    IndexRange br = range(b);
    if (b->kind == IndexKind::Const) {
      int64_t d = b->value;
      if (d == 1) return a;
      if (a->kind == IndexKind::Const && d != 0) return index_const(floor_div(a->value, d));
    }
    if (is_const(a, 0) && br.lo >= 1) return a;
    if (br.lo < 1) return index_floordiv(a, b);  // no rule below holds for a divisor that may be <= 0
    // (a // b1) // b2 == a // (b1 * b2) for positive divisors.
    if (a->kind == IndexKind::FloorDiv && range(a->operands[1]).lo >= 1)
      return floordiv(a->operands[0], run(a->operands[1] * b));
    // (a % m) // d == (a // d) % (m/d) when d divides m: Inductor's ModularIndexing form.
    if (a->kind == IndexKind::Mod && a->operands[1]->kind == IndexKind::Const && b->kind == IndexKind::Const &&
        a->operands[1]->value > 0 && a->operands[1]->value % b->value == 0)
      return mod(floordiv(a->operands[0], b), index_const(a->operands[1]->value / b->value));
    Poly quotient, remainder;
    if (!split_multiples(a, b, &quotient, &remainder)) return index_floordiv(a, b);
    IndexRef r = expr_of(remainder);
    if (b->kind == IndexKind::Const) {
      int64_t d = b->value;
      IndexRange rr = range(r);
      if (!is_inf(rr.lo) && !is_inf(rr.hi) && floor_div(rr.lo, d) == floor_div(rr.hi, d)) {
        quotient.constant = wrap_add(quotient.constant, floor_div(rr.lo, d));
        return expr_of(quotient);
      }
      // (g*t + s) // (g*d') == t // d' when 0 <= s < g: the smaller terms cannot carry.
      if (IndexRef reduced = drop_small_terms(remainder, d, /*for_mod=*/false)) return sum(quotient, reduced);
    } else if (known_below(r, b)) {
      return expr_of(quotient);
    }
    // The remainder may now match a rule the whole did not (a nested division).
    IndexRef rest = equal_index(r, a) ? index_floordiv(r, b) : floordiv(r, b);
    if (quotient.terms.empty() && quotient.constant == 0) return rest;
    return sum(quotient, rest);
  }

  IndexRef mod(const IndexRef& a, const IndexRef& b) {
    IndexRange br = range(b);
    if (b->kind == IndexKind::Const) {
      int64_t d = b->value;
      if (d == 1 || d == -1) return index_const(0);
      if (a->kind == IndexKind::Const && d != 0) return index_const(floor_mod(a->value, d));
    }
    if (br.lo < 1) return index_mod(a, b);
    // (a % m) % d == a % d when d divides m.
    if (a->kind == IndexKind::Mod && a->operands[1]->kind == IndexKind::Const && b->kind == IndexKind::Const &&
        a->operands[1]->value > 0 && a->operands[1]->value % b->value == 0)
      return mod(a->operands[0], b);
    Poly quotient, remainder;
    if (!split_multiples(a, b, &quotient, &remainder)) return index_mod(a, b);
    IndexRef r = expr_of(remainder);
    if (b->kind == IndexKind::Const) {
      int64_t d = b->value;
      IndexRange rr = range(r);
      if (!is_inf(rr.lo) && !is_inf(rr.hi) && floor_div(rr.lo, d) == floor_div(rr.hi, d)) {
        Poly shifted = remainder;
        shifted.constant = wrap_add(shifted.constant, -wrap_mul(floor_div(rr.lo, d), d));
        return expr_of(shifted);
      }
      if (IndexRef reduced = drop_small_terms(remainder, d, /*for_mod=*/true)) return reduced;
    } else if (known_below(r, b)) {
      return r;
    }
    return equal_index(r, a) ? index_mod(r, b) : mod(r, b);
  }

  // Remainder = T + S where g (a divisor of d) divides every coefficient of T
  // and 0 <= S < g. Then (T + S) // d == (T/g) // (d/g) and
  // (T + S) % d == g * ((T/g) % (d/g)) + S. With S == 0 this is the common
  // factor rule of Inductor's FloorDiv / ModularIndexing eval. Largest g first;
  // null when no split applies (g == 1 is no split, g == d was done).
  IndexRef drop_small_terms(const Poly& remainder, int64_t d, bool for_mod) {
    std::vector<int64_t> candidates;
    int64_t common = d;
    for (const auto& [m, c] : remainder.terms) {
      candidates.push_back(std::gcd(c, d));
      common = std::gcd(common, c);
    }
    candidates.push_back(common);
    std::sort(candidates.begin(), candidates.end(), std::greater<>());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    for (int64_t g : candidates) {
      if (g <= 1 || g >= d) continue;
      Poly t, s;
      s.constant = remainder.constant;
      for (const auto& [m, c] : remainder.terms) {
        if (c % g == 0) t.add_term(m, c / g);
        else s.add_term(m, c);
      }
      // The constant belongs to T when g divides it, to S otherwise.
      if (s.constant % g == 0 && s.constant != 0) {
        t.constant = s.constant / g;
        s.constant = 0;
      }
      if (t.terms.empty()) continue;
      IndexRange sr = range(expr_of(s));
      if (sr.lo < 0 || sr.hi >= g) continue;
      if (!for_mod) return floordiv(expr_of(t), index_const(d / g));
      Poly out = s;
      out.add(poly_of(mod(expr_of(t), index_const(d / g))), g);
      return expr_of(join_dimensions(std::move(out)));
    }
    return nullptr;
  }

  // Inductor's join_dimensions: digits of one mixed-radix number merge back.
  //   s*((x//b) % m1) + s*m1*((x//(b*m1)) % m2) -> s*((x//b) % (m1*m2))
  //   s*((x//b) % m1) + s*m1*(x//(b*m1))         -> s*(x//b)
  // Both hold for every integer x (floor semantics), not only in range.
  struct Digit {
    IndexRef base;
    int64_t divisor = 1;
    int64_t modulus = 0;  // 0: a bare floor division, no modulus
  };
  static bool as_digit(const IndexRef& atom, Digit* d) {
    IndexRef x = atom;
    if (atom->kind == IndexKind::Mod) {
      if (atom->operands[1]->kind != IndexKind::Const || atom->operands[1]->value <= 0) return false;
      d->modulus = atom->operands[1]->value;
      x = atom->operands[0];
    }
    if (x->kind == IndexKind::FloorDiv && x->operands[1]->kind == IndexKind::Const && x->operands[1]->value > 0) {
      d->base = x->operands[0];
      d->divisor = x->operands[1]->value;
      return true;
    }
    if (atom->kind != IndexKind::Mod) return false;
    d->base = x;
    d->divisor = 1;
    return true;
  }

  Poly join_dimensions(Poly p) {
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [lo_mono, lo_coeff] : p.terms) {
        Digit lo;
        if (!as_digit(lo_mono, &lo) || lo.modulus == 0) continue;
        for (const auto& [hi_mono, hi_coeff] : p.terms) {
          Digit hi;
          if (!as_digit(hi_mono, &hi) || !equal_index(hi.base, lo.base) || hi.divisor != lo.divisor * lo.modulus ||
              hi_coeff != wrap_mul(lo_coeff, lo.modulus))
            continue;
          IndexRef below = lo.divisor == 1 ? lo.base : floordiv(lo.base, index_const(lo.divisor));
          IndexRef merged = hi.modulus == 0 ? below : mod(below, index_const(lo.modulus * hi.modulus));
          int64_t coeff = lo_coeff;
          IndexRef lo_key = lo_mono, hi_key = hi_mono;
          p.terms.erase(lo_key);
          p.terms.erase(hi_key);
          p.add(poly_of(merged), coeff);
          changed = true;
          break;
        }
        if (changed) break;
      }
    }
    return p;
  }

  IndexRef min_max(IndexKind kind, IndexRef a, IndexRef b) {
    bool is_min = kind == IndexKind::Min;
    if (a->kind == IndexKind::Const && b->kind == IndexKind::Const)
      return index_const(is_min ? std::min(a->value, b->value) : std::max(a->value, b->value));
    if (equal_index(a, b)) return a;
    IndexRange ar = range(a), br = range(b);
    if (ar.hi <= br.lo) return is_min ? a : b;
    if (br.hi <= ar.lo) return is_min ? b : a;
    if (compare_index(*b, *a) < 0) std::swap(a, b);  // commutative: one canonical order
    return is_min ? index_min(a, b) : index_max(a, b);
  }

  const IndexRanges& ranges_;
};

}  // namespace

IndexRef simplify_index(const IndexRef& e, const IndexRanges& ranges) {
  IndexRef out = Simplifier(ranges).run(e);
  return equal_index(out, e) ? e : out;
}

}  // namespace kiln::loopir
