#include "core/python/vm.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <new>
#include <pthread.h>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

#include "core/python/bigint.h"
#include "core/python/compiler.h"
#include "core/python/pytorch_names.h"
#include "core/python/torch_bridge.h"
#include "core/util/pyformat.h"

namespace kiln::py {

namespace {

// The lowest address this thread's stack may grow to, plus a margin for the
// C++ work one more Python frame may do; 0 when unknown. The frame limit
// (CPython's 1000) is the rule; this only turns a thread with a small stack
// (or an instrumented build's large frames) into a RecursionError, never a crash.
uintptr_t stack_floor() {
  thread_local uintptr_t floor = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return uintptr_t(0);
    void* addr = nullptr;
    size_t size = 0;
    const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
    pthread_attr_destroy(&attr);
    constexpr size_t kMargin = 256 * 1024;
    return ok && size > 2 * kMargin ? reinterpret_cast<uintptr_t>(addr) + kMargin : uintptr_t(0);
  }();
  return floor;
}

bool stack_nearly_full() {
  char here;
  return reinterpret_cast<uintptr_t>(&here) < stack_floor();
}

// Keyword arguments of one call instruction; kept off the heap for calls without them.
using KwVec = std::vector<std::pair<std::string, Value>>;

Value& top(Frame& f, size_t depth = 0) { return f.stack[f.stack.size() - 1 - depth]; }

void pop_n(Frame& f, size_t n) { f.stack.resize(f.stack.size() - n); }

Value pop(Frame& f) {
  Value v = std::move(f.stack.back());
  f.stack.pop_back();
  return v;
}

[[noreturn]] void name_error(const std::string& name) {
  throw PyError("NameError", "name '" + name + "' is not defined");
}

ValueVec unpack_items(VM& vm, const Value& seq) {
  if (seq.is(ObjKind::Tuple)) return seq.as<Tuple>()->items;
  if (seq.is(ObjKind::List)) return seq.as<List>()->items;
  return vm.to_vector(seq);
}

std::string format_value(VM& vm, const Value& v, const std::string& spec) { return format_with_spec(vm, v, spec); }

}  // namespace

int Frame::line() const {
  if (!code || code->code.empty()) return 0;
  int i = pc < int(code->code.size()) ? pc : int(code->code.size()) - 1;
  return code->code[i].line;
}

namespace {
int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

VM::VM(VMOptions options) : options_(std::move(options)), builtins_(make<Dict>()) {
  // The preludes' steps are not the program's: no budget while they run (a
  // program given a small one must still start).
  const auto budget = options_.max_steps;
  options_.max_steps = 0;
  install_builtins(*this);
  install_exceptions(*this);
  install_descriptors(*this);
  install_sets(*this);
  if (const Value* b = builtins_->find_str("BaseException"); b && b->is(ObjKind::Class))
    base_exception_ = Ref<Class>(b->as<Class>());
  install_torch(*this);
  options_.max_steps = budget;
  steps_ = 0;  // the program's budget is its own: the preludes ran above
  if (options_.time_limit_s > 0) deadline_ns_ = steady_now_ns() + int64_t(options_.time_limit_s * 1e9);
}

void VM::check_deadline() {
  if (options_.cancel && options_.cancel->load(std::memory_order_relaxed))
    throw PyError("KeyboardInterrupt", "the run was cancelled", /*unsupported=*/true);
  if (!deadline_ns_ || steady_now_ns() < deadline_ns_) return;
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", options_.time_limit_s);
  deadline_ns_ = 0;  // raised once: the unwinding must not raise again
  throw PyError("TimeoutError", std::string("the program ran past its time limit of ") + limit + " s (--time-limit)")
      .make_uncatchable();
}

namespace {

// Pushes each object `obj` holds a reference to that the walk can see (the
// closures inside std::function are opaque; emptying the dicts that lead to
// them breaks their cycles all the same).
template <class Visit>
void for_each_child(Object* obj, Visit&& visit) {
  switch (obj->kind) {
    case ObjKind::Tuple:
      for (const Value& v : static_cast<Tuple*>(obj)->items) visit(v);
      break;
    case ObjKind::List:
      for (const Value& v : static_cast<List*>(obj)->items) visit(v);
      break;
    case ObjKind::Dict:
      static_cast<Dict*>(obj)->for_each([&](const Value& k, const Value& v) {
        visit(k);
        visit(v);
      });
      break;
    case ObjKind::Cell: visit(static_cast<Cell*>(obj)->value); break;
    case ObjKind::DictView: visit(Value(static_cast<DictView*>(obj)->dict)); break;
    case ObjKind::Function: {
      auto* fn = static_cast<Function*>(obj);
      visit(Value(fn->globals));
      for (const Value& v : fn->defaults) visit(v);
      visit(Value(fn->kwdefaults));
      for (const Ref<Cell>& c : fn->closure) visit(Value(c));
      visit(Value(fn->attrs));
      break;
    }
    case ObjKind::BoundMethod:
      visit(static_cast<BoundMethod*>(obj)->self);
      visit(static_cast<BoundMethod*>(obj)->func);
      break;
    case ObjKind::Builtin: visit(static_cast<Builtin*>(obj)->self); break;
    case ObjKind::Class:
      visit(Value(static_cast<Class*>(obj)->base));
      visit(Value(static_cast<Class*>(obj)->dict));
      break;
    case ObjKind::Instance:
      visit(Value(static_cast<Instance*>(obj)->cls));
      visit(Value(static_cast<Instance*>(obj)->dict));
      break;
    case ObjKind::Module: visit(Value(static_cast<Module*>(obj)->dict)); break;
    case ObjKind::Tensor: visit(static_cast<TensorObj*>(obj)->grad); break;
    case ObjKind::Slice: {
      auto* s = static_cast<SliceObj*>(obj);
      visit(s->start);
      visit(s->stop);
      visit(s->step);
      break;
    }
    case ObjKind::Super:
      visit(Value(static_cast<SuperObj*>(obj)->cls));
      visit(static_cast<SuperObj*>(obj)->self);
      break;
    default: break;
  }
}

// Drops every reference `obj` holds (its children stay alive through the
// walk's own references until all are emptied).
void clear_children(Object* obj) {
  switch (obj->kind) {
    case ObjKind::Tuple: static_cast<Tuple*>(obj)->items.clear(); break;
    case ObjKind::List: static_cast<List*>(obj)->items.clear(); break;
    case ObjKind::Dict: {
      auto* d = static_cast<Dict*>(obj);
      d->index.clear();
      d->entries.clear();
      break;
    }
    case ObjKind::Cell:
      if (obj != unbound().obj()) static_cast<Cell*>(obj)->value = Value();
      break;
    case ObjKind::DictView: static_cast<DictView*>(obj)->dict = {}; break;
    case ObjKind::Function: {
      auto* fn = static_cast<Function*>(obj);
      fn->globals = {};
      fn->defaults.clear();
      fn->kwdefaults = {};
      fn->closure.clear();
      fn->attrs = {};
      break;
    }
    case ObjKind::BoundMethod:
      static_cast<BoundMethod*>(obj)->self = Value();
      static_cast<BoundMethod*>(obj)->func = Value();
      break;
    case ObjKind::Builtin:
      static_cast<Builtin*>(obj)->self = Value();
      static_cast<Builtin*>(obj)->fn = nullptr;  // its closure may hold objects
      break;
    case ObjKind::Class:
      static_cast<Class*>(obj)->base = {};
      static_cast<Class*>(obj)->dict = make<Dict>();
      break;
    case ObjKind::Instance: static_cast<Instance*>(obj)->dict = make<Dict>(); break;
    case ObjKind::Module: static_cast<Module*>(obj)->dict = make<Dict>(); break;
    case ObjKind::Tensor: static_cast<TensorObj*>(obj)->grad = Value(); break;
    case ObjKind::Iterator: static_cast<IteratorObj*>(obj)->next = nullptr; break;
    case ObjKind::Slice: {
      auto* s = static_cast<SliceObj*>(obj);
      s->start = s->stop = s->step = Value();
      break;
    }
    case ObjKind::Super: static_cast<SuperObj*>(obj)->self = Value(); break;
    default: break;
  }
}

}  // namespace

// Reference counting never frees a cycle (a function and the module dict that
// holds it, a class and its methods, `a.append(a)`), so before its members go
// the VM empties every object it can reach from its modules, builtins and
// types. Emptying them one by one also keeps deeply nested data from being
// freed by deep recursion.
VM::~VM() {
  std::vector<Value> reached;
  std::unordered_set<Object*> seen;
  auto visit = [&](const Value& v) {
    if (v.is_obj() && seen.insert(v.obj()).second) reached.push_back(v);
  };
  for (const auto& [_, m] : modules_) visit(Value(m));
  visit(Value(builtins_));
  for (const auto& [_, cls] : builtin_types_) visit(Value(cls));
  for (size_t i = 0; i < reached.size(); ++i) for_each_child(reached[i].obj(), visit);
  for (const Value& v : reached) clear_children(v.obj());
}

void VM::write_out(std::string_view text) {
  if (options_.out) options_.out(text);
  else std::fwrite(text.data(), 1, text.size(), stdout);
}

void VM::write_err(std::string_view text) {
  if (options_.err) options_.err(text);
  else std::fwrite(text.data(), 1, text.size(), stderr);
}

Ref<Module> VM::module(std::string_view dotted) {
  auto it = modules_.find(dotted);
  if (it != modules_.end()) return it->second;
  std::function<void(VM&)> install;
  if (auto lazy = lazy_modules_.find(dotted); lazy != lazy_modules_.end()) {
    install = std::move(lazy->second);
    lazy_modules_.erase(lazy);
  } else if (is_stdlib_module(dotted)) {
    install = [name = std::string(dotted)](VM& vm) { load_stdlib_module(vm, name); };
  } else {
    return {};
  }
  // The prelude is library code: capture must not see its frames, and its
  // steps are not the program's (as the preludes run at start-up are not).
  FrameHook* hook = frame_hook;
  Tracer* tr = tracer;
  const int64_t steps = steps_;
  steps_ = 0;
  frame_hook = nullptr;
  tracer = nullptr;
  try {
    install(*this);
  } catch (...) {
    frame_hook = hook;
    tracer = tr;
    steps_ = steps;
    throw;
  }
  frame_hook = hook;
  tracer = tr;
  steps_ = steps;
  it = modules_.find(dotted);
  return it == modules_.end() ? Ref<Module>() : it->second;
}

void VM::add_module(Ref<Module> m) { modules_[m->name] = m; }

void VM::add_lazy_module(std::string name, std::function<void(VM&)> install) {
  lazy_modules_[std::move(name)] = std::move(install);
}

Ref<Class> VM::builtin_type(std::string_view name) const {
  auto it = builtin_types_.find(name);
  return it == builtin_types_.end() ? Ref<Class>() : it->second;
}

Value const_value(const Const& c) {
  switch (c.kind) {
    case Const::Kind::None: return Value();
    case Const::Kind::Bool: return Value(c.b);
    case Const::Kind::Int: return Value(c.i);
    case Const::Kind::BigInt: return int_parse(c.s, 0);
    case Const::Kind::Float: return Value(c.f);
    case Const::Kind::Str: return str_value(c.s);
    case Const::Kind::Ellipsis: return ellipsis();
    case Const::Kind::Code: return Value(make<CodeObj>(c.code));
    case Const::Kind::Tuple: {
      ValueVec items;
      for (const Const& x : c.items) items.push_back(const_value(x));
      return tuple_value(std::move(items));
    }
  }
  return Value();
}

std::shared_ptr<ValueVec> VM::consts_of(const CodePtr& code) {
  auto it = consts_cache_.find(code.get());
  if (it != consts_cache_.end()) return it->second.second;
  auto values = std::make_shared<ValueVec>();
  for (const Const& c : code->consts) values->push_back(const_value(c));
  consts_cache_[code.get()] = {code, values};
  return values;
}

// ---- running programs ----

Status VM::run_file(const std::string& path, int* exit_code) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (exit_code) *exit_code = 3;
    return Status::error("cannot open program file", {path, 0});
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return run_source(buf.str(), path, exit_code);
}

namespace {
void mark_in_program(Code& code) {
  code.in_program = true;
  for (const Const& c : code.consts)
    if (c.kind == Const::Kind::Code && c.code) mark_in_program(*c.code);
}
}  // namespace

Status VM::run_source(std::string_view source, const std::string& filename, int* exit_code) {
  if (exit_code) *exit_code = 0;
  Expected<CodePtr> code = compile_module(source, filename);
  if (!code.ok()) {
    if (exit_code) *exit_code = 3;
    return code.status();
  }
  mark_in_program(**code);
  auto main = make<Module>("__main__");
  main->dict->set(str_value("__name__"), str_value("__main__"));
  main->dict->set(str_value("__file__"), str_value(filename));
  add_module(main);
  Frame frame;
  frame.code = code.value().get();
  frame.consts = consts_of(code.value()).get();
  frame.globals = main->dict;
  frame.ns = main->dict;
  try {
    run_frame(frame);
  } catch (PyError& e) {
    if (const Value* exit = builtins_->find_str("SystemExit"); exit && is_exception(e.value) &&
                                                               e.value.as<Instance>()->cls->is_subclass_of(exit->as<Class>())) {
      // sys.exit(): no traceback; an int is the exit status, anything else is printed and exits 1.
      Value code;
      try_getattr(e.value, "code", code);
      int status = code.is_none() ? 0 : code.is_int() || code.is_bool() ? int(code.as_int() & 0xFF) : 1;
      if (code.is_bool()) status = code.as_bool() ? 1 : 0;
      if (!code.is_none() && !code.is_int() && !code.is_bool()) write_err(str_of(code) + "\n");
      if (exit_code) *exit_code = status;
      if (status == 0) return {};
      return Status::error("SystemExit: " + std::to_string(status), e.where);
    }
    write_err(format_exception(e));
    if (exit_code) *exit_code = e.unsupported() ? 3 : 1;
    return Status::error(e.type() + ": " + e.message(), e.where);
  }
  return {};
}

// ---- frames ----

void VM::bind_frame(Frame& frame, Function* fn, const CallArgs& args) {
  const Code& code = *fn->code;
  frame.func = fn;
  frame.code = &code;
  if (!fn->consts) fn->consts = consts_of(fn->code);
  frame.consts = fn->consts.get();
  frame.globals = fn->globals;
  frame.locals.assign(code.varnames.size(), unbound());
  frame.stack.reserve(16);
  const size_t nparams = size_t(code.argcount);
  // CPython 3.10+ names the function by its qualified name in these errors ("C.b() takes ...").
  const std::string& name = fn->qualname.empty() ? fn->name : fn->qualname;
  size_t npos = std::min(args.npos, nparams);
  for (size_t i = 0; i < npos; ++i) frame.locals[i] = args.pos[i];
  size_t slot = nparams + size_t(code.kwonlyargcount);
  if (code.has_varargs) {
    ValueVec extra;
    for (size_t i = npos; i < args.npos; ++i) extra.push_back(args.pos[i]);
    frame.locals[slot++] = tuple_value(std::move(extra));
  } else if (args.npos > nparams) {
    const size_t ndefaults = std::min(fn->defaults.size(), nparams);
    const std::string takes = ndefaults ? "from " + std::to_string(nparams - ndefaults) + " to " + std::to_string(nparams) +
                                              " positional arguments"
                                        : std::to_string(nparams) + " positional argument" + (nparams == 1 ? "" : "s");
    throw_type_error(name + "() takes " + takes + " but " + std::to_string(args.npos) +
                     (args.npos == 1 ? " was" : " were") + " given");
  }
  Ref<Dict> varkw;
  if (code.has_varkw) {
    varkw = make<Dict>();
    frame.locals[slot] = Value(varkw);
  }
  if (args.kw) {
    for (const auto& [key, value] : *args.kw) {
      size_t nnamed = nparams + size_t(code.kwonlyargcount);
      size_t i = 0;
      for (; i < nnamed; ++i)
        if (code.varnames[i] == key) break;
      if (i == nnamed) {
        if (!varkw) throw_type_error(name + "() got an unexpected keyword argument '" + key + "'");
        varkw->set(str_value(key), value);
        continue;
      }
      if (!is_unbound(frame.locals[i])) throw_type_error(name + "() got multiple values for argument '" + key + "'");
      frame.locals[i] = value;
    }
  }
  size_t ndefaults = fn->defaults.size();
  std::vector<std::string> missing;
  for (size_t i = 0; i < nparams; ++i) {
    if (!is_unbound(frame.locals[i])) continue;
    if (i + ndefaults >= nparams) frame.locals[i] = fn->defaults[i + ndefaults - nparams];
    else missing.push_back(code.varnames[i]);
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i) {
      if (i) list += i + 1 == missing.size() ? (missing.size() > 2 ? ", and " : " and ") : ", ";
      list += "'" + missing[i] + "'";
    }
    throw_type_error(name + "() missing " + std::to_string(missing.size()) + " required positional argument" +
                     (missing.size() == 1 ? "" : "s") + ": " + list);
  }
  for (size_t i = nparams; i < nparams + size_t(code.kwonlyargcount); ++i) {
    if (!is_unbound(frame.locals[i])) continue;
    const Value* d = fn->kwdefaults ? fn->kwdefaults->find_str(code.varnames[i]) : nullptr;
    if (!d) throw_type_error(name + "() missing 1 required keyword-only argument: '" + code.varnames[i] + "'");
    frame.locals[i] = *d;
  }
  frame.cells.clear();
  for (const std::string& cv : code.cellvars) {
    auto cell = make<Cell>();
    for (size_t i = 0; i < code.varnames.size(); ++i)
      if (code.varnames[i] == cv && !is_unbound(frame.locals[i])) {
        cell->value = frame.locals[i];
        cell->bound = true;
      }
    frame.cells.push_back(cell);
  }
  for (const Ref<Cell>& c : fn->closure) frame.cells.push_back(c);
}

Value VM::run_frame(Frame& frame) {
  if (depth_ >= options_.max_depth || stack_nearly_full()) throw PyError("RecursionError", "maximum recursion depth exceeded");
  ++depth_;
  frame.parent = current_frame;
  current_frame = &frame;
  struct Leave {
    VM& vm;
    Frame& frame;
    ~Leave() {
      --vm.depth_;
      vm.current_frame = frame.parent;
    }
  } leave{*this, frame};
  Value result;
  for (;;) {
    // Each error becomes a PyError, which a handler of this frame may catch;
    // otherwise it leaves the frame with the frame's line in its traceback.
    try {
      while (!step(frame, result)) {
      }
      return result;
    } catch (PyError& e) {
      if (handle_exception(frame, e)) continue;
      if (!frame.code->handled_ranges.empty() && !e.uncatchable()) note_context(exception_value(e));
      rethrow_with_location(e, frame);
    } catch (const std::bad_alloc&) {
      // Out of memory (or over the fuzzer's heap budget) is the program's error,
      // as CPython's MemoryError, not the interpreter's.
      PyError e("MemoryError", "out of memory");
      if (handle_exception(frame, e)) continue;
      raise_with_location(e, frame);
    } catch (const std::length_error&) {  // a container over max_size()
      PyError e("MemoryError", "out of memory");
      if (handle_exception(frame, e)) continue;
      raise_with_location(e, frame);
    } catch (const Error& e) {
      // A user error from the tensor library that no binding converted.
      PyError pe("RuntimeError", e.what());
      if (handle_exception(frame, pe)) continue;
      raise_with_location(pe, frame);
    }
  }
}

namespace {

void add_location(PyError& e, const Frame& frame) {
  int pc = std::min<int>(frame.pc, int(frame.code->code.size()) - 1);
  const Instr& in = frame.code->code[std::max(pc, 0)];
  std::string where = "  File \"" + frame.code->filename + "\", line " + std::to_string(in.line) + ", in " +
                      frame.code->name + "\n";
  if (std::string text = source_line(*frame.code, in.line); !text.empty()) where += "    " + text + "\n";
  e.traceback.insert(e.traceback.begin(), where);
  if (e.where.file.empty() || (!e.where_in_program && frame.code->in_program)) {
    e.where = SourceLocation{frame.code->filename, in.line, in.col};
    e.where_in_program = frame.code->in_program;
  }
}


}  // namespace

void VM::rethrow_with_location(PyError& e, Frame& frame) {
  if (e.recorded_frame != &frame) add_location(e, frame);
  e.recorded_frame = nullptr;
  throw;
}

void VM::raise_with_location(PyError e, Frame& frame) {
  if (e.recorded_frame != &frame) add_location(e, frame);
  e.recorded_frame = nullptr;
  throw e;
}

bool VM::handle_exception(Frame& frame, PyError& e) {
  if (e.uncatchable() || !frame.code) return false;
  const ExceptEntry* h = frame.code->handler_at(frame.pc);
  if (!h || size_t(h->depth) > frame.stack.size()) return false;
  if (e.recorded_frame != &frame) add_location(e, frame);
  Value exc = exception_value(e);
  if (!is_exception(exc)) return false;
  note_context(exc);
  Instance* inst = exc.as<Instance>();
  auto record = std::make_shared<PyError>(e);
  record->value = Value();  // the record lives in the exception: no cycle
  record->recorded_frame = nullptr;
  inst->raised = std::move(record);
  frame.stack.resize(size_t(h->depth));
  frame.stack.push_back(exc);
  frame.pc = h->target;
  return true;
}

Value VM::call_function(Function* fn, const CallArgs& args) {
  if (fn->code->is_generator) return make_generator(fn, args);
  Frame frame;
  bind_frame(frame, fn, args);
  Value result;
  if (frame_hook) {
    // Frames the hook runs itself (capture tracing or replaying them) never
    // reach run_frame, so recursion through a compiled function counts here.
    if (depth_ >= options_.max_depth || stack_nearly_full()) throw PyError("RecursionError", "maximum recursion depth exceeded");
    ++depth_;
    bool handled = false;
    try {
      handled = frame_hook->run_frame(*this, frame, result);
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    if (handled) return result;
  }
  return run_frame(frame);
}

namespace {

// `self` followed by the call's positional arguments: how bound methods,
// __init__ and __call__ receive their receiver.
ValueVec with_self(const Value& self, const CallArgs& args) {
  ValueVec out;
  out.reserve(args.npos + 1);
  out.push_back(self);
  out.insert(out.end(), args.pos, args.pos + args.npos);
  return out;
}

}  // namespace

Value VM::call(const Value& callable, ValueVec args, KwVec kwargs) {
  CallArgs a{args.data(), args.size(), kwargs.empty() ? nullptr : &kwargs};
  return call(callable, a);
}

Value VM::call(const Value& callable, const CallArgs& args) {
  if (!callable.is_obj()) throw_type_error("'" + type_name(callable) + "' object is not callable");
  switch (callable.obj()->kind) {
    case ObjKind::Function: return call_function(callable.as<Function>(), args);
    case ObjKind::Builtin: {
      Builtin* b = callable.as<Builtin>();
      if (!b->has_self) return b->fn(*this, args);
      ValueVec receiver_args = with_self(b->self, args);
      return b->fn(*this, CallArgs{receiver_args.data(), receiver_args.size(), args.kw});
    }
    case ObjKind::BoundMethod: {
      BoundMethod* m = callable.as<BoundMethod>();
      ValueVec receiver_args = with_self(m->self, args);
      return call(m->func, CallArgs{receiver_args.data(), receiver_args.size(), args.kw});
    }
    case ObjKind::Class: {
      Class* cls = callable.as<Class>();
      // Builtin types construct through their "__new__" builtin; user classes
      // through an Instance and __init__.
      if (cls->builtin >= 0 || cls->dict->find_str("__new__")) {
        const Value* ctor = cls->lookup("__new__");
        if (!ctor) throw_type_error("cannot create '" + cls->name + "' instances");
        return call(*ctor, args);
      }
      for (const Class* c = cls; c; c = c->base.get())
        if (c->builtin >= 0) throw_unsupported("classes derived from builtin type '" + c->name + "'");
      auto inst = make<Instance>(Ref<Class>(cls));
      Value self(inst);
      if (base_exception_ && cls->is_subclass_of(base_exception_.get()))
        inst->dict->set(str_value("args"), tuple_value(ValueVec(args.pos, args.pos + args.npos)));
      if (const Value* init = cls->lookup("__init__")) {
        ValueVec receiver_args = with_self(self, args);
        Value r = call(*init, CallArgs{receiver_args.data(), receiver_args.size(), args.kw});
        if (!r.is_none()) throw_type_error("__init__() should return None, not '" + type_name(r) + "'");
      } else if (args.npos || args.has_kwargs()) {
        throw_type_error(cls->name + "() takes no arguments");
      }
      return self;
    }
    case ObjKind::Instance: {
      Instance* inst = callable.as<Instance>();
      const Value* fn = inst->cls->lookup("__call__");
      if (!fn) break;
      ValueVec receiver_args = with_self(callable, args);
      return call(*fn, CallArgs{receiver_args.data(), receiver_args.size(), args.kw});
    }
    case ObjKind::NoGrad: {
      // Builtin objects with a __call__ in their type (torch.no_grad() used as a decorator).
      Ref<Class> cls = type_of(callable);
      const Value* fn = cls ? cls->lookup("__call__") : nullptr;
      if (!fn) break;
      ValueVec receiver_args = with_self(callable, args);
      return call(*fn, CallArgs{receiver_args.data(), receiver_args.size(), args.kw});
    }
    default: break;
  }
  throw_type_error("'" + type_name(callable) + "' object is not callable");
}

Value VM::build_class(const Value& body, const std::string& name, ValueVec bases, const Dict* keywords) {
  if (bases.size() > 1) throw_unsupported("multiple inheritance (class " + name + ")");
  Ref<Class> base;
  if (!bases.empty()) {
    if (!bases[0].is(ObjKind::Class)) throw_type_error("class " + name + ": base is not a class but " + type_name(bases[0]));
    base = Ref<Class>(bases[0].as<Class>());
    // `class X(object)` is `class X`: object's methods are every class's fallbacks.
    if (base->builtin >= 0 && base->name == "object") base = Ref<Class>();
  }
  auto cls = make<Class>(name, base);
  Function* fn = body.as<Function>();
  cls->qualname = fn->qualname;
  if (const Value* module = fn->globals ? fn->globals->find_str("__name__") : nullptr; module && module->is(ObjKind::Str))
    cls->module = module->as<Str>()->s;
  Frame frame;
  bind_frame(frame, fn, CallArgs{});
  frame.ns = cls->dict;
  run_frame(frame);
  cls->has_property = base && base->has_property;
  cls->dict->for_each([&](const Value&, const Value& v) {
    if (v.is(ObjKind::Function)) v.as<Function>()->owner = cls.get();
    // A method wrapped by staticmethod/classmethod still needs its class for super().
    const Descriptor kind = descriptor_kind(v);
    if (kind == Descriptor::None) return;
    if (const Value* fn = v.as<Instance>()->dict->find_str(kind == Descriptor::Property ? "fget" : "__func__");
        fn && fn->is(ObjKind::Function))
      fn->as<Function>()->owner = cls.get();
    if (is_data_descriptor(kind)) cls->has_property = true;
  });
  // As CPython, the nearest base's __init_subclass__ (an implicit classmethod)
  // sees each new subclass, with the class keywords: enum.Enum makes its
  // members there, typing.TypedDict reads total=.
  std::vector<std::pair<std::string, Value>> kw;
  if (keywords)
    keywords->for_each([&](const Value& key, const Value& v) { kw.emplace_back(as_str(key), v); });
  const Value* hook = base ? base->lookup("__init_subclass__") : nullptr;
  if (hook) {
    const Value self(cls);
    call(*hook, CallArgs{&self, 1, &kw});
  } else if (!kw.empty()) {
    throw_type_error(name + ".__init_subclass__() takes no keyword arguments");
  }
  return Value(cls);
}

// ---- the instruction loop ----

namespace {

bool in_annotation(const Code& code, int pc) {
  for (const auto& [start, end] : code.annotation_spans)
    if (pc >= start && pc < end) return true;
  return false;
}

}  // namespace

bool VM::step(Frame& f, Value& result) {
  charge_step();
  const Instr& in = f.code->code[size_t(f.pc)];
  const int arg = in.arg;
  switch (in.op) {
    case Op::Nop: break;
    case Op::PopTop: f.stack.pop_back(); break;
    case Op::DupTop: f.stack.push_back(top(f)); break;
    case Op::DupTopTwo: {
      Value a = top(f, 1), b = top(f);
      f.stack.push_back(std::move(a));
      f.stack.push_back(std::move(b));
      break;
    }
    case Op::RotTwo: std::swap(top(f), top(f, 1)); break;
    case Op::RotThree: {
      Value t = std::move(top(f));
      top(f) = std::move(top(f, 1));
      top(f, 1) = std::move(top(f, 2));
      top(f, 2) = std::move(t);
      break;
    }
    case Op::RotFour: {
      Value t = std::move(top(f));
      top(f) = std::move(top(f, 1));
      top(f, 1) = std::move(top(f, 2));
      top(f, 2) = std::move(top(f, 3));
      top(f, 3) = std::move(t);
      break;
    }
    case Op::LoadConst: f.stack.push_back((*f.consts)[size_t(arg)]); break;
    case Op::LoadFast: {
      const Value& v = f.locals[size_t(arg)];
      if (is_unbound(v))
        throw PyError("UnboundLocalError", "cannot access local variable '" + f.code->varnames[size_t(arg)] +
                                               "' where it is not associated with a value");
      f.stack.push_back(v);
      break;
    }
    case Op::StoreFast: f.locals[size_t(arg)] = pop(f); break;
    case Op::DeleteFast: {
      if (is_unbound(f.locals[size_t(arg)])) name_error(f.code->varnames[size_t(arg)]);
      f.locals[size_t(arg)] = unbound();
      break;
    }
    case Op::LoadDeref: {
      Cell* c = f.cells[size_t(arg)].get();
      if (!c->bound) {
        size_t ncell = f.code->cellvars.size();
        const std::string& n = size_t(arg) < ncell ? f.code->cellvars[size_t(arg)] : f.code->freevars[size_t(arg) - ncell];
        throw PyError("NameError", "cannot access free variable '" + n + "' where it is not associated with a value in enclosing scope");
      }
      f.stack.push_back(c->value);
      break;
    }
    case Op::StoreDeref: {
      Cell* c = f.cells[size_t(arg)].get();
      // A free variable's cell outlives the call (`nonlocal n; n += 1`).
      if (size_t(arg) >= f.code->cellvars.size()) note_mutation(*this, Value(f.cells[size_t(arg)]));
      c->value = pop(f);
      c->bound = true;
      break;
    }
    case Op::LoadClosure: f.stack.push_back(Value(f.cells[size_t(arg)])); break;
    case Op::LoadGlobal: {
      const std::string& n = f.code->names[size_t(arg)];
      const Value* v = f.globals->find_str(n);
      if (!v) v = builtins_->find_str(n);
      if (!v) name_error(n);
      f.stack.push_back(*v);
      break;
    }
    case Op::StoreGlobal: note_mutation(*this, Value(f.globals)); f.globals->set(str_value(f.code->names[size_t(arg)]), pop(f)); break;
    case Op::LoadName: {
      const std::string& n = f.code->names[size_t(arg)];
      const Value* v = f.ns ? f.ns->find_str(n) : nullptr;
      if (!v) v = f.globals->find_str(n);
      if (!v) v = builtins_->find_str(n);
      if (!v) name_error(n);
      f.stack.push_back(*v);
      break;
    }
    case Op::StoreName: {
      Value v = pop(f);
      (f.ns ? f.ns : f.globals)->set(str_value(f.code->names[size_t(arg)]), std::move(v));
      break;
    }
    case Op::LoadAttr: {
      Value v;
      try {
        v = getattr(top(f), f.code->names[size_t(arg)]);
      } catch (const PyError& e) {
        // torch.distributed.ProcessGroup in an annotation: its text, as a
        // forward reference (a str already is one: torch.types.Number).
        const Value& obj = top(f);
        if (!(e.unsupported() || obj.is(ObjKind::Str)) || !in_annotation(*f.code, f.pc)) throw;
        if (obj.is(ObjKind::Str)) {
          v = str_value(obj.as<Str>()->s + "." + f.code->names[size_t(arg)]);
          top(f) = std::move(v);
          break;
        }
        std::string base = obj.is(ObjKind::Module) ? obj.as<Module>()->name : type_name(obj);
        v = str_value(base + "." + f.code->names[size_t(arg)]);
      }
      top(f) = std::move(v);
      break;
    }
    case Op::StoreAttr: {
      setattr(top(f), f.code->names[size_t(arg)], top(f, 1));
      pop_n(f, 2);
      break;
    }
    case Op::BinarySubscr: {
      Value v = getitem(top(f, 1), top(f));
      pop_n(f, 2);
      f.stack.push_back(std::move(v));
      break;
    }
    case Op::StoreSubscr: {
      setitem(top(f, 1), top(f), top(f, 2));
      pop_n(f, 3);
      break;
    }
    case Op::DeleteSubscr: {
      delitem(top(f, 1), top(f));
      pop_n(f, 2);
      break;
    }
    case Op::DeleteAttr: {
      delattr(top(f), f.code->names[size_t(arg)]);
      pop_n(f, 1);
      break;
    }
    case Op::BuildSlice: {
      Value step = arg == 3 ? top(f) : Value();
      Value stop = top(f, arg == 3 ? 1 : 0);
      Value start = top(f, arg == 3 ? 2 : 1);
      pop_n(f, size_t(arg));
      f.stack.push_back(Value(make<SliceObj>(std::move(start), std::move(stop), std::move(step))));
      break;
    }
    case Op::BinaryOp:
    case Op::InplaceOp: {
      Value v = binary(BinaryOpKind(arg), top(f, 1), top(f), in.op == Op::InplaceOp);
      pop_n(f, 2);
      f.stack.push_back(std::move(v));
      break;
    }
    case Op::UnaryOp: {
      Value v = UnaryOpKind(arg) == UnaryOpKind::Not ? Value(!truth(top(f))) : unary(UnaryOpKind(arg), top(f));
      top(f) = std::move(v);
      break;
    }
    case Op::CompareOp: {
      Value v = compare(CompareKind(arg), top(f, 1), top(f));
      pop_n(f, 2);
      f.stack.push_back(std::move(v));
      break;
    }
    case Op::Jump: f.pc = arg; return false;
    case Op::PopJumpIfFalse:
    case Op::PopJumpIfTrue: {
      bool t = truth(top(f));
      f.stack.pop_back();
      if (t == (in.op == Op::PopJumpIfTrue)) {
        f.pc = arg;
        return false;
      }
      break;
    }
    case Op::JumpIfFalseOrPop:
    case Op::JumpIfTrueOrPop: {
      bool t = truth(top(f));
      if (t == (in.op == Op::JumpIfTrueOrPop)) {
        f.pc = arg;
        return false;
      }
      f.stack.pop_back();
      break;
    }
    case Op::GetIter: {
      Value it = iter(top(f));
      top(f) = std::move(it);
      break;
    }
    case Op::ForIter: {
      Value v;
      if (next_item(top(f), v)) {
        f.stack.push_back(std::move(v));
      } else {
        f.stack.pop_back();
        f.pc = arg;
        return false;
      }
      break;
    }
    case Op::BuildTuple:
    case Op::BuildList: {
      ValueVec items(std::make_move_iterator(f.stack.end() - arg), std::make_move_iterator(f.stack.end()));
      pop_n(f, size_t(arg));
      f.stack.push_back(in.op == Op::BuildTuple ? tuple_value(std::move(items)) : list_value(std::move(items)));
      break;
    }
    case Op::BuildMap: {
      auto d = make<Dict>();
      for (size_t i = f.stack.size() - size_t(2 * arg); i < f.stack.size(); i += 2) d->set(f.stack[i], f.stack[i + 1]);
      pop_n(f, size_t(2 * arg));
      f.stack.push_back(Value(d));
      break;
    }
    case Op::BuildString: {
      std::string s;
      for (size_t i = f.stack.size() - size_t(arg); i < f.stack.size(); ++i) s += as_str(f.stack[i]);
      pop_n(f, size_t(arg));
      f.stack.push_back(str_value(std::move(s)));
      break;
    }
    case Op::ListAppend: {
      Value v = pop(f);
      top(f, size_t(arg) - 1).as<List>()->items.push_back(std::move(v));
      break;
    }
    case Op::ListExtend: {
      ValueVec items = unpack_items(*this, top(f));
      f.stack.pop_back();
      auto& list = top(f, size_t(arg) - 1).as<List>()->items;
      list.insert(list.end(), items.begin(), items.end());
      break;
    }
    case Op::ListToTuple: {
      Value t = tuple_value(top(f).as<List>()->items);
      top(f) = std::move(t);
      break;
    }
    case Op::DictUpdate: {
      Value m = top(f);
      Dict* target = top(f, size_t(arg)).as<Dict>();
      if (!m.is(ObjKind::Dict)) throw_type_error("argument after ** must be a mapping, not " + type_name(m));
      m.as<Dict>()->for_each([&](const Value& k, const Value& v) { target->set(k, v); });
      f.stack.pop_back();
      break;
    }
    case Op::MapAdd: {
      Value value = pop(f);
      Value key = pop(f);
      top(f, size_t(arg) - 1).as<Dict>()->set(key, std::move(value));
      break;
    }
    case Op::UnpackSequence: {
      ValueVec items = unpack_items(*this, top(f));
      if (items.size() != size_t(arg)) {
        if (items.size() < size_t(arg))
          throw PyError("ValueError", "not enough values to unpack (expected " + std::to_string(arg) + ", got " +
                                          std::to_string(items.size()) + ")");
        throw PyError("ValueError", "too many values to unpack (expected " + std::to_string(arg) + ")");
      }
      f.stack.pop_back();
      for (size_t i = items.size(); i-- > 0;) f.stack.push_back(std::move(items[i]));
      break;
    }
    case Op::UnpackEx: {
      size_t before = size_t(arg & 0xff), after = size_t(arg >> 8);
      ValueVec items = unpack_items(*this, top(f));
      if (items.size() < before + after)
        throw PyError("ValueError", "not enough values to unpack (expected at least " + std::to_string(before + after) +
                                        ", got " + std::to_string(items.size()) + ")");
      f.stack.pop_back();
      for (size_t i = 0; i < after; ++i) f.stack.push_back(items[items.size() - 1 - i]);
      f.stack.push_back(list_value(ValueVec(items.begin() + long(before), items.end() - long(after))));
      for (size_t i = before; i-- > 0;) f.stack.push_back(items[i]);
      break;
    }
    case Op::FormatValue: {
      std::string spec = (arg & 4) ? as_str(top(f)) : std::string();
      const Value& v = top(f, (arg & 4) ? 1 : 0);
      std::string s;
      int conv = arg & 3;
      if (conv == 1) s = format_value(*this, str_value(str_of(v)), spec);
      else if (conv == 2) s = format_value(*this, str_value(repr_of(v)), spec);
      else if (conv == 3) s = format_value(*this, str_value(ascii_of(repr_of(v))), spec);
      else s = format_value(*this, v, spec);
      pop_n(f, (arg & 4) ? 2 : 1);
      f.stack.push_back(str_value(std::move(s)));
      break;
    }
    case Op::Call: {
      size_t n = size_t(arg);
      const Value& fn = top(f, n);
      Value r = call(fn, CallArgs{f.stack.data() + f.stack.size() - n, n, nullptr});
      pop_n(f, n + 1);
      f.stack.push_back(std::move(r));
      break;
    }
    case Op::CallKw: {
      const ValueVec& names = top(f).as<Tuple>()->items;
      size_t n = size_t(arg), nkw = names.size();
      KwVec kw;
      kw.reserve(nkw);
      size_t base = f.stack.size() - 1 - n;
      for (size_t i = 0; i < nkw; ++i) kw.emplace_back(as_str(names[i]), f.stack[base + (n - nkw) + i]);
      Value r = call(f.stack[base - 1], CallArgs{f.stack.data() + base, n - nkw, &kw});
      pop_n(f, n + 2);
      f.stack.push_back(std::move(r));
      break;
    }
    case Op::CallEx: {
      bool has_kw = arg & 1;
      KwVec kw;
      if (has_kw) {
        const Value& d = top(f);
        if (!d.is(ObjKind::Dict)) throw_type_error("argument after ** must be a mapping, not " + type_name(d));
        d.as<Dict>()->for_each([&](const Value& k, const Value& v) {
          if (!k.is(ObjKind::Str)) throw_type_error("keywords must be strings");
          kw.emplace_back(k.as<Str>()->s, v);
        });
      }
      const Value& posv = top(f, has_kw ? 1 : 0);
      ValueVec pos = unpack_items(*this, posv);
      const Value& fn = top(f, has_kw ? 2 : 1);
      Value r = call(fn, CallArgs{pos.data(), pos.size(), &kw});
      pop_n(f, has_kw ? 3 : 2);
      f.stack.push_back(std::move(r));
      break;
    }
    case Op::MakeFunction: {
      auto fn = make<Function>();
      size_t d = 0;
      fn->code = top(f).as<CodeObj>()->code;
      ++d;
      if (arg & 8) {
        for (const Value& c : top(f, d).as<Tuple>()->items) fn->closure.push_back(Ref<Cell>(c.as<Cell>()));
        ++d;
      }
      if (arg & 4) {
        fn->attrs = make<Dict>();
        fn->attrs->set(str_value("__annotations__"), top(f, d));
        ++d;
      }
      if (arg & 2) {
        fn->kwdefaults = Ref<Dict>(top(f, d).as<Dict>());
        ++d;
      }
      if (arg & 1) {
        fn->defaults = top(f, d).as<Tuple>()->items;
        ++d;
      }
      fn->globals = f.globals;
      fn->name = fn->code->name;
      fn->qualname = fn->code->qualname;
      fn->consts = consts_of(fn->code);
      pop_n(f, d);
      f.stack.push_back(Value(fn));
      break;
    }
    case Op::BuildClass: {
      const size_t n = size_t(arg & 0xff), k = (arg & 0x100) ? 1 : 0;
      ValueVec bases(f.stack.end() - long(n + k), f.stack.end() - long(k));
      const Dict* keywords = k ? top(f).as<Dict>() : nullptr;
      Value cls = build_class(top(f, n + k + 1), as_str(top(f, n + k)), std::move(bases), keywords);
      pop_n(f, n + k + 2);
      f.stack.push_back(std::move(cls));
      break;
    }
    case Op::ReturnValue:
      result = pop(f);
      return true;
    case Op::ImportName:
    case Op::ImportModule: {
      const std::string& dotted = f.code->names[size_t(arg)];
      Ref<Module> m = module(dotted);
      if (!m)
        throw PyError("ModuleNotFoundError", "No module named '" + dotted +
                                                 "' (not in Kiln's Python subset; docs/python.md lists its modules)", true);
      if (in.op == Op::ImportName) m = module(dotted.substr(0, dotted.find('.')));
      f.stack.push_back(Value(m));
      break;
    }
    case Op::ImportFrom: {
      const std::string& n = f.code->names[size_t(arg)];
      Module* m = top(f).as<Module>();
      const Value* v = m->dict->find_str(n);
      Value out;
      if (v) out = *v;
      else if (Ref<Module> sub = module(m->name + "." + n)) out = Value(sub);
      else {
        // As getattr on a module: a name PyTorch has is Kiln's gap (exit 3,
        // and no `except ImportError` fallback takes another path than
        // PyTorch's); one PyTorch lacks is the program's own ImportError.
        // Where the names are not recorded, the gap is assumed.
        std::optional<bool> known = pytorch_has(m->name, n);
        const bool gap = known.value_or(true);
        const char* why = !gap ? "" : known ? " (PyTorch has it; not in Kiln's subset)"
                                            : " (not in Kiln's subset; docs/python.md lists what it models)";
        throw PyError("ImportError", "cannot import name '" + n + "' from '" + m->name + "'" + why, gap);
      }
      f.stack.push_back(std::move(out));
      break;
    }
    case Op::WithEnter: {
      Value ctx = top(f);
      Value exit = getattr(ctx, "__exit__");
      Value entered = call(getattr(ctx, "__enter__"), ValueVec{});
      top(f) = std::move(exit);
      f.stack.push_back(std::move(entered));
      break;
    }
    case Op::WithExit: {
      call(top(f), ValueVec{Value(), Value(), Value()});
      f.stack.pop_back();
      break;
    }
    case Op::RaiseAssert: {
      std::string msg = arg ? str_of(top(f)) : std::string();
      throw PyError("AssertionError", msg);
    }
    // The raising instructions leave the frame as it was: a handler cuts the
    // stack to its depth, and capture can run the instruction again eagerly.
    case Op::Raise:
      if (arg == 2) raise_value(top(f, 1), &top(f));
      raise_value(top(f), nullptr);
    case Op::Reraise: {
      if (arg == 0) {
        PyError e = error_for(top(f));
        e.recorded_frame = &f;
        throw e;
      }
      const Frame* in = nullptr;
      Value exc = handled_exception(&in);
      if (exc.is_none()) throw PyError("RuntimeError", "No active exception to reraise");
      PyError e = error_for(exc);
      if (in == &f) e.recorded_frame = &f;
      throw e;
    }
    case Op::CheckExcMatch: {
      const Value& classes = top(f);
      bool valid = is_exception_class(classes);
      if (classes.is(ObjKind::Tuple)) {
        valid = true;
        for (const Value& c : classes.as<Tuple>()->items) valid = valid && is_exception_class(c);
      }
      if (!valid) throw_type_error("catching classes that do not inherit from BaseException is not allowed");
      bool match = is_instance(top(f, 1), classes);
      top(f) = Value(match);
      break;
    }
    case Op::PopExcept: f.stack.pop_back(); break;
    case Op::BuildSet: {
      // The builtin class, even when a program rebinds the name `set`.
      Ref<Class> set_cls = builtin_type("set");
      if (!set_cls) throw_unsupported("set displays (Kiln's set class did not load)");
      Value items;
      if (arg < 0) {
        items = top(f);
      } else {
        items = list_value(ValueVec(f.stack.end() - arg, f.stack.end()));
      }
      Value s = call(Value(set_cls), ValueVec{items});
      pop_n(f, arg < 0 ? 1 : size_t(arg));
      f.stack.push_back(std::move(s));
      break;
    }
    case Op::Yield:
      result = pop(f);
      f.stack.push_back(Value());  // what the yield expression gives when resumed by next()
      f.yielded = true;
      ++f.pc;
      return true;
    case Op::WithExceptExit: {
      Value exc = top(f);
      Value swallowed = call(top(f, 1), ValueVec{Value(type_of(exc)), exc, Value()});
      if (!truth(swallowed)) {
        PyError e = error_for(exc);
        e.recorded_frame = &f;
        throw e;
      }
      pop_n(f, 2);
      f.pc = arg;
      return false;
    }
  }
  ++f.pc;
  return false;
}

}  // namespace kiln::py

namespace kiln::py {

// A generator is an iterator whose next() runs the function's frame, kept
// between calls, up to its next Yield. The frame runs as any other (handlers,
// tracebacks through the consumer's frames). While a region is traced, the
// tracer may take a generator over (capture inlines generator expressions);
// otherwise making or resuming one breaks the graph before it runs.
Value VM::make_generator(Function* fn, const CallArgs& args) {
  auto generator_break = [](VM& vm, const char* what) {
    BreakInfo info;
    info.reason = std::string(what) + " while tracing";
    info.explanation = "  Explanation: Kiln's capture runs generators eagerly.\n";
    vm.tracer->graph_break(vm, info);
  };
  if (tracer && !fn->code->is_genexp) generator_break(*this, "generator created");
  struct State {
    Frame frame;
    bool running = false, done = false;
  };
  auto state = std::make_shared<State>();
  bind_frame(state->frame, fn, args);
  auto it = make<IteratorObj>([this, state, generator_break](Value& out) {
    if (state->done) return false;
    if (state->running) throw PyError("ValueError", "generator already executing");
    if (tracer && !tracer->traces_generator(state->frame)) generator_break(*this, "generator resumed");
    state->running = true;
    state->frame.yielded = false;
    Value r;
    try {
      r = tracer ? tracer->resume_generator(*this, state->frame) : run_frame(state->frame);
    } catch (...) {
      state->running = false;
      state->done = true;
      state->frame.stack.clear();
      state->frame.locals.clear();
      throw;
    }
    state->running = false;
    if (!state->frame.yielded) {
      state->done = true;
      state->frame.locals.clear();
      return false;
    }
    out = std::move(r);
    return true;
  });
  it->type_name = "generator";
  Value gen(it);
  if (tracer && !tracer->generator_made(*this, gen, state->frame)) generator_break(*this, "generator created");
  return gen;
}

Value Tracer::resume_generator(VM& vm, Frame& frame) { return vm.run_frame(frame); }

}  // namespace kiln::py
