// itertools: native lazy iterators (generators would break a traced graph at
// each step), with CPython 3.12's results and argument errors. product,
// permutations and combinations read their inputs at once, as CPython does.
#include <algorithm>
#include <memory>

#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

Value iterator(std::function<bool(Value&)> next) { return Value(make<IteratorObj>(std::move(next))); }

Value kw(const CallArgs& a, std::string_view name, Value dflt = Value()) {
  const Value* v = a.kwarg(name);
  return v ? *v : dflt;
}

void check_kwargs(const CallArgs& a, std::initializer_list<std::string_view> allowed, const char* fn) {
  if (!a.kw) return;
  for (const auto& [k, v] : *a.kw) {
    bool ok = false;
    for (std::string_view n : allowed) ok = ok || n == k;
    if (!ok) throw_type_error(std::string(fn) + "() got an unexpected keyword argument '" + k + "'");
  }
}

// Walks index vectors as CPython's permutations/combinations do; `next`
// advances `indices` and says whether there was another tuple.
Value index_iterator(const ValueVec& pool, std::vector<size_t> first, std::function<bool(std::vector<size_t>&)> advance,
                     bool empty) {
  auto indices = std::make_shared<std::vector<size_t>>(std::move(first));
  auto started = std::make_shared<bool>(false), done = std::make_shared<bool>(empty);
  return iterator([pool, indices, started, done, advance](Value& out) {
    if (*done) return false;
    if (*started && !advance(*indices)) {
      *done = true;
      return false;
    }
    *started = true;
    ValueVec row;
    for (size_t i : *indices) row.push_back(pool[i]);
    out = tuple_value(std::move(row));
    return true;
  });
}

}  // namespace

void load_itertools(VM& vm, const Ref<Module>& m) {
  VM* pvm = &vm;
  def_native(m, "count", [pvm](VM&, const CallArgs& a) {
    check_kwargs(a, {"start", "step"}, "count");
    Value start = a.npos > 0 ? a[0] : kw(a, "start", Value(int64_t(0)));
    Value step = a.npos > 1 ? a[1] : kw(a, "step", Value(int64_t(1)));
    auto cur = std::make_shared<Value>(start);
    return iterator([pvm, cur, step](Value& out) {
      out = *cur;
      *cur = pvm->binary(BinaryOpKind::Add, *cur, step);
      return true;
    });
  });
  def_native(m, "repeat", [](VM&, const CallArgs& a) {
    check_kwargs(a, {"object", "times"}, "repeat");
    if (a.npos < 1) throw_type_error("repeat() missing required argument 'object' (pos 1)");
    Value obj = a[0];
    Value times = a.npos > 1 ? a[1] : kw(a, "times");
    auto left = std::make_shared<int64_t>(times.is_none() ? -1 : std::max<int64_t>(0, to_index(times, "times")));
    return iterator([obj, left](Value& out) {
      if (*left == 0) return false;
      if (*left > 0) --*left;
      out = obj;
      return true;
    });
  });
  def_native(m, "cycle", [pvm](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("cycle expected 1 argument, got " + std::to_string(a.npos));
    auto saved = std::make_shared<ValueVec>();
    auto it = std::make_shared<Value>(vm.iter(a[0]));
    auto pos = std::make_shared<size_t>(0);
    return iterator([pvm, saved, it, pos](Value& out) {
      if (!it->is_none()) {
        if (pvm->next(*it, out)) {
          saved->push_back(out);
          return true;
        }
        *it = Value();
      }
      if (saved->empty()) return false;
      out = (*saved)[(*pos)++ % saved->size()];
      return true;
    });
  });
  auto chain_of = [pvm](Value sources) {
    auto outer = std::make_shared<Value>(pvm->iter(sources));
    auto inner = std::make_shared<Value>();
    return iterator([pvm, outer, inner](Value& out) {
      while (true) {
        if (!inner->is_none() && pvm->next(*inner, out)) return true;
        Value src;
        if (!pvm->next(*outer, src)) return false;
        *inner = pvm->iter(src);
      }
    });
  };
  def_native(m, "chain", [chain_of](VM&, const CallArgs& a) {
    check_kwargs(a, {}, "chain");
    return chain_of(tuple_value(ValueVec(a.pos, a.pos + a.npos)));
  });
  def_native(m, "_chain_from_iterable", [chain_of](VM&, const CallArgs& a) { return chain_of(a[0]); });
  def_native(m, "islice", [pvm](VM& vm, const CallArgs& a) {
    if (a.npos < 2 || a.npos > 4) throw_type_error("islice expected at most 4 arguments, got " + std::to_string(a.npos));
    auto arg = [](const Value& v, const char* what, int64_t dflt) -> int64_t {
      if (v.is_none()) return dflt;
      if (!v.is_int() && !v.is_bool())
        throw PyError("ValueError", std::string(what) + " for islice() must be None or an integer: 0 <= x <= sys.maxsize.");
      int64_t n = v.is_bool() ? v.as_bool() : v.as_int();
      if (n < 0) throw PyError("ValueError", std::string(what) + " for islice() must be None or an integer: 0 <= x <= sys.maxsize.");
      return n;
    };
    int64_t start = 0, stop = -1, step = 1;
    if (a.npos == 2) {
      stop = arg(a[1], "Stop argument", -1);
    } else {
      start = arg(a[1], "Indices", 0);
      stop = arg(a[2], "Stop argument", -1);
      if (a.npos == 4) {
        if (!a[3].is_none() && (!a[3].is_int() || a[3].as_int() <= 0))
          throw PyError("ValueError", "Step for islice() must be a positive integer or None.");
        step = arg(a[3], "Step", 1);
      }
    }
    auto it = std::make_shared<Value>(vm.iter(a[0]));
    auto i = std::make_shared<int64_t>(0), next_index = std::make_shared<int64_t>(start);
    return iterator([pvm, it, i, next_index, stop, step](Value& out) {
      while (stop < 0 || *next_index < stop) {
        Value v;
        if (!pvm->next(*it, v)) return false;
        if ((*i)++ == *next_index) {
          *next_index += step;
          out = v;
          return true;
        }
      }
      return false;
    });
  });
  def_native(m, "accumulate", [pvm](VM& vm, const CallArgs& a) {
    check_kwargs(a, {"func", "initial"}, "accumulate");
    if (a.npos < 1) throw_type_error("accumulate() missing required argument 'iterable' (pos 1)");
    Value func = a.npos > 1 ? a[1] : kw(a, "func");
    Value initial = kw(a, "initial");
    auto it = std::make_shared<Value>(vm.iter(a[0]));
    auto total = std::make_shared<Value>(initial);
    auto have = std::make_shared<bool>(false), emit_initial = std::make_shared<bool>(!initial.is_none());
    return iterator([pvm, it, total, have, emit_initial, func](Value& out) {
      if (*emit_initial) {
        *emit_initial = false;
        *have = true;
        out = *total;
        return true;
      }
      Value v;
      if (!pvm->next(*it, v)) return false;
      if (!*have) *total = v;
      else *total = func.is_none() ? pvm->binary(BinaryOpKind::Add, *total, v) : pvm->call(func, ValueVec{*total, v});
      *have = true;
      out = *total;
      return true;
    });
  });
  def_native(m, "zip_longest", [pvm](VM& vm, const CallArgs& a) {
    check_kwargs(a, {"fillvalue"}, "zip_longest");
    Value fill = kw(a, "fillvalue");
    auto its = std::make_shared<ValueVec>();
    for (size_t i = 0; i < a.npos; ++i) its->push_back(vm.iter(a[i]));
    auto active = std::make_shared<size_t>(its->size());
    return iterator([pvm, its, active, fill](Value& out) {
      if (*active == 0) return false;
      ValueVec row;
      for (Value& it : *its) {
        Value v;
        if (it.is_none()) {
          row.push_back(fill);
        } else if (pvm->next(it, v)) {
          row.push_back(v);
        } else {
          it = Value();
          if (--*active == 0) return false;
          row.push_back(fill);
        }
      }
      out = tuple_value(std::move(row));
      return true;
    });
  });
  def_native(m, "product", [](VM& vm, const CallArgs& a) {
    check_kwargs(a, {"repeat"}, "product");
    int64_t repeat = to_index(kw(a, "repeat", Value(int64_t(1))), "repeat");
    if (repeat < 0) throw PyError("ValueError", "repeat argument cannot be negative");
    std::vector<ValueVec> pools;
    for (int64_t r = 0; r < repeat; ++r)
      for (size_t i = 0; i < a.npos; ++i) pools.push_back(vm.to_vector(a[i]));
    bool empty = false;
    for (const ValueVec& p : pools) empty = empty || p.empty();
    auto idx = std::make_shared<std::vector<size_t>>(pools.size(), 0);
    auto started = std::make_shared<bool>(false), done = std::make_shared<bool>(empty);
    return iterator([pools, idx, started, done](Value& out) {
      if (*done) return false;
      if (*started) {
        size_t i = pools.size();
        while (i > 0) {
          --i;
          if (++(*idx)[i] < pools[i].size()) break;
          (*idx)[i] = 0;
          if (i == 0) { *done = true; return false; }
        }
        if (pools.empty()) { *done = true; return false; }
      }
      *started = true;
      ValueVec row;
      for (size_t i = 0; i < pools.size(); ++i) row.push_back(pools[i][(*idx)[i]]);
      out = tuple_value(std::move(row));
      return true;
    });
  });
  def_native(m, "combinations", [](VM& vm, const CallArgs& a) {
    check_kwargs(a, {"iterable", "r"}, "combinations");
    if (a.npos + (a.kw ? a.kw->size() : 0) != 2) throw_type_error("combinations() missing required argument 'r' (pos 2)");
    ValueVec pool = vm.to_vector(a.npos ? a[0] : kw(a, "iterable"));
    int64_t r = to_index(a.npos > 1 ? a[1] : kw(a, "r"), "r");
    if (r < 0) throw PyError("ValueError", "r must be non-negative");
    const size_t n = pool.size(), rr = size_t(r);
    std::vector<size_t> first;
    for (size_t i = 0; i < rr; ++i) first.push_back(i);
    return index_iterator(pool, first, [n, rr](std::vector<size_t>& ix) {
      size_t i = rr;
      while (i > 0 && ix[i - 1] == i - 1 + n - rr) --i;
      if (i == 0) return false;
      ++ix[i - 1];
      for (size_t j = i; j < rr; ++j) ix[j] = ix[j - 1] + 1;
      return true;
    }, rr > n);
  });
  def_native(m, "combinations_with_replacement", [](VM& vm, const CallArgs& a) {
    if (a.npos != 2) throw_type_error("combinations_with_replacement() missing required argument 'r' (pos 2)");
    ValueVec pool = vm.to_vector(a[0]);
    int64_t r = to_index(a[1], "r");
    if (r < 0) throw PyError("ValueError", "r must be non-negative");
    const size_t n = pool.size(), rr = size_t(r);
    return index_iterator(pool, std::vector<size_t>(rr, 0), [n, rr](std::vector<size_t>& ix) {
      size_t i = rr;
      while (i > 0 && ix[i - 1] == n - 1) --i;
      if (i == 0) return false;
      size_t v = ix[i - 1] + 1;
      for (size_t j = i - 1; j < rr; ++j) ix[j] = v;
      return true;
    }, n == 0 && rr > 0);
  });
  def_native(m, "permutations", [](VM& vm, const CallArgs& a) {
    check_kwargs(a, {"iterable", "r"}, "permutations");
    ValueVec pool = vm.to_vector(a.npos ? a[0] : kw(a, "iterable"));
    const size_t n = pool.size();
    Value rv = a.npos > 1 ? a[1] : kw(a, "r");
    int64_t r = rv.is_none() ? int64_t(n) : to_index(rv, "r");
    if (r < 0) throw PyError("ValueError", "r must be non-negative");
    const size_t rr = size_t(r);
    // CPython's cycles algorithm, so the order is the same.
    auto perm = std::make_shared<std::vector<size_t>>();
    for (size_t i = 0; i < n; ++i) perm->push_back(i);
    auto cycles = std::make_shared<std::vector<size_t>>();
    for (size_t i = 0; i < rr && i < n; ++i) cycles->push_back(n - i);
    std::vector<size_t> first(perm->begin(), perm->begin() + long(std::min(rr, n)));
    return index_iterator(pool, first, [perm, cycles, n, rr](std::vector<size_t>& ix) {
      for (size_t i = rr; i-- > 0;) {
        if (--(*cycles)[i] == 0) {
          std::rotate(perm->begin() + long(i), perm->begin() + long(i) + 1, perm->end());
          (*cycles)[i] = n - i;
        } else {
          size_t j = (*cycles)[i];
          std::swap((*perm)[i], (*perm)[n - j]);
          for (size_t k = 0; k < rr; ++k) ix[k] = (*perm)[k];
          return true;
        }
      }
      return false;
    }, rr > n);
  });
  def_native(m, "starmap", [pvm](VM& vm, const CallArgs& a) {
    if (a.npos != 2) throw_type_error("starmap expected 2 arguments, got " + std::to_string(a.npos));
    Value fn = a[0];
    auto it = std::make_shared<Value>(vm.iter(a[1]));
    return iterator([pvm, fn, it](Value& out) {
      Value args;
      if (!pvm->next(*it, args)) return false;
      out = pvm->call(fn, pvm->to_vector(args));
      return true;
    });
  });
  for (int mode = 0; mode < 4; ++mode) {
    static const char* const names[] = {"takewhile", "dropwhile", "filterfalse", "compress"};
    def_native(m, names[mode], [pvm, mode](VM& vm, const CallArgs& a) {
      if (a.npos != 2) throw_type_error(std::string(names[mode]) + " expected 2 arguments, got " + std::to_string(a.npos));
      Value pred = a[0];
      auto it = std::make_shared<Value>(vm.iter(mode == 3 ? a[0] : a[1]));
      auto sel = std::make_shared<Value>(mode == 3 ? vm.iter(a[1]) : Value());
      auto flag = std::make_shared<bool>(false);
      return iterator([pvm, mode, pred, it, sel, flag](Value& out) {
        Value v;
        while (true) {
          if (mode == 0 && *flag) return false;
          if (!pvm->next(*it, v)) return false;
          if (mode == 3) {
            Value s;
            if (!pvm->next(*sel, s)) return false;
            if (pvm->truth(s)) break;
            continue;
          }
          if (mode == 1 && *flag) break;
          bool p = pred.is_none() ? pvm->truth(v) : pvm->truth(pvm->call(pred, ValueVec{v}));
          if (mode == 0) {
            if (p) break;
            *flag = true;
            return false;
          }
          if (mode == 1) {
            if (!p) { *flag = true; break; }
            continue;
          }
          if (!p) break;  // filterfalse
        }
        out = v;
        return true;
      });
    });
  }
  def_native(m, "pairwise", [pvm](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("pairwise expected 1 argument, got " + std::to_string(a.npos));
    auto it = std::make_shared<Value>(vm.iter(a[0]));
    auto prev = std::make_shared<Value>();
    auto started = std::make_shared<bool>(false);
    return iterator([pvm, it, prev, started](Value& out) {
      if (!*started) {
        *started = true;
        if (!pvm->next(*it, *prev)) return false;
      }
      Value v;
      if (!pvm->next(*it, v)) return false;
      out = tuple_value({*prev, v});
      *prev = v;
      return true;
    });
  });
  // groupby yields (key, group); each group is a list iterator read at once,
  // so an earlier group stays usable (CPython's empties when advanced past).
  def_native(m, "groupby", [pvm](VM& vm, const CallArgs& a) {
    check_kwargs(a, {"iterable", "key"}, "groupby");
    Value keyfn = a.npos > 1 ? a[1] : kw(a, "key");
    ValueVec items = vm.to_vector(a.npos ? a[0] : kw(a, "iterable"));
    auto pos = std::make_shared<size_t>(0);
    return iterator([pvm, items, pos, keyfn](Value& out) {
      if (*pos >= items.size()) return false;
      auto key_of = [&](const Value& v) { return keyfn.is_none() ? v : pvm->call(keyfn, ValueVec{v}); };
      Value k = key_of(items[*pos]);
      ValueVec group;
      while (*pos < items.size()) {
        Value kk = key_of(items[*pos]);
        if (!pvm->truth(pvm->compare(CompareKind::Eq, kk, k))) break;
        group.push_back(items[(*pos)++]);
      }
      out = tuple_value({k, pvm->iter(list_value(std::move(group)))});
      return true;
    });
  });
  // chain.from_iterable: a builtin carries no attributes, so chain is wrapped
  // in a Python function that does.
  static const Expected<CodePtr> code = compile_module(R"PY(
_chain_native = chain


def chain(*iterables):
    return _chain_native(*iterables)


chain.from_iterable = _chain_from_iterable


def tee(iterable, n=2):
    items = list(iterable)
    return tuple([iter(items) for i in range(n)])


def batched(iterable, n):
    items = list(iterable)
    return iter([tuple(items[i:i + n]) for i in range(0, len(items), n)])
)PY", "itertools.py");
  run_module_source(vm, m, code);
}

}  // namespace kiln::py
