#pragma once
// Simplification of index expressions with the ranges of the loop variables,
// after Inductor's sizevars.simplify_with_ranges and the eval rules of its
// FloorDiv / ModularIndexing (torch/utils/_sympy/functions.py). The rules are
// listed in docs/loopir.md; every one is exact for all values in range (Python
// rounding), which tests/compiler/test_loopir_index.cpp checks point by point.
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "compiler/loopir/index_expr.h"

namespace kiln::loopir {

// A closed interval; the int64 extremes stand for "unbounded".
struct IndexRange {
  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  int64_t lo = kNegInf, hi = kInf;
};

// What is known about the leaves: loop variable x<i> runs over [0, extent),
// where the extent is a constant or an expression of size symbols; a size
// symbol without an entry is taken to be at least 1 (a size is never 0 once
// Inductor has specialized 0 and 1, and never negative).
struct IndexRanges {
  std::map<int64_t, IndexRef> var_extents;
  std::map<std::string, IndexRange> sym_ranges;

  IndexRanges& extent(int64_t var, int64_t n) { var_extents[var] = index_const(n); return *this; }
  IndexRanges& extent(int64_t var, IndexRef n) { var_extents[var] = std::move(n); return *this; }
};

// Bounds of the values the expression takes (conservative: may be wider).
IndexRange index_range(const IndexRef& e, const IndexRanges& ranges);

// Canonical, simplified form: constants folded, sums and products flattened,
// like terms collected and ordered, // and % reduced with the ranges. Returns
// the same object when the expression is already in that form; idempotent.
// Assumes, like the generated code, that no intermediate value overflows int64.
IndexRef simplify_index(const IndexRef& e, const IndexRanges& ranges = {});

}  // namespace kiln::loopir
