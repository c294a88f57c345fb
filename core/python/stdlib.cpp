// The lazy module table and the natives the standard-library sources share.
#include "core/python/stdlib.h"

#include <string_view>

#include "core/python/compiler.h"
#include "core/python/vm.h"

namespace kiln::py {

void load_pathlib(VM& vm, const Ref<Module>& m);  // stdlib_pathlib.cpp

namespace {

struct StdModule {
  std::string_view name;
  void (*load)(VM&, const Ref<Module>&);
};

constexpr StdModule kModules[] = {
    {"_kiln_numpy", load_kiln_numpy},
    {"_kiln_std", load_kiln_std},
    {"__future__", load_future},
    {"abc", load_abc},
    {"argparse", load_argparse},
    {"ast", load_ast},
    {"bisect", load_bisect},
    {"codecs", load_codecs},
    {"collections", load_collections},
    {"collections.abc", load_collections_abc},
    {"contextlib", load_contextlib},
    {"copy", load_copy},
    {"csv", load_csv},
    {"dataclasses", load_dataclasses},
    {"datetime", load_datetime},
    {"einops", load_einops},
    {"einops.layers", load_einops_layers},
    {"einops.layers.torch", load_einops_layers_torch},
    {"enum", load_enum},
    {"fnmatch", load_fnmatch},
    {"functools", load_functools},
    {"glob", load_glob},
    {"heapq", load_heapq},
    {"importlib", load_importlib},
    {"inspect", load_inspect},
    {"io", load_io},
    {"itertools", load_itertools},
    {"json", load_json},
    {"logging", load_logging},
    {"numpy", load_numpy},
    {"numpy.random", load_numpy_random},
    {"operator", load_operator},
    {"os", load_os},
    {"os.path", load_os_path},
    {"pathlib", load_pathlib},
    {"pickle", load_pickle},
    {"random", load_random},
    {"re", load_re},
    {"shutil", load_refused},
    {"socket", load_refused},
    {"string", load_string},
    {"struct", load_struct},
    {"subprocess", load_refused},
    {"sys", load_sys},
    {"time", load_time},
    {"tqdm", load_tqdm},
    {"tqdm.auto", load_tqdm},
    {"traceback", load_traceback},
    {"types", load_types},
    {"typing", load_typing},
    {"unicodedata", load_unicodedata},
    {"warnings", load_warnings},
};

}  // namespace

bool is_stdlib_module(std::string_view name) {
  for (const StdModule& s : kModules)
    if (s.name == name) return true;
  return false;
}

Ref<Module> load_stdlib_module(VM& vm, std::string_view name) {
  for (const StdModule& s : kModules) {
    if (s.name != name) continue;
    auto m = make<Module>(std::string(name));
    m->dict->set(str_value("__name__"), str_value(m->name));
    // Registered before it runs: a module that imports itself back (os and
    // os.path) finds it.
    vm.add_module(m);
    s.load(vm, m);
    return m;
  }
  return {};
}

void def_native(const Ref<Module>& m, const std::string& name, BuiltinFn fn) {
  set_attr_builtin(m->dict, m->name + "." + name, name, std::move(fn));
}

void run_module_source(VM& vm, const Ref<Module>& m, const Expected<CodePtr>& code) {
  if (!code.ok()) throw PyError("SystemError", "Kiln's " + m->name + " module does not compile: " + code.status().to_string());
  Frame frame;
  frame.code = code.value().get();
  frame.consts = vm.consts_of(code.value()).get();
  frame.globals = m->dict;
  frame.ns = m->dict;
  frame.parent = vm.current_frame;
  vm.run_frame(frame);
  // Classes the source defined belong to the module, as in CPython.
  m->dict->for_each([&](const Value&, const Value& v) {
    if (v.is(ObjKind::Class) && v.as<Class>()->builtin < 0 && v.as<Class>()->module == "__main__") v.as<Class>()->module = m->name;
  });
}

namespace {

Class* class_arg(const CallArgs& a, size_t i) {
  if (a.npos <= i || !a[i].is(ObjKind::Class)) throw_type_error("expected a class");
  return a[i].as<Class>();
}

}  // namespace

// What the Python sources need and the subset lacks: raising errors, naming
// classes made at run time, a class's own dict, new instances without
// __init__, the caller's location and a function's parameters.
void load_kiln_std(VM&, const Ref<Module>& m) {
  def_native(m, "raise_error", [](VM&, const CallArgs& a) -> Value { throw PyError(as_str(a[0]), as_str(a[1])); });
  // Outside the subset: NotImplementedError with exit code 3, as open() is.
  def_native(m, "refuse", [](VM&, const CallArgs& a) -> Value { throw_unsupported(as_str(a[0])); });
  def_native(m, "class_dict", [](VM&, const CallArgs& a) { return Value(class_arg(a, 0)->dict); });
  // A type the VM registers but builtins does not name (collections.OrderedDict).
  def_native(m, "builtin_type", [](VM& vm, const CallArgs& a) -> Value {
    Ref<Class> c = vm.builtin_type(as_str(a[0]));
    if (!c) throw PyError("AttributeError", "no builtin type " + as_str(a[0]));
    return Value(c);
  });
  def_native(m, "set_class_name", [](VM&, const CallArgs& a) {
    Class* c = class_arg(a, 0);
    c->name = c->qualname = as_str(a[1]);
    if (a.npos > 2) c->module = as_str(a[2]);
    return Value();
  });
  def_native(m, "instance_dict", [](VM&, const CallArgs& a) -> Value {
    if (!a[0].is(ObjKind::Instance)) throw_type_error("instance_dict() expects an instance");
    return Value(a[0].as<Instance>()->dict);
  });
  def_native(m, "set_function_name", [](VM&, const CallArgs& a) {
    if (!a[0].is(ObjKind::Function)) return Value();
    Function* fn = a[0].as<Function>();
    fn->name = as_str(a[1]);
    fn->qualname = a.npos > 2 ? as_str(a[2]) : fn->name;
    return Value();
  });
  def_native(m, "builtin", [](VM& vm, const CallArgs& a) {
    const Value* v = vm.builtins()->find_str(as_str(a[0]));
    return v ? *v : Value();
  });
  def_native(m, "set_builtin", [](VM& vm, const CallArgs& a) {
    vm.builtins()->set(a[0], a[1]);
    return Value();
  });
  // d[key] = True when absent, returning whether it was: warnings' shown-once
  // registry, written past the tracer (a compiled region that warns stays
  // reusable; the warning is printed once, when traced, as PyTorch's).
  def_native(m, "mark_once", [](VM&, const CallArgs& a) {
    if (!a[0].is(ObjKind::Dict)) throw_type_error("mark_once() expects a dict");
    Dict* d = a[0].as<Dict>();
    if (d->find(a[1])) return Value(false);
    d->set(a[1], Value(true));
    return Value(true);
  });
  def_native(m, "is_instance_object", [](VM&, const CallArgs& a) { return Value(a[0].is(ObjKind::Instance)); });
  def_native(m, "is_class", [](VM&, const CallArgs& a) { return Value(a[0].is(ObjKind::Class)); });
  def_native(m, "is_user_class", [](VM&, const CallArgs& a) {
    return Value(a[0].is(ObjKind::Class) && a[0].as<Class>()->builtin < 0);
  });
  def_native(m, "is_method", [](VM&, const CallArgs& a) { return Value(a[0].is(ObjKind::BoundMethod)); });
  def_native(m, "is_builtin", [](VM&, const CallArgs& a) { return Value(a[0].is(ObjKind::Builtin)); });
  def_native(m, "is_module", [](VM&, const CallArgs& a) { return Value(a[0].is(ObjKind::Module)); });
  def_native(m, "is_function", [](VM&, const CallArgs& a) { return Value(a[0].is(ObjKind::Function)); });
  def_native(m, "new_instance", [](VM&, const CallArgs& a) { return Value(make<Instance>(Ref<Class>(class_arg(a, 0)))); });
  def_native(m, "base_of", [](VM&, const CallArgs& a) {
    Class* c = class_arg(a, 0);
    return c->base ? Value(c->base) : Value();
  });
  // Identity as a dict key (memo tables: the subset has no id()).
  def_native(m, "identity", [](VM&, const CallArgs& a) {
    return Value(int64_t(reinterpret_cast<intptr_t>(a[0].is_obj() ? a[0].obj() : nullptr)));
  });
  // (filename, line, source text, function name) of the frame `depth` callers above the
  // Python function that called this (1: its caller).
  def_native(m, "caller", [](VM& vm, const CallArgs& a) {
    int64_t depth = a.npos ? to_index(a[0], "depth") : 1;
    Frame* f = vm.current_frame;
    for (int64_t i = 0; i < depth && f && f->parent; ++i) f = f->parent;
    if (!f || !f->code) return tuple_value({str_value("sys"), Value(int64_t(1)), str_value(""), str_value("<module>")});
    int line = f->line();
    return tuple_value({str_value(f->code->filename), Value(int64_t(line)), str_value(source_line(*f->code, line)),
                        str_value(f->code->name)});
  });
  // A Python function's parameters: (names, kinds, defaults dict) with kinds
  // as inspect names them.
  def_native(m, "parameters", [](VM&, const CallArgs& a) {
    Value fv = a[0];
    if (fv.is(ObjKind::BoundMethod)) fv = fv.as<BoundMethod>()->func;
    if (!fv.is(ObjKind::Function)) throw PyError("ValueError", "no signature found for " + type_name(a[0]));
    Function* fn = fv.as<Function>();
    const Code& c = *fn->code;
    ValueVec names, kinds;
    auto defaults = make<Dict>();
    size_t slot = 0;
    const size_t nparams = size_t(c.argcount);
    for (; slot < nparams; ++slot) {
      names.push_back(str_value(c.varnames[slot]));
      kinds.push_back(str_value("POSITIONAL_OR_KEYWORD"));
      size_t first_default = nparams - std::min(nparams, fn->defaults.size());
      if (slot >= first_default) defaults->set(names.back(), fn->defaults[slot - first_default]);
    }
    ValueVec kwonly;
    for (int i = 0; i < c.kwonlyargcount; ++i, ++slot) kwonly.push_back(str_value(c.varnames[slot]));
    if (c.has_varargs) {
      names.push_back(str_value(c.varnames[slot++]));
      kinds.push_back(str_value("VAR_POSITIONAL"));
    }
    for (const Value& k : kwonly) {
      names.push_back(k);
      kinds.push_back(str_value("KEYWORD_ONLY"));
      if (fn->kwdefaults)
        if (const Value* d = fn->kwdefaults->find(k)) defaults->set(k, *d);
    }
    if (c.has_varkw) {
      names.push_back(str_value(c.varnames[slot]));
      kinds.push_back(str_value("VAR_KEYWORD"));
    }
    return tuple_value({list_value(std::move(names)), list_value(std::move(kinds)), Value(defaults)});
  });
}

void install_annotate_builtin(VM& vm) {
  // Called by the code a class body's `name: annotation` compiles to
  // (compiler_stmt.cpp), from inside the body: its frame's namespace is the
  // class's.
  set_attr_builtin(vm.builtins(), "__kiln_annotate__", "__kiln_annotate__", [](VM& vm, const CallArgs& a) {
    Frame* f = vm.current_frame;
    if (!f || !f->ns) return Value();
    Value key = str_value("__annotations__");
    Value* ann = f->ns->find(key);
    if (!ann || !ann->is(ObjKind::Dict)) {
      f->ns->set(key, Value(make<Dict>()));
      ann = f->ns->find(key);
    }
    ann->as<Dict>()->set(a[0], a[1]);
    return Value();
  });
}

void load_glob(VM&, const Ref<Module>& m) {
  for (const char* fn : {"glob", "iglob"}) {
    std::string qualified = std::string("glob.") + fn;
    def_native(m, fn, [qualified](VM&, const CallArgs&) -> Value {
      throw_unsupported(qualified + "() is outside Kiln's Python subset (programs cannot list files)");
    });
  }
}

void load_pickle(VM&, const Ref<Module>& m) {
  m->dict->set(str_value("HIGHEST_PROTOCOL"), Value(int64_t(5)));
  m->dict->set(str_value("DEFAULT_PROTOCOL"), Value(int64_t(5)));
  for (const char* fn : {"load", "loads", "dump", "dumps", "Pickler", "Unpickler"}) {
    std::string qualified = std::string("pickle.") + fn;
    def_native(m, fn, [qualified](VM&, const CallArgs&) -> Value {
      throw_unsupported(qualified + "() is outside Kiln's Python subset (unpickling runs arbitrary code; pickles live in files)");
    });
  }
}

// struct packs values into bytes, which the subset does not have: importable
// (llama2.c imports it for its export path), its functions refused by name.
void load_struct(VM&, const Ref<Module>& m) {
  for (const char* fn : {"pack", "unpack", "calcsize", "pack_into", "unpack_from", "iter_unpack", "Struct"}) {
    std::string qualified = std::string("struct.") + fn;
    def_native(m, fn, [qualified](VM&, const CallArgs&) -> Value {
      throw_unsupported(qualified + "() is outside Kiln's Python subset (it works on bytes, which the subset has not)");
    });
  }
}

// Every attribute of subprocess, socket and shutil is refused when reached,
// so a program that only imports one still runs.
void load_refused(VM&, const Ref<Module>& m) {
  const std::string name = m->name;
  for (const char* fn : {"run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput", "socket",
                         "create_connection", "gethostname", "copy", "copyfile", "copytree", "rmtree", "move", "which"}) {
    std::string qualified = name + "." + fn;
    def_native(m, fn, [qualified](VM&, const CallArgs&) -> Value {
      throw_unsupported(qualified + "() is outside Kiln's Python subset (programs cannot run processes, open sockets or touch files)");
    });
  }
}

}  // namespace kiln::py
