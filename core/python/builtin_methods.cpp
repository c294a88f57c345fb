// Methods of str, list, tuple and dict, and format() for every value (which
// f-strings, str.format and the format() builtin share).
#include <algorithm>
#include <cstdio>

#include "core/python/bigint.h"
#include "core/python/torch_bridge.h"
#include "core/python/unicode_text.h"
#include "core/python/vm.h"
#include "core/util/pyformat.h"
#include "core/util/utf8.h"

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
  if (is_ascii(chars)) {
    // No byte of an ASCII set is part of a multi-byte character.
    size_t b = 0, e = s.size();
    if (left) while (b < e && chars.find(s[b]) != std::string::npos) ++b;
    if (right) while (e > b && chars.find(s[e - 1]) != std::string::npos) --e;
    return s.substr(b, e - b);
  }
  // Whole characters: a set holding one character's bytes must not cut another's.
  const std::vector<std::string> set = utf8_chars(chars), text = utf8_chars(s);
  auto in_set = [&](const std::string& c) { return std::find(set.begin(), set.end(), c) != set.end(); };
  size_t b = 0, e = text.size();
  if (left) while (b < e && in_set(text[b])) ++b;
  if (right) while (e > b && in_set(text[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) out += text[i];
  return out;
}

// str.format: CPython's MarkupIterator and field lookup. Fields are
// {name!conv:spec} where name is '', a number or an identifier followed by
// .attr and [key] parts, and spec may hold nested {} fields.
class StrFormatter {
 public:
  StrFormatter(VM& vm, const CallArgs& a) : vm_(vm), args_(a) {}

  std::string format(std::string_view fmt, int depth) {
    if (depth > 2) throw PyError("ValueError", "Max string recursion exceeded");
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
      char c = fmt[i];
      if (c == '}') {
        if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
          out += '}';
          ++i;
          continue;
        }
        throw PyError("ValueError", "Single '}' encountered in format string");
      }
      if (c != '{') {
        out += c;
        continue;
      }
      if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      int nesting = 1;
      size_t end = i + 1;
      for (; end < fmt.size(); ++end) {
        if (fmt[end] == '{') ++nesting;
        if (fmt[end] == '}' && --nesting == 0) break;
      }
      if (end >= fmt.size())
        throw PyError("ValueError", nesting > 1 || end > i + 1 ? "expected '}' before end of string"
                                                                : "Single '{' encountered in format string");
      out += field(fmt.substr(i + 1, end - i - 1), depth);
      i = end;
    }
    return out;
  }

 private:
  std::string field(std::string_view text, int depth) {
    // The name runs to the first '!' or ':' outside brackets.
    size_t name_end = 0;
    for (bool in_brackets = false; name_end < text.size(); ++name_end) {
      char c = text[name_end];
      if (c == '[') in_brackets = true;
      else if (c == ']') in_brackets = false;
      else if (!in_brackets && (c == '!' || c == ':')) break;
    }
    std::string_view name = text.substr(0, name_end), rest = text.substr(name_end);
    char conversion = 0;
    if (!rest.empty() && rest[0] == '!') {
      if (rest.size() < 2) throw PyError("ValueError", "end of string while looking for conversion specifier");
      conversion = rest[1];
      rest.remove_prefix(2);
      if (!rest.empty() && rest[0] != ':') throw PyError("ValueError", "expected ':' after conversion specifier");
    }
    std::string spec(rest.empty() ? std::string_view() : rest.substr(1));
    Value v = lookup(name);
    switch (conversion) {
      case 0: break;
      case 'r': v = str_value(vm_.repr_of(v)); break;
      case 's': v = str_value(vm_.str_of(v)); break;
      case 'a': v = str_value(ascii_of(vm_.repr_of(v))); break;
      default: throw PyError("ValueError", std::string("Unknown conversion specifier ") + conversion);
    }
    if (spec.find('{') != std::string::npos) spec = format(spec, depth + 1);
    return format_with_spec(vm_, v, spec);
  }

  Value lookup(std::string_view name) {
    size_t first_end = std::min(name.find('.'), name.find('['));
    if (first_end == std::string_view::npos) first_end = name.size();
    std::string_view first = name.substr(0, first_end);
    Value v;
    if (first.empty() || std::all_of(first.begin(), first.end(), ::isdigit)) {
      size_t index;
      if (first.empty()) {
        if (numbering_ == Numbering::Manual)
          throw PyError("ValueError", "cannot switch from manual field specification to automatic field numbering");
        numbering_ = Numbering::Auto;
        index = next_auto_++;
      } else {
        if (numbering_ == Numbering::Auto)
          throw PyError("ValueError", "cannot switch from automatic field numbering to manual field specification");
        numbering_ = Numbering::Manual;
        index = first.size() > 9 ? SIZE_MAX / 2 : std::stoul(std::string(first));
      }
      if (index + 1 >= args_.npos)
        throw PyError("IndexError",
                      "Replacement index " + std::to_string(index) + " out of range for positional args tuple");
      v = args_[index + 1];
    } else {
      const Value* kv = args_.kwarg(first);
      if (!kv) throw PyError("KeyError", py_str_repr(first));
      v = *kv;
    }
    for (size_t i = first_end; i < name.size();) {
      if (name[i] == '.') {
        size_t end = std::min(name.find('.', i + 1), name.find('[', i + 1));
        if (end == std::string_view::npos) end = name.size();
        if (end == i + 1) throw PyError("ValueError", "Empty attribute in format string");
        v = vm_.getattr(v, name.substr(i + 1, end - i - 1));
        i = end;
      } else if (name[i] == '[') {
        size_t end = name.find(']', i);
        if (end == std::string_view::npos) throw PyError("ValueError", "Missing ']' in format string");
        std::string_view key = name.substr(i + 1, end - i - 1);
        if (key.empty()) throw PyError("ValueError", "Empty attribute in format string");
        bool numeric = std::all_of(key.begin(), key.end(), ::isdigit) && key.size() < 18;
        v = vm_.getitem(v, numeric ? Value(int64_t(std::stoll(std::string(key)))) : str_value(std::string(key)));
        i = end + 1;
      } else {
        throw PyError("ValueError", "Only '.' or '[' may follow ']' in format field specifier");
      }
    }
    return v;
  }

  enum class Numbering { Unknown, Auto, Manual };
  VM& vm_;
  const CallArgs& args_;
  Numbering numbering_ = Numbering::Unknown;
  size_t next_auto_ = 0;
};

}  // namespace

std::string ascii_of(const std::string& repr_text) {
  std::string out;
  for (size_t i = 0; i < repr_text.size();) {
    unsigned char c = static_cast<unsigned char>(repr_text[i]);
    if (c < 0x80) {
      out += char(c);
      ++i;
      continue;
    }
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    char32_t cp = c & (n == 4 ? 0x07 : n == 3 ? 0x0f : 0x1f);
    for (size_t k = 1; k < n && i + k < repr_text.size(); ++k) cp = (cp << 6) | (repr_text[i + k] & 0x3f);
    i += n;
    char buf[16];
    if (cp <= 0xff) snprintf(buf, sizeof buf, "\\x%02x", unsigned(cp));
    else if (cp <= 0xffff) snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
    else snprintf(buf, sizeof buf, "\\U%08x", unsigned(cp));
    out += buf;
  }
  return out;
}

std::string format_with_spec(VM& vm, const Value& v, std::string_view spec) {
  if (v.is(ObjKind::Tensor)) return tensor_format(vm, v, spec);
  if (is_integral(v)) return int_format(v, spec);
  Expected<std::string> r = std::string();
  if (v.is_float()) {
    r = py_format_float(v.as_float(), spec);
  } else if (v.is(ObjKind::Str)) {
    r = py_format_str(v.as<Str>()->s, spec);
  } else {
    if (v.is(ObjKind::Instance))
      if (const Value* fn = v.as<Instance>()->cls->lookup("__format__"))
        return as_str(vm.call(*fn, ValueVec{v, str_value(std::string(spec))}));
    if (!spec.empty()) throw_type_error("unsupported format string passed to " + type_name(v) + ".__format__");
    return vm.str_of(v);
  }
  if (!r.ok()) throw PyError("ValueError", r.status().message());
  return *r;
}

void update_from_pairs(VM& vm, Dict& d, const Value& pairs) {
  size_t n = 0;
  for (const Value& kv : vm.to_vector(pairs)) {
    ValueVec pair = vm.to_vector(kv);
    if (pair.size() != 2)
      throw PyError("ValueError", "dictionary update sequence element #" + std::to_string(n) + " has length " +
                                      std::to_string(pair.size()) + "; 2 is required");
    d.set(pair[0], pair[1]);
    ++n;
  }
}

// collections.OrderedDict's own methods; the rest are dict's.
static void install_ordered_dict_methods(VM& vm) {
  Ref<Class> od = vm.builtin_type("OrderedDict");
  if (!od) return;
  auto method = [&](const char* name, BuiltinFn fn) { set_attr_builtin(od->dict, std::string("OrderedDict.") + name, name, std::move(fn)); };
  // `last`, positional at `index` or by keyword; True by default.
  auto last_flag = [](VM& vm, const CallArgs& a, size_t index) {
    const Value* kw = a.kwarg("last");
    return a.npos > index ? vm.truth(a[index]) : kw ? vm.truth(*kw) : true;
  };
  method("move_to_end", [last_flag](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 1, 2, "move_to_end");
    Dict& d = self_dict(a);
    const Value* found = d.find(a[1]);
    if (!found) throw vm.key_error(a[1]);
    Value key = a[1], value = *found;
    d.erase(key);
    if (last_flag(vm, a, 2)) {
      d.set(key, value);
      return Value();
    }
    std::vector<std::pair<Value, Value>> rest = d.items();
    d.entries.clear();
    d.index.clear();
    d.set(key, value);
    for (auto& [k, v] : rest) d.set(k, v);
    return Value();
  });
  method("popitem", [last_flag](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 0, 1, "popitem");
    Dict& d = self_dict(a);
    if (d.size() == 0) throw PyError("KeyError", "'dictionary is empty'");
    std::vector<std::pair<Value, Value>> items = d.items();
    auto [key, value] = last_flag(vm, a, 1) ? items.back() : items.front();
    d.erase(key);
    return tuple_value({key, value});
  });
}

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
  method(str, "format", [](VM& vm, const CallArgs& a) { return str_value(StrFormatter(vm, a).format(self_str(a), 0)); });
  // find, split, startswith and the other searching and padding methods: str_methods.cpp.
  method(str, "upper", [](VM&, const CallArgs& a) {
    std::string s = self_str(a);
    if (!is_ascii(s)) return str_value(unicode::upper(s));
    std::transform(s.begin(), s.end(), s.begin(), ::toupper);
    return str_value(std::move(s));
  });
  method(str, "lower", [](VM&, const CallArgs& a) {
    std::string s = self_str(a);
    if (!is_ascii(s)) return str_value(unicode::lower(s));
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
      if (vm.charge_step(), vm.truth(vm.compare(CompareKind::Eq, items[i], a[1]))) {
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
        if (vm.charge_step(), vm.truth(vm.compare(CompareKind::Eq, items[i], a[1]))) return Value(int64_t(i));
      throw PyError("ValueError", vm.repr_of(a[1]) + " is not in " + type_name(a[0]));
    });
    method(cls, "count", [](VM& vm, const CallArgs& a) {
      need(a, 1, 1, "count");
      int64_t n = 0;
      for (const Value& v : vm.to_vector(a[0]))
        if (vm.charge_step(), vm.truth(vm.compare(CompareKind::Eq, v, a[1]))) ++n;
      return Value(n);
    });
  }

  Ref<Class> dict = vm.builtin_type("dict");
  auto view_method = [&](const char* name, DictView::Which which) {
    method(dict, name, [which, name](VM&, const CallArgs& a) {
      need(a, 0, 0, name);
      return Value(make<DictView>(Ref<Dict>(a[0].as<Dict>()), which));
    });
  };
  view_method("keys", DictView::Which::Keys);
  view_method("values", DictView::Which::Values);
  view_method("items", DictView::Which::Items);
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
      throw vm.key_error(a[1]);
    }
    Value out = *v;
    self_dict(a).erase(a[1]);
    return out;
  });
  method(dict, "popitem", [](VM& vm, const CallArgs& a) {
    note_mutation(vm, a[0]);
    need(a, 0, 0, "popitem");
    Dict& d = self_dict(a);
    for (auto it = d.entries.rbegin(); it != d.entries.rend(); ++it) {
      if (!it->live) continue;
      Value key = it->key, value = it->value;
      d.erase(key);
      return tuple_value({key, value});
    }
    throw PyError("KeyError", "'popitem(): dictionary is empty'");
  });
  // dict.fromkeys(iterable, value=None), called on the class (no receiver).
  method(dict, "fromkeys", [](VM& vm, const CallArgs& a) {
    if (a.npos < 1 || a.npos > 2) throw_type_error("fromkeys expected at least 1 argument, got " + std::to_string(a.npos));
    auto d = make<Dict>();
    Value value = a.npos > 1 ? a[1] : Value();
    for (const Value& k : vm.to_vector(a[0])) d->set(k, value);
    return Value(d);
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
    Value keys;
    if (a.npos > 1 && a[1].is(ObjKind::Instance) && vm.try_getattr(a[1], "keys", keys)) {
      // A mapping (collections.defaultdict, Counter): CPython reads it through keys().
      for (const Value& k : vm.to_vector(vm.call(keys, ValueVec{}))) self_dict(a).set(k, vm.getitem(a[1], k));
    } else if (a.npos > 1 && a[1].is(ObjKind::Dict)) {
      a[1].as<Dict>()->for_each([&](const Value& k, const Value& v) { self_dict(a).set(k, v); });
    } else if (a.npos > 1) {
      update_from_pairs(vm, self_dict(a), a[1]);  // d.update(other.items()), d.update(zip(keys, values))
    }
    if (a.kw)
      for (const auto& [k, v] : *a.kw) self_dict(a).set(str_value(k), v);
    return Value();
  });
  method(dict, "copy", [](VM&, const CallArgs& a) {
    auto d = make<Dict>();
    d->ordered = self_dict(a).ordered;
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
  install_ordered_dict_methods(vm);
}

}  // namespace kiln::py
