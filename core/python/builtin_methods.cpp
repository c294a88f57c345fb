// Methods of str, list, tuple and dict.
#include <algorithm>

#include "core/python/vm.h"
#include "core/util/pyformat.h"

namespace kiln::py {

namespace {

std::string& self_str(const CallArgs& a) { return a[0].as<Str>()->s; }
ValueVec& self_list(const CallArgs& a) { return a[0].as<List>()->items; }
Dict& self_dict(const CallArgs& a) { return *a[0].as<Dict>(); }

void need(const CallArgs& a, size_t lo, size_t hi, const char* name) {
  if (a.npos < lo + 1 || a.npos > hi + 1)
    throw_type_error(std::string(name) + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                     " arguments (" + std::to_string(a.npos - 1) + " given)");
}

std::string strip_chars(const std::string& s, const std::string& chars, bool left, bool right) {
  size_t b = 0, e = s.size();
  if (left) while (b < e && chars.find(s[b]) != std::string::npos) ++b;
  if (right) while (e > b && chars.find(s[e - 1]) != std::string::npos) --e;
  return s.substr(b, e - b);
}

// str.format with positional ({} / {0}) and keyword ({name}) fields and format specs.
std::string str_format(VM& vm, const CallArgs& a) {
  const std::string& fmt = self_str(a);
  std::string out;
  size_t auto_index = 1;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
    if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; ++i; continue; }
    if (c != '{') { out += c; continue; }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw PyError("ValueError", "Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec;
    int conv = 0;
    if (size_t colon = field.find(':'); colon != std::string::npos) { spec = field.substr(colon + 1); field = field.substr(0, colon); }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conv = field.substr(bang + 1) == "r" ? 2 : 1;
      field = field.substr(0, bang);
    }
    Value v;
    if (field.empty()) {
      if (auto_index >= a.npos) throw PyError("IndexError", "Replacement index " + std::to_string(auto_index - 1) + " out of range for positional args tuple");
      v = a[auto_index++];
    } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t k = std::stoul(field) + 1;
      if (k >= a.npos) throw PyError("IndexError", "Replacement index " + field + " out of range for positional args tuple");
      v = a[k];
    } else {
      const Value* kv = a.kwarg(field);
      if (!kv) throw PyError("KeyError", "'" + field + "'");
      v = *kv;
    }
    if (conv == 1) v = str_value(vm.str_of(v));
    if (conv == 2) v = str_value(vm.repr_of(v));
    Expected<std::string> r = std::string();
    if (spec.empty()) r = vm.str_of(v);
    else if (v.is_float()) r = py_format_float(v.as_float(), spec);
    else if (v.is_int() || v.is_bool()) r = py_format_int(v.is_bool() ? v.as_bool() : v.as_int(), spec);
    else r = py_format_str(vm.str_of(v), spec);
    if (!r.ok()) throw PyError("ValueError", r.status().message());
    out += r.value();
  }
  return out;
}

}  // namespace

void install_builtin_methods(VM& vm) {
  auto method = [](const Ref<Class>& cls, const char* name, BuiltinFn fn) {
    set_attr_builtin(cls->dict, cls->name + "." + name, name, std::move(fn));
  };
  Ref<Class> str = vm.builtin_type("str");
  method(str, "join", [](VM& vm, const CallArgs& a) {
    need(a, 1, 1, "join");
    std::string out;
    bool first = true;
    for (const Value& v : vm.to_vector(a[1])) {
      if (!v.is(ObjKind::Str)) throw_type_error("sequence item: expected str instance, " + type_name(v) + " found");
      if (!first) out += self_str(a);
      first = false;
      out += v.as<Str>()->s;
    }
    return str_value(std::move(out));
  });
  method(str, "format", [](VM& vm, const CallArgs& a) { return str_value(str_format(vm, a)); });
  method(str, "upper", [](VM&, const CallArgs& a) {
    std::string s = self_str(a);
    std::transform(s.begin(), s.end(), s.begin(), ::toupper);
    return str_value(std::move(s));
  });
  method(str, "lower", [](VM&, const CallArgs& a) {
    std::string s = self_str(a);
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    return str_value(std::move(s));
  });
  for (int kind = 0; kind < 3; ++kind) {
    static const char* names[] = {"strip", "lstrip", "rstrip"};
    method(str, names[kind], [kind](VM&, const CallArgs& a) {
      std::string chars = a.npos > 1 && !a[1].is_none() ? as_str(a[1]) : std::string(" \t\n\r\f\v");
      return str_value(strip_chars(self_str(a), chars, kind != 2, kind != 1));
    });
  }
  method(str, "startswith", [](VM&, const CallArgs& a) {
    need(a, 1, 1, "startswith");
    return Value(self_str(a).starts_with(as_str(a[1])));
  });
  method(str, "endswith", [](VM&, const CallArgs& a) {
    need(a, 1, 1, "endswith");
    return Value(self_str(a).ends_with(as_str(a[1])));
  });
  method(str, "replace", [](VM&, const CallArgs& a) {
    need(a, 2, 2, "replace");
    std::string s = self_str(a);
    const std::string& from = as_str(a[1]);
    const std::string& to = as_str(a[2]);
    if (from.empty()) return str_value(s);
    std::string out;
    size_t pos = 0, hit;
    while ((hit = s.find(from, pos)) != std::string::npos) {
      out += s.substr(pos, hit - pos) + to;
      pos = hit + from.size();
    }
    return str_value(out + s.substr(pos));
  });
  method(str, "split", [](VM&, const CallArgs& a) {
    const std::string& s = self_str(a);
    ValueVec parts;
    if (a.npos < 2 || a[1].is_none()) {
      size_t i = 0;
      while (i < s.size()) {
        while (i < s.size() && isspace(static_cast<unsigned char>(s[i]))) ++i;
        size_t b = i;
        while (i < s.size() && !isspace(static_cast<unsigned char>(s[i]))) ++i;
        if (i > b) parts.push_back(str_value(s.substr(b, i - b)));
      }
    } else {
      const std::string& sep = as_str(a[1]);
      if (sep.empty()) throw PyError("ValueError", "empty separator");
      size_t pos = 0, hit;
      while ((hit = s.find(sep, pos)) != std::string::npos) {
        parts.push_back(str_value(s.substr(pos, hit - pos)));
        pos = hit + sep.size();
      }
      parts.push_back(str_value(s.substr(pos)));
    }
    return list_value(std::move(parts));
  });

  Ref<Class> list = vm.builtin_type("list");
  method(list, "append", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 1, 1, "append");
    self_list(a).push_back(a[1]);
    return Value();
  });
  method(list, "extend", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 1, 1, "extend");
    ValueVec items = vm.to_vector(a[1]);
    self_list(a).insert(self_list(a).end(), items.begin(), items.end());
    return Value();
  });
  method(list, "insert", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 2, 2, "insert");
    auto& items = self_list(a);
    int64_t i = to_index(a[1], "index"), n = int64_t(items.size());
    if (i < 0) i = std::max<int64_t>(0, i + n);
    items.insert(items.begin() + std::min(i, n), a[2]);
    return Value();
  });
  method(list, "pop", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 0, 1, "pop");
    auto& items = self_list(a);
    if (items.empty()) throw PyError("IndexError", "pop from empty list");
    int64_t n = int64_t(items.size());
    int64_t i = a.npos > 1 ? to_index(a[1], "index") : n - 1;
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw PyError("IndexError", "pop index out of range");
    Value v = items[size_t(i)];
    items.erase(items.begin() + i);
    return v;
  });
  method(list, "remove", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 1, 1, "remove");
    auto& items = self_list(a);
    for (size_t i = 0; i < items.size(); ++i)
      if (vm.truth(vm.compare(CompareKind::Eq, items[i], a[1]))) {
        items.erase(items.begin() + long(i));
        return Value();
      }
    throw PyError("ValueError", "list.remove(x): x not in list");
  });
  method(list, "clear", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    self_list(a).clear();
    return Value();
  });
  method(list, "copy", [](VM&, const CallArgs& a) { return list_value(self_list(a)); });
  method(list, "reverse", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    std::reverse(self_list(a).begin(), self_list(a).end());
    return Value();
  });
  method(list, "sort", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    ValueVec args{a[0]};
    Value sorted = vm.call(vm.builtins()->find_str("sorted") ? *vm.builtins()->find_str("sorted") : Value(),
                           CallArgs{args.data(), 1, a.kw});
    self_list(a) = sorted.as<List>()->items;
    return Value();
  });
  for (const char* owner : {"list", "tuple"}) {
    Ref<Class> cls = vm.builtin_type(owner);
    method(cls, "index", [](VM& vm, const CallArgs& a) {
      need(a, 1, 1, "index");
      ValueVec items = vm.to_vector(a[0]);
      for (size_t i = 0; i < items.size(); ++i)
        if (vm.truth(vm.compare(CompareKind::Eq, items[i], a[1]))) return Value(int64_t(i));
      throw PyError("ValueError", vm.repr_of(a[1]) + " is not in " + type_name(a[0]));
    });
    method(cls, "count", [](VM& vm, const CallArgs& a) {
      need(a, 1, 1, "count");
      int64_t n = 0;
      for (const Value& v : vm.to_vector(a[0]))
        if (vm.truth(vm.compare(CompareKind::Eq, v, a[1]))) ++n;
      return Value(n);
    });
  }

  Ref<Class> dict = vm.builtin_type("dict");
  method(dict, "items", [](VM&, const CallArgs& a) {
    ValueVec out;
    self_dict(a).for_each([&](const Value& k, const Value& v) { out.push_back(tuple_value({k, v})); });
    return list_value(std::move(out));
  });
  method(dict, "keys", [](VM&, const CallArgs& a) {
    ValueVec out;
    self_dict(a).for_each([&](const Value& k, const Value&) { out.push_back(k); });
    return list_value(std::move(out));
  });
  method(dict, "values", [](VM&, const CallArgs& a) {
    ValueVec out;
    self_dict(a).for_each([&](const Value&, const Value& v) { out.push_back(v); });
    return list_value(std::move(out));
  });
  method(dict, "get", [](VM&, const CallArgs& a) {
    need(a, 1, 2, "get");
    const Value* v = self_dict(a).find(a[1]);
    return v ? *v : (a.npos > 2 ? a[2] : Value());
  });
  method(dict, "pop", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 1, 2, "pop");
    const Value* v = self_dict(a).find(a[1]);
    if (!v) {
      if (a.npos > 2) return a[2];
      throw PyError("KeyError", vm.repr_of(a[1]));
    }
    Value out = *v;
    self_dict(a).erase(a[1]);
    return out;
  });
  method(dict, "setdefault", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 1, 2, "setdefault");
    if (const Value* v = self_dict(a).find(a[1])) return *v;
    Value d = a.npos > 2 ? a[2] : Value();
    self_dict(a).set(a[1], d);
    return d;
  });
  method(dict, "update", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    if (a.npos > 1) {
      if (!a[1].is(ObjKind::Dict)) throw_unsupported("dict.update() from a non-dict");
      a[1].as<Dict>()->for_each([&](const Value& k, const Value& v) { self_dict(a).set(k, v); });
    }
    if (a.kw)
      for (const auto& [k, v] : *a.kw) self_dict(a).set(str_value(k), v);
    return Value();
  });
  method(dict, "copy", [](VM&, const CallArgs& a) {
    auto d = make<Dict>();
    self_dict(a).for_each([&](const Value& k, const Value& v) { d->set(k, v); });
    return Value(d);
  });
  method(dict, "clear", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    auto& d = self_dict(a);
    d.entries.clear();
    d.index.clear();
    return Value();
  });
}

}  // namespace kiln::py
