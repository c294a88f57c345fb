// Python's builtin functions and the methods of builtin types, as far as the
// subset goes. Anything absent is a NameError / AttributeError naming it.
#include <algorithm>
#include <cmath>

#include "core/python/vm.h"
#include "core/util/pyformat.h"

namespace kiln::py {

namespace {

void expect_args(const CallArgs& a, size_t lo, size_t hi, const char* name) {
  if (a.npos < lo || a.npos > hi) {
    std::string expected = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    throw_type_error(std::string(name) + "() takes " + expected + " argument" + (hi == 1 ? "" : "s") + " (" +
                     std::to_string(a.npos) + " given)");
  }
}

Value kwarg_or(const CallArgs& a, std::string_view name, Value dflt) {
  const Value* v = a.kwarg(name);
  return v ? *v : dflt;
}

std::string arg_type_list(VM& vm, const CallArgs& a) {
  std::string out = "[";
  for (size_t i = 0; i < a.npos; ++i) {
    if (i) out += ", ";
    out += "'" + type_name(a[i]) + "'";
  }
  (void)vm;
  return out + "]";
}

Value builtin_print(VM& vm, const CallArgs& a) {
  if (vm.tracer) {
    std::string types = arg_type_list(vm, a);
    BreakInfo info;
    info.kind = BreakKind::UnsupportedCall;
    info.reason = "Failed to trace builtin operator";
    info.explanation = "  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types " +
                       types + " (has_kwargs " + (a.has_kwargs() ? "True" : "False") + ")\n" +
                       "  Hint: Avoid calling builtin `print` with argument types " + types +
                       ". Consider using an equivalent alternative function/method to `print`.\n";
    vm.tracer->graph_break(vm, info);
  }
  std::string sep = " ", end = "\n";
  if (const Value* s = a.kwarg("sep"); s && !s->is_none()) sep = as_str(*s);
  if (const Value* e = a.kwarg("end"); e && !e->is_none()) end = as_str(*e);
  if (a.kw)
    for (const auto& [k, v] : *a.kw)
      if (k != "sep" && k != "end" && k != "flush") throw_unsupported("print() keyword argument '" + k + "'");
  std::string text;
  for (size_t i = 0; i < a.npos; ++i) {
    if (i) text += sep;
    text += vm.str_of(a[i]);
  }
  text += end;
  vm.write_out(text);
  return Value();
}

Value make_range(VM&, const CallArgs& a) {
  expect_args(a, 1, 3, "range");
  int64_t start = 0, stop, step = 1;
  if (a.npos == 1) {
    stop = to_index(a[0], "range() argument");
  } else {
    start = to_index(a[0], "range() argument");
    stop = to_index(a[1], "range() argument");
    if (a.npos == 3) step = to_index(a[2], "range() argument");
  }
  if (step == 0) throw PyError("ValueError", "range() arg 3 must not be zero");
  return Value(make<RangeObj>(start, stop, step));
}

Value builtin_enumerate(VM& vm, const CallArgs& a) {
  expect_args(a, 1, 2, "enumerate");
  Value it = vm.iter(a[0]);
  int64_t i = a.npos == 2 ? to_index(a[1], "start") : to_index(kwarg_or(a, "start", Value(int64_t(0))), "start");
  VM* pvm = &vm;
  return Value(make<IteratorObj>([pvm, it, i](Value& out) mutable {
    Value v;
    if (!pvm->next(it, v)) return false;
    out = tuple_value({Value(i++), v});
    return true;
  }));
}

Value builtin_zip(VM& vm, const CallArgs& a) {
  std::vector<Value> its;
  for (size_t i = 0; i < a.npos; ++i) its.push_back(vm.iter(a[i]));
  VM* pvm = &vm;
  return Value(make<IteratorObj>([pvm, its](Value& out) mutable {
    if (its.empty()) return false;
    ValueVec row;
    for (Value& it : its) {
      Value v;
      if (!pvm->next(it, v)) return false;
      row.push_back(v);
    }
    out = tuple_value(std::move(row));
    return true;
  }));
}

Value min_max(VM& vm, const CallArgs& a, bool want_max) {
  const char* name = want_max ? "max" : "min";
  if (a.npos == 0) throw_type_error(std::string(name) + " expected at least 1 argument, got 0");
  ValueVec items = a.npos == 1 ? vm.to_vector(a[0]) : ValueVec(a.pos, a.pos + a.npos);
  Value key = kwarg_or(a, "key", Value());
  if (items.empty()) {
    if (const Value* d = a.kwarg("default")) return *d;
    throw PyError("ValueError", std::string(name) + "() arg is an empty sequence");
  }
  Value best = items[0];
  Value best_key = key.is_none() ? best : vm.call(key, ValueVec{best});
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key.is_none() ? items[i] : vm.call(key, ValueVec{items[i]});
    if (vm.truth(vm.compare(want_max ? CompareKind::Gt : CompareKind::Lt, k, best_key))) {
      best = items[i];
      best_key = k;
    }
  }
  return best;
}

Value builtin_sum(VM& vm, const CallArgs& a) {
  expect_args(a, 1, 2, "sum");
  Value acc = a.npos == 2 ? a[1] : kwarg_or(a, "start", Value(int64_t(0)));
  Value it = vm.iter(a[0]);
  Value v;
  while (vm.next(it, v)) acc = vm.binary(BinaryOpKind::Add, acc, v);
  return acc;
}

Value builtin_abs(VM& vm, const CallArgs& a) {
  expect_args(a, 1, 1, "abs");
  const Value& v = a[0];
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    int64_t x = v.is_bool() ? v.as_bool() : v.as_int();
    return Value(x < 0 ? -x : x);
  }
  return vm.call(vm.getattr(v, "abs"), ValueVec{});
}

Value builtin_int(VM& vm, const CallArgs& a) {
  if (a.npos == 0) return Value(int64_t(0));
  const Value& v = a[0];
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(int64_t(v.as_bool()));
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d)) throw PyError(std::isnan(d) ? "ValueError" : "OverflowError", "cannot convert float " + py_float_repr(d) + " to integer");
    if (std::fabs(d) >= 9.2e18) throw PyError("OverflowError", "integer does not fit in 64 bits", true);
    return Value(int64_t(d));
  }
  if (v.is(ObjKind::Str)) {
    std::string s = v.as<Str>()->s;
    s.erase(0, s.find_first_not_of(" \t\n"));
    s.erase(s.find_last_not_of(" \t\n") + 1);
    int base = a.npos > 1 ? int(to_index(a[1], "base")) : 10;
    try {
      size_t used = 0;
      std::string digits;
      for (char c : s)
        if (c != '_') digits += c;
      long long r = std::stoll(digits, &used, base);
      if (used != digits.size() || digits.empty()) throw std::invalid_argument("");
      return Value(int64_t(r));
    } catch (...) {
      throw PyError("ValueError", "invalid literal for int() with base " + std::to_string(base) + ": " + py_str_repr(v.as<Str>()->s));
    }
  }
  if (v.is(ObjKind::Tensor)) return vm.call(vm.getattr(v, "__int__"), ValueVec{});
  throw_type_error("int() argument must be a string, a bytes-like object or a real number, not '" + type_name(v) + "'");
}

Value builtin_float(VM& vm, const CallArgs& a) {
  if (a.npos == 0) return Value(0.0);
  const Value& v = a[0];
  if (v.is_float()) return v;
  if (v.is_int()) return Value(double(v.as_int()));
  if (v.is_bool()) return Value(v.as_bool() ? 1.0 : 0.0);
  if (v.is(ObjKind::Str)) {
    std::string s = v.as<Str>()->s;
    s.erase(0, s.find_first_not_of(" \t\n"));
    s.erase(s.find_last_not_of(" \t\n") + 1);
    std::string low = s;
    std::transform(low.begin(), low.end(), low.begin(), ::tolower);
    if (low == "inf" || low == "+inf" || low == "infinity") return Value(HUGE_VAL);
    if (low == "-inf" || low == "-infinity") return Value(-HUGE_VAL);
    if (low == "nan" || low == "+nan" || low == "-nan") return Value(std::nan(""));
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used != s.size()) throw std::invalid_argument("");
      return Value(d);
    } catch (...) {
      throw PyError("ValueError", "could not convert string to float: " + py_str_repr(v.as<Str>()->s));
    }
  }
  if (v.is(ObjKind::Tensor)) return vm.call(vm.getattr(v, "__float__"), ValueVec{});
  throw_type_error("float() argument must be a string or a real number, not '" + type_name(v) + "'");
}

Value builtin_round(VM&, const CallArgs& a) {
  expect_args(a, 1, 2, "round");
  const Value& v = a[0];
  Value nd = a.npos == 2 ? a[1] : kwarg_or(a, "ndigits", Value());
  auto unwrap = [](Expected<double> r) {
    if (!r.ok()) {
      const std::string& m = r.status().message();
      throw PyError(m.find("too large") != std::string::npos || m.find("infinity") != std::string::npos ? "OverflowError" : "ValueError", m);
    }
    return r.value();
  };
  if (v.is_int() || v.is_bool()) {
    int64_t x = v.is_bool() ? v.as_bool() : v.as_int();
    if (nd.is_none() || to_index(nd, "ndigits") >= 0) return Value(x);
    return Value(int64_t(unwrap(py_round(double(x), to_index(nd, "ndigits")))));
  }
  double d = to_double(v, "round() argument");
  if (nd.is_none()) {
    double r = unwrap(py_round(d));
    if (std::fabs(r) >= 9.2e18) throw PyError("OverflowError", "rounded integer does not fit in 64 bits", true);
    return Value(int64_t(r));
  }
  return Value(unwrap(py_round(d, to_index(nd, "ndigits"))));
}

Value builtin_sorted(VM& vm, const CallArgs& a) {
  expect_args(a, 1, 1, "sorted");
  ValueVec items = vm.to_vector(a[0]);
  Value key = kwarg_or(a, "key", Value());
  bool reverse = vm.truth(kwarg_or(a, "reverse", Value(false)));
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& v : items) keyed.emplace_back(key.is_none() ? v : vm.call(key, ValueVec{v}), v);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return vm.truth(vm.compare(CompareKind::Lt, reverse ? y.first : x.first, reverse ? x.first : y.first));
  });
  ValueVec out;
  for (auto& kv : keyed) out.push_back(kv.second);
  return list_value(std::move(out));
}

Value builtin_getattr(VM& vm, const CallArgs& a) {
  expect_args(a, 2, 3, "getattr");
  Value out;
  if (vm.try_getattr(a[0], as_str(a[1]), out)) return out;
  if (a.npos == 3) return a[2];
  return vm.getattr(a[0], as_str(a[1]));  // raises the AttributeError
}

Value builtin_isinstance(VM& vm, const CallArgs& a) {
  expect_args(a, 2, 2, "isinstance");
  return Value(vm.is_instance(a[0], a[1]));
}

Value builtin_super(VM& vm, const CallArgs& a) {
  if (a.npos == 2) return Value(make<SuperObj>(Ref<Class>(a[0].as<Class>()), a[1]));
  Frame* f = vm.current_frame;
  if (!f || !f->func || !f->func->owner || f->locals.empty())
    throw PyError("RuntimeError", "super(): no arguments (zero-argument super() works only in methods)");
  return Value(make<SuperObj>(Ref<Class>(f->func->owner), f->locals[0]));
}

}  // namespace

Value make_builtin(std::string name, BuiltinFn fn) { return Value(make<Builtin>(std::move(name), std::move(fn))); }

void set_attr_builtin(const Ref<Dict>& dict, const std::string& qualified, const std::string& name, BuiltinFn fn) {
  dict->set(str_value(name), make_builtin(qualified, std::move(fn)));
}

void install_builtin_methods(VM& vm);

void install_builtins(VM& vm) {
  Ref<Dict> b = vm.builtins();
  auto def = [&](const char* name, BuiltinFn fn) { set_attr_builtin(b, name, name, std::move(fn)); };
  def("print", builtin_print);
  def("len", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "len");
    return Value(vm.len(a[0]));
  });
  def("enumerate", builtin_enumerate);
  def("zip", builtin_zip);
  def("min", [](VM& vm, const CallArgs& a) { return min_max(vm, a, false); });
  def("max", [](VM& vm, const CallArgs& a) { return min_max(vm, a, true); });
  def("abs", builtin_abs);
  def("sum", builtin_sum);
  def("round", builtin_round);
  def("sorted", builtin_sorted);
  def("isinstance", builtin_isinstance);
  def("getattr", builtin_getattr);
  def("hasattr", [](VM& vm, const CallArgs& a) {
    expect_args(a, 2, 2, "hasattr");
    Value out;
    return Value(vm.try_getattr(a[0], as_str(a[1]), out));
  });
  def("setattr", [](VM& vm, const CallArgs& a) {
    expect_args(a, 3, 3, "setattr");
    vm.setattr(a[0], as_str(a[1]), a[2]);
    return Value();
  });
  def("any", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "any");
    Value it = vm.iter(a[0]), v;
    while (vm.next(it, v))
      if (vm.truth(v)) return Value(true);
    return Value(false);
  });
  def("all", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "all");
    Value it = vm.iter(a[0]), v;
    while (vm.next(it, v))
      if (!vm.truth(v)) return Value(false);
    return Value(true);
  });
  def("repr", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "repr");
    return str_value(vm.repr_of(a[0]));
  });
  def("callable", [](VM&, const CallArgs& a) {
    expect_args(a, 1, 1, "callable");
    const Value& v = a[0];
    return Value(v.is(ObjKind::Function) || v.is(ObjKind::Builtin) || v.is(ObjKind::BoundMethod) || v.is(ObjKind::Class) ||
                 (v.is(ObjKind::Instance) && v.as<Instance>()->cls->lookup("__call__")));
  });
  def("iter", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "iter");
    return vm.iter(a[0]);
  });
  def("next", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 2, "next");
    Value v;
    if (vm.next(a[0], v)) return v;
    if (a.npos == 2) return a[1];
    throw PyError("StopIteration", "");
  });
  def("reversed", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "reversed");
    ValueVec items = vm.to_vector(a[0]);
    std::reverse(items.begin(), items.end());
    return vm.iter(list_value(std::move(items)));
  });
  def("map", [](VM& vm, const CallArgs& a) {
    if (a.npos < 2) throw_type_error("map() must have at least two arguments.");
    ValueVec out;
    ValueVec first = vm.to_vector(a[1]);
    std::vector<ValueVec> rest;
    size_t n = first.size();
    for (size_t i = 2; i < a.npos; ++i) {
      rest.push_back(vm.to_vector(a[i]));
      n = std::min(n, rest.back().size());
    }
    for (size_t i = 0; i < n; ++i) {
      ValueVec args{first[i]};
      for (auto& r : rest) args.push_back(r[i]);
      out.push_back(vm.call(a[0], args));
    }
    return vm.iter(list_value(std::move(out)));
  });
  def("filter", [](VM& vm, const CallArgs& a) {
    expect_args(a, 2, 2, "filter");
    ValueVec out;
    for (const Value& v : vm.to_vector(a[1]))
      if (a[0].is_none() ? vm.truth(v) : vm.truth(vm.call(a[0], ValueVec{v}))) out.push_back(v);
    return vm.iter(list_value(std::move(out)));
  });
  def("super", builtin_super);
  def("divmod", [](VM& vm, const CallArgs& a) {
    expect_args(a, 2, 2, "divmod");
    return tuple_value({vm.binary(BinaryOpKind::FloorDiv, a[0], a[1]), vm.binary(BinaryOpKind::Mod, a[0], a[1])});
  });
  def("pow", [](VM& vm, const CallArgs& a) {
    expect_args(a, 2, 2, "pow");
    return vm.binary(BinaryOpKind::Pow, a[0], a[1]);
  });
  def("id", [](VM&, const CallArgs&) -> Value { throw_unsupported("id() (object addresses are not part of Kiln's subset)"); });
  for (const char* banned : {"open", "eval", "exec", "compile", "input", "__import__", "globals", "locals", "vars", "exit", "quit"}) {
    std::string n = banned;
    def(banned, [n](VM&, const CallArgs&) -> Value {
      throw_unsupported(n + "() is outside Kiln's Python subset (programs cannot touch files or run code from strings)");
    });
  }
  b->set(str_value("None"), Value());
  b->set(str_value("True"), Value(true));
  b->set(str_value("False"), Value(false));
  b->set(str_value("Ellipsis"), ellipsis());
  b->set(str_value("__name__"), str_value("builtins"));

  // Builtin types: callables that construct, and holders of the types' methods.
  auto type = [&](const char* name, BuiltinFn ctor) {
    auto cls = make<Class>(name, Ref<Class>());
    cls->module = "builtins";
    cls->builtin = 1;
    if (ctor) cls->dict->set(str_value("__new__"), make_builtin(name, std::move(ctor)));
    vm.register_type(cls);
    b->set(str_value(name), Value(cls));
    return cls;
  };
  auto object_cls = type("object", [](VM& vm, const CallArgs&) -> Value {
    return Value(make<Instance>(vm.builtin_type("object")));
  });
  set_attr_builtin(object_cls->dict, "object.__setattr__", "__setattr__", [](VM&, const CallArgs& a) {
    if (a.npos != 3 || !a[0].is(ObjKind::Instance)) throw_type_error("object.__setattr__(self, name, value)");
    a[0].as<Instance>()->dict->set(str_value(as_str(a[1])), a[2]);
    return Value();
  });
  set_attr_builtin(object_cls->dict, "object.__init__", "__init__", [](VM&, const CallArgs&) { return Value(); });
  type("int", builtin_int);
  type("float", builtin_float);
  type("bool", [](VM& vm, const CallArgs& a) { return Value(a.npos ? vm.truth(a[0]) : false); });
  type("str", [](VM& vm, const CallArgs& a) { return str_value(a.npos ? vm.str_of(a[0]) : std::string()); });
  type("list", [](VM& vm, const CallArgs& a) { return list_value(a.npos ? vm.to_vector(a[0]) : ValueVec{}); });
  type("tuple", [](VM& vm, const CallArgs& a) { return tuple_value(a.npos ? vm.to_vector(a[0]) : ValueVec{}); });
  type("dict", [](VM& vm, const CallArgs& a) {
    auto d = make<Dict>();
    if (a.npos == 1) {
      if (a[0].is(ObjKind::Dict)) {
        a[0].as<Dict>()->for_each([&](const Value& k, const Value& v) { d->set(k, v); });
      } else {
        for (const Value& kv : vm.to_vector(a[0])) {
          ValueVec pair = vm.to_vector(kv);
          if (pair.size() != 2) throw PyError("ValueError", "dictionary update sequence element has length " + std::to_string(pair.size()) + "; 2 is required");
          d->set(pair[0], pair[1]);
        }
      }
    }
    if (a.kw)
      for (const auto& [k, v] : *a.kw) d->set(str_value(k), v);
    return Value(d);
  });
  type("range", make_range);
  type("NoneType", nullptr);
  type("type", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "type");
    Ref<Class> c = vm.type_of(a[0]);
    if (!c) throw_unsupported("type() of " + type_name(a[0]));
    return Value(c);
  });
  type("function", nullptr);
  type("builtin_function_or_method", nullptr);
  type("module", nullptr);
  type("slice", [](VM&, const CallArgs& a) {
    expect_args(a, 1, 3, "slice");
    if (a.npos == 1) return Value(make<SliceObj>(Value(), a[0], Value()));
    return Value(make<SliceObj>(a[0], a[1], a.npos == 3 ? a[2] : Value()));
  });
  install_builtin_methods(vm);
}

}  // namespace kiln::py
