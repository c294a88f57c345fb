// Python's builtin functions and the methods of builtin types, as far as the
// subset goes. Anything absent is a NameError / AttributeError naming it.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "core/python/instance_class.h"
#include "core/python/bigint.h"
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

// type(name, bases, namespace): a class made from a namespace, as a class
// statement makes one (parametrizations make their module classes so).
Value new_type(VM& vm, const CallArgs& a) {
  if (!a[0].is(ObjKind::Str)) throw_type_error("type.__new__() argument 1 must be str, not " + type_name(a[0]));
  if (!a[2].is(ObjKind::Dict)) throw_type_error("type.__new__() argument 3 must be dict, not " + type_name(a[2]));
  const std::string& name = as_str(a[0]);
  ValueVec bases = vm.to_vector(a[1]);
  if (bases.size() > 1) throw_unsupported("multiple inheritance (type('" + name + "', ...))");
  Ref<Class> base;
  if (!bases.empty()) {
    if (!bases[0].is(ObjKind::Class)) throw_type_error("type(): base is not a class but " + type_name(bases[0]));
    base = Ref<Class>(bases[0].as<Class>());
    if (base->builtin >= 0 && base->name == "object") base = Ref<Class>();
    else if (base->builtin >= 0) throw_unsupported("classes derived from builtin type '" + base->name + "'");
  }
  auto cls = make<Class>(name, base);
  cls->qualname = name;
  const Value* module = a[2].as<Dict>()->find_str("__module__");
  if (!module && vm.current_frame && vm.current_frame->globals) module = vm.current_frame->globals->find_str("__name__");
  if (module && module->is(ObjKind::Str)) cls->module = module->as<Str>()->s;
  cls->has_property = base && base->has_property;
  a[2].as<Dict>()->for_each([&](const Value& k, const Value& v) {
    cls->dict->set(k, v);
    if (VM::is_data_descriptor(vm.descriptor_kind(v))) cls->has_property = true;
  });
  if (base)
    if (const Value* hook = base->lookup("__init_subclass__")) vm.call(*hook, ValueVec{Value(cls)});
  return Value(cls);
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
      if (k != "sep" && k != "end" && k != "flush" && k != "file") throw_unsupported("print() keyword argument '" + k + "'");
  std::string text;
  for (size_t i = 0; i < a.npos; ++i) {
    if (i) text += sep;
    text += vm.str_of(a[i]);
  }
  text += end;
  // file=: an object with write(), as sys.stderr (the subset has no open files).
  if (const Value* file = a.kwarg("file"); file && !file->is_none()) {
    vm.call(vm.getattr(*file, "write"), ValueVec{str_value(std::move(text))});
    return Value();
  }
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
    vm.charge_step();
    Value k = key.is_none() ? items[i] : vm.call(key, ValueVec{items[i]});
    if (vm.truth(vm.compare(want_max ? CompareKind::Gt : CompareKind::Lt, k, best_key))) {
      best = items[i];
      best_key = k;
    }
  }
  return best;
}

// CPython 3.12's sum(): ints add exactly while they stay small; from a float
// running total on, floats are added with Neumaier's compensated summation
// (so sum([0.1] * 10) is 1.0) until an item that is neither a float nor a
// small int, after which every step is a plain `+`.
Value builtin_sum(VM& vm, const CallArgs& a) {
  expect_args(a, 1, 2, "sum");
  Value acc = a.npos == 2 ? a[1] : kwarg_or(a, "start", Value(int64_t(0)));
  if (acc.is(ObjKind::Str)) throw_type_error("sum() can't sum strings [use ''.join(seq) instead]");
  enum class Phase { SmallInt, Float, Generic };
  Phase phase = acc.is_int() ? Phase::SmallInt : acc.is_float() ? Phase::Float : Phase::Generic;
  double hi = acc.is_float() ? acc.as_float() : 0.0, lo = 0.0;
  Value it = vm.iter(a[0]);
  Value v;
  while (vm.next(it, v)) {
    if (phase == Phase::SmallInt) {
      int64_t r;
      if ((v.is_int() || v.is_bool()) &&
          !__builtin_add_overflow(acc.as_int(), v.is_bool() ? int64_t(v.as_bool()) : v.as_int(), &r)) {
        acc = Value(r);
        continue;
      }
      acc = vm.binary(BinaryOpKind::Add, acc, v);
      phase = acc.is_float() ? Phase::Float : Phase::Generic;
      hi = acc.is_float() ? acc.as_float() : 0.0;
      continue;
    }
    if (phase == Phase::Float) {
      if (v.is_float()) {
        double x = v.as_float(), t = hi + x;
        lo += std::fabs(hi) >= std::fabs(x) ? (hi - t) + x : (x - t) + hi;
        hi = t;
        continue;
      }
      if (v.is_int() || v.is_bool()) {
        hi += double(v.is_bool() ? int64_t(v.as_bool()) : v.as_int());
        continue;
      }
      if (lo != 0 && std::isfinite(lo)) hi += lo;
      acc = Value(hi);
      phase = Phase::Generic;
    }
    acc = vm.binary(BinaryOpKind::Add, acc, v);
  }
  if (phase == Phase::Float) {
    // Adding a zero or non-finite compensation could lose a -0.0 or turn inf into nan.
    if (lo != 0 && std::isfinite(lo)) hi += lo;
    return Value(hi);
  }
  return acc;
}

Value builtin_abs(VM& vm, const CallArgs& a) {
  expect_args(a, 1, 1, "abs");
  const Value& v = a[0];
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() && v.as_int() != INT64_MIN) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  if (is_integral(v)) return int_abs(v);
  if (v.is(ObjKind::Instance))
    if (const Value* fn = v.as<Instance>()->cls->lookup("__abs__")) return vm.call(*fn, ValueVec{v});
  return vm.call(vm.getattr(v, "abs"), ValueVec{});
}

std::string strip_whitespace(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\n\r\f\v"));
  s.erase(s.find_last_not_of(" \t\n\r\f\v") + 1);
  return s;
}

Value builtin_int(VM& vm, const CallArgs& a) {
  expect_args(a, 0, 2, "int");
  const Value* base_arg = a.npos > 1 ? &a[1] : a.kwarg("base");
  if (a.npos == 0) {
    if (base_arg) throw_type_error("int() missing string argument");
    return Value(int64_t(0));
  }
  const Value& v = a[0];
  if (base_arg) {
    if (!v.is(ObjKind::Str)) throw_type_error("int() can't convert non-string with explicit base");
    int64_t base = to_index(*base_arg, "base");
    return int_parse(v.as<Str>()->s, base < 0 || base > 36 ? -1 : int(base));
  }
  if (v.is_bool()) return Value(int64_t(v.as_bool()));
  if (is_integral(v)) return v;
  if (v.is_float()) return int_from_double(v.as_float());
  if (v.is(ObjKind::Str)) return int_parse(v.as<Str>()->s, 10);
  if (v.is(ObjKind::Tensor)) return vm.call(vm.getattr(v, "__int__"), ValueVec{});
  if (v.is(ObjKind::Instance))
    for (const char* hook : {"__int__", "__index__"})
      if (const Value* fn = v.as<Instance>()->cls->lookup(hook)) return vm.call(*fn, ValueVec{v});
  throw_type_error("int() argument must be a string, a bytes-like object or a real number, not '" + type_name(v) + "'");
}

// Python's float() grammar: [sign] (digits [. [digits]] | . digits) [e [sign] digits],
// single underscores between digits, or inf / infinity / nan in any case.
bool parse_float_literal(const std::string& text, double& out) {
  std::string low = text;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::string_view body = low;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity" || body == "nan") {
    out = body == "nan" ? std::nan("") : HUGE_VAL;
    if (negative) out = -out;
    return true;
  }
  std::string plain(low.substr(0, low.size() - body.size()));
  size_t i = 0, mantissa_digits = 0;
  auto digits = [&]() {
    size_t n = 0;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) {
      plain += body[i++];
      ++n;
      if (i + 1 < body.size() && body[i] == '_' && std::isdigit(static_cast<unsigned char>(body[i + 1]))) ++i;
    }
    return n;
  };
  mantissa_digits += digits();
  if (i < body.size() && body[i] == '.') {
    plain += body[i++];
    mantissa_digits += digits();
  }
  if (mantissa_digits == 0) return false;
  if (i < body.size() && body[i] == 'e') {
    plain += body[i++];
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) plain += body[i++];
    if (digits() == 0) return false;
  }
  if (i != body.size()) return false;
  // strtod reads the process locale (Qt sets it); from_chars does not.
  const char* first = plain.data() + (plain[0] == '+' ? 1 : 0);
  auto r = std::from_chars(first, plain.data() + plain.size(), out);
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars leaves `out` alone on over/underflow; Python gives inf or 0.
    size_t e = plain.find('e');
    bool tiny = e != std::string::npos && plain[e + 1] == '-';
    out = tiny ? 0.0 : HUGE_VAL;
    if (plain[0] == '-') out = -out;
    return true;
  }
  return r.ec == std::errc() && r.ptr == plain.data() + plain.size();
}

Value builtin_float(VM& vm, const CallArgs& a) {
  expect_args(a, 0, 1, "float");
  if (a.npos == 0) return Value(0.0);
  const Value& v = a[0];
  if (v.is_float()) return v;
  if (is_integral(v)) return Value(int_to_double(v));
  if (v.is(ObjKind::Str)) {
    double d = 0;
    if (!parse_float_literal(strip_whitespace(v.as<Str>()->s), d))
      throw PyError("ValueError", "could not convert string to float: " + py_str_repr(v.as<Str>()->s));
    return Value(d);
  }
  if (v.is(ObjKind::Tensor)) return vm.call(vm.getattr(v, "__float__"), ValueVec{});
  if (v.is(ObjKind::Instance))
    if (const Value* fn = v.as<Instance>()->cls->lookup("__float__")) return vm.call(*fn, ValueVec{v});
  throw_type_error("float() argument must be a string or a real number, not '" + type_name(v) + "'");
}

Value builtin_round(VM& vm, const CallArgs& a) {
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
  if (is_integral(v)) {
    if (nd.is_none()) return v.is_bool() ? Value(int64_t(v.as_bool())) : v;
    return int_round(v, to_index(nd, "ndigits"));
  }
  if (v.is(ObjKind::Instance))
    if (const Value* fn = v.as<Instance>()->cls->lookup("__round__"))
      return nd.is_none() ? vm.call(*fn, ValueVec{v}) : vm.call(*fn, ValueVec{v, nd});
  double d = to_double(v, "round() argument");
  if (nd.is_none()) return int_from_double(unwrap(py_round(d)));
  return Value(unwrap(py_round(d, to_index(nd, "ndigits"))));
}

Value builtin_pow(VM& vm, const CallArgs& a) {
  expect_args(a, 2, 3, "pow");
  const Value* mod = a.npos == 3 ? &a[2] : a.kwarg("mod");
  if (!mod || mod->is_none()) return vm.binary(BinaryOpKind::Pow, a[0], a[1]);
  if (!is_integral(a[0]) || !is_integral(a[1]) || !is_integral(*mod))
    throw_type_error("pow() 3rd argument not allowed unless all arguments are integers");
  return int_pow_mod(a[0], a[1], *mod);
}

// hex(), oct() and bin(): format with the alternate form, '-0x1f' for negatives.
Value int_to_base(const CallArgs& a, const char* name, const char* spec) {
  expect_args(a, 1, 1, name);
  if (!is_integral(a[0]))
    throw_type_error("'" + type_name(a[0]) + "' object cannot be interpreted as an integer");
  return str_value(int_format(a[0].is_bool() ? Value(int64_t(a[0].as_bool())) : a[0], spec));
}

// dict(...) and OrderedDict(...): from a mapping, from pairs, and keywords.
Ref<Dict> new_dict(VM& vm, const CallArgs& a) {
  auto d = make<Dict>();
  if (a.npos == 1) {
    Value keys;
    if (a[0].is(ObjKind::Dict)) {
      a[0].as<Dict>()->for_each([&](const Value& k, const Value& v) { d->set(k, v); });
    } else if (a[0].is(ObjKind::Instance) && vm.try_getattr(a[0], "keys", keys)) {
      // A mapping (collections.defaultdict, Counter): CPython reads it through keys().
      for (const Value& k : vm.to_vector(vm.call(keys, ValueVec{}))) d->set(k, vm.getitem(a[0], k));
    } else {
      update_from_pairs(vm, *d, a[0]);
    }
  }
  if (a.kw)
    for (const auto& [k, v] : *a.kw) d->set(str_value(k), v);
  return d;
}

Value builtin_sorted(VM& vm, const CallArgs& a) {
  expect_args(a, 1, 1, "sorted");
  ValueVec items = vm.to_vector(a[0]);
  Value key = kwarg_or(a, "key", Value());
  bool reverse = vm.truth(kwarg_or(a, "reverse", Value(false)));
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& v : items) keyed.emplace_back(key.is_none() ? v : vm.call(key, ValueVec{v}), v);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    vm.charge_step();
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
void install_str_methods(VM& vm);      // str_methods.cpp
void install_object_builtins(VM& vm);  // builtins_objects.cpp

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
  def("delattr", [](VM& vm, const CallArgs& a) {
    expect_args(a, 2, 2, "delattr");
    if (!a[1].is(ObjKind::Str)) throw_type_error("attribute name must be string, not '" + type_name(a[1]) + "'");
    vm.delattr(a[0], as_str(a[1]));
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
  def("ascii", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 1, "ascii");
    return str_value(ascii_of(vm.repr_of(a[0])));
  });
  def("callable", [](VM&, const CallArgs& a) {
    expect_args(a, 1, 1, "callable");
    return Value(is_callable(a[0]));
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
      vm.charge_step();
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
      if (vm.charge_step(), a[0].is_none() ? vm.truth(v) : vm.truth(vm.call(a[0], ValueVec{v}))) out.push_back(v);
    return vm.iter(list_value(std::move(out)));
  });
  def("super", builtin_super);
  def("divmod", [](VM& vm, const CallArgs& a) {
    expect_args(a, 2, 2, "divmod");
    bool numbers = (is_integral(a[0]) || a[0].is_float()) && (is_integral(a[1]) || a[1].is_float());
    if (numbers && (a[0].is_float() || a[1].is_float()) && to_double(a[1], "divmod()") == 0)
      throw PyError("ZeroDivisionError", "float divmod()");
    return tuple_value({vm.binary(BinaryOpKind::FloorDiv, a[0], a[1]), vm.binary(BinaryOpKind::Mod, a[0], a[1])});
  });
  def("pow", builtin_pow);
  def("hex", [](VM&, const CallArgs& a) { return int_to_base(a, "hex", "#x"); });
  def("oct", [](VM&, const CallArgs& a) { return int_to_base(a, "oct", "#o"); });
  def("bin", [](VM&, const CallArgs& a) { return int_to_base(a, "bin", "#b"); });
  def("format", [](VM& vm, const CallArgs& a) {
    expect_args(a, 1, 2, "format");
    std::string spec = a.npos == 2 ? as_str(a[1]) : std::string();
    return str_value(format_with_spec(vm, a[0], spec));
  });
  def("id", [](VM&, const CallArgs&) -> Value { throw_unsupported("id() (object addresses are not part of Kiln's subset)"); });
  // The calling frame's module namespace itself, as CPython's (configurators
  // read and update it).
  def("globals", [](VM& vm, const CallArgs& a) -> Value {
    if (a.npos) throw_type_error("globals() takes no arguments (" + std::to_string(a.npos) + " given)");
    if (!vm.current_frame || !vm.current_frame->globals) throw PyError("RuntimeError", "globals(): no running frame");
    return Value(vm.current_frame->globals);
  });
  for (const char* banned : {"open", "eval", "exec", "compile", "input", "__import__", "locals", "exit", "quit"}) {
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
  set_attr_builtin(object_cls->dict, "object.__setattr__", "__setattr__", [](VM& vm, const CallArgs& a) {
    if (a.npos != 3 || !a[0].is(ObjKind::Instance)) throw_type_error("object.__setattr__(self, name, value)");
    note_mutation(vm, a[0]);
    if (as_str(a[1]) == "__class__") {
      set_instance_class(*a[0].as<Instance>(), a[2]);
      return Value();
    }
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
  auto dict_cls = type("dict", [](VM& vm, const CallArgs& a) { return Value(new_dict(vm, a)); });
  // collections.OrderedDict: a dict marked ordered (repr, views, ==, move_to_end).
  auto ordered_cls = type("OrderedDict", [](VM& vm, const CallArgs& a) {
    Ref<Dict> d = new_dict(vm, a);
    d->ordered = true;
    return Value(d);
  });
  ordered_cls->base = dict_cls;
  ordered_cls->module = "collections";
  b->erase(str_value("OrderedDict"));  // imported from collections, not a builtin name
  // The views' types: type(d.keys()) names them; no program constructs one.
  for (const char* view : {"dict_keys", "dict_values", "dict_items", "odict_keys", "odict_values", "odict_items"}) {
    b->erase(str_value(type(view, nullptr)->name));
  }
  type("range", make_range);
  type("NoneType", nullptr);
  type("type", [](VM& vm, const CallArgs& a) {
    if (a.npos == 3) return new_type(vm, a);
    expect_args(a, 1, 1, "type");
    Ref<Class> c = vm.type_of(a[0]);
    if (!c) throw_unsupported("type() of " + type_name(a[0]));
    return Value(c);
  });
  type("function", nullptr);
  {
    // The type of generator objects: named by type(), not a builtin name.
    auto generator = make<Class>("generator", Ref<Class>());
    generator->module = "builtins";
    generator->builtin = 1;
    vm.register_type(generator);
    // type(...) is `ellipsis`, also not a builtin name.
    auto ellipsis_type = make<Class>("ellipsis", Ref<Class>());
    ellipsis_type->module = "builtins";
    ellipsis_type->builtin = 1;
    vm.register_type(ellipsis_type);
  }
  type("builtin_function_or_method", nullptr);
  type("module", nullptr);
  // type(obj.method); types.MethodType(func, obj) binds func to obj.
  b->erase(str_value(type("method", [](VM& vm, const CallArgs& a) {
                       expect_args(a, 2, 2, "method");
                       if (!vm.truth(vm.call(*vm.builtins()->find_str("callable"), ValueVec{a[0]})))
                         throw_type_error("first argument must be callable");
                       if (a[1].is_none()) throw_type_error("instance must not be None");
                       return Value(make<BoundMethod>(a[1], a[0]));
                     })->name));
  type("slice", [](VM&, const CallArgs& a) {
    expect_args(a, 1, 3, "slice");
    if (a.npos == 1) return Value(make<SliceObj>(Value(), a[0], Value()));
    return Value(make<SliceObj>(a[0], a[1], a.npos == 3 ? a[2] : Value()));
  });
  install_builtin_methods(vm);
  install_str_methods(vm);
  install_object_builtins(vm);
  install_annotate_builtin(vm);
}

}  // namespace kiln::py
