#pragma once
// The interpreter: runs compiled code objects (code.h) over the object model
// (object.h). Frames are plain data (pc, value stack, locals, cells), so the
// capture in compiler/capture can stop a frame at any instruction, run a graph
// in its place, rebuild the frame's state and continue - TorchDynamo's
// "resume at the next instruction" without generating new bytecode.
#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/python/code.h"
#include "core/python/object.h"
#include "core/python/tracer.h"

namespace kiln::py {

struct Frame {
  Function* func = nullptr;        // null for module code
  const Code* code = nullptr;
  const ValueVec* consts = nullptr;
  ValueVec locals;                 // varnames
  std::vector<Ref<Cell>> cells;    // cellvars then freevars
  ValueVec stack;
  int pc = 0;
  Ref<Dict> globals;
  Ref<Dict> ns;                    // LoadName/StoreName namespace (module or class body)
  Frame* parent = nullptr;         // the calling frame, for tracebacks
  bool yielded = false;            // a generator's frame stopped at a Yield (run_frame returned the value)
  int line() const;                // line of the instruction at pc (or the last one)
};

// Intercepts calls into Python functions: what TorchDynamo's eval-frame hook is to
// CPython. Returns true and sets `result` when it ran the frame itself.
class FrameHook {
 public:
  virtual ~FrameHook() = default;
  virtual bool run_frame(VM& vm, Frame& frame, Value& result) = 0;
};

struct VMOptions {
  std::function<void(std::string_view)> out;  // where print() writes; stdout when empty
  std::function<void(std::string_view)> err;  // warnings; stderr when empty
  int64_t max_steps = 0;                      // 0 = unlimited (the fuzzer sets a budget)
  int max_depth = 1000;                       // Python frames before RecursionError (CPython's default limit)
  // Elements a tensor made by a torch call may have before RuntimeError; 0 =
  // unlimited. Bounds the time and memory of every later op (the fuzzer sets it).
  int64_t max_tensor_numel = 0;
  // Wall-clock seconds from the VM's construction before TimeoutError; 0 = unlimited.
  double time_limit_s = 0;
  // Folders a program may read files from / write files to (safetensors);
  // none by default. A write folder is readable too.
  std::vector<std::string> allow_read, allow_write;
  // Set from another thread to stop the program (the workbench's window closing):
  // checked at every instruction and backward node, and raised as an error the
  // program cannot catch.
  const std::atomic<bool>* cancel = nullptr;
  // sys.argv: the program's path and the arguments after `--` on the command
  // line. Empty: sys.argv is [the program's file name].
  std::vector<std::string> argv;
};

class VM {
 public:
  explicit VM(VMOptions options = {});
  ~VM();
  VM(const VM&) = delete;
  VM& operator=(const VM&) = delete;

  // Compiles and runs a program as __main__. Python exceptions come back as a
  // Status whose location is the innermost user line; `exit_code` is 1 for an
  // error the program raised (as python3 exits) and 3 for a syntax error or a
  // construct outside the subset.
  Status run_source(std::string_view source, const std::string& filename, int* exit_code = nullptr);
  Status run_file(const std::string& path, int* exit_code = nullptr);

  // ---- calling ----
  Value call(const Value& callable, const CallArgs& args);
  Value call(const Value& callable, ValueVec args, std::vector<std::pair<std::string, Value>> kwargs = {});
  // Sets up a frame for a Python function call (binds arguments, defaults, cells).
  void bind_frame(Frame& frame, Function* fn, const CallArgs& args);
  // Runs a frame from frame.pc until it returns.
  Value run_frame(Frame& frame);
  // Executes the instruction at frame.pc. Returns true when the frame returned
  // (its value in `result`). On an exception the frame is left as it was before
  // the instruction for every instruction that can fail after reading operands
  // (capture relies on this to resume at the failing instruction).
  bool step(Frame& frame, Value& result);
  // Counts one unit of work against VMOptions::max_steps. step() charges each
  // instruction; loops inside builtins (sum(range(10**15))) charge each item.
  void charge_step() {
    if (options_.max_steps && ++steps_ > options_.max_steps) throw PyError("RuntimeError", "step budget exhausted", true);
    // Cancel is one relaxed load per instruction: a 1024-instruction stride
    // could span dozens of multi-millisecond tensor ops (weight init).
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) check_deadline();
    if (deadline_ns_ && (++ticks_ & 0x3FF) == 0) check_deadline();
  }
  // Raises TimeoutError once the time limit has passed, KeyboardInterrupt once
  // cancel is set (builtins that loop call it too).
  void check_deadline();

  // ---- the operations of the language, for the builtins and for capture ----
  Value getattr(const Value& obj, std::string_view name);
  bool try_getattr(const Value& obj, std::string_view name, Value& out);
  void setattr(const Value& obj, std::string_view name, Value value);
  Value getitem(const Value& obj, const Value& key);
  void setitem(const Value& obj, const Value& key, Value value);
  void delitem(const Value& obj, const Value& key);
  void delattr(const Value& obj, std::string_view name);
  // `obj.name = *value` (or `del obj.name` when value is null) handled by a data
  // descriptor on the instance's class (property, or __set__ / __delete__): true if it was.
  bool descriptor_write(const Value& obj, std::string_view name, const Value* value);
  Value binary(BinaryOpKind op, const Value& a, const Value& b, bool inplace = false);
  Value unary(UnaryOpKind op, const Value& a);
  Value compare(CompareKind op, const Value& a, const Value& b);
  Value iter(const Value& v);
  bool next(const Value& iterator, Value& out);  // charges a step for the item
  bool next_item(const Value& iterator, Value& out);  // the same, uncharged
  ValueVec to_vector(const Value& iterable);  // list(iterable)
  // Wraps an instance whose class has __next__ as an iterator.
  Value instance_iterator(const Value& it);
  bool contains(const Value& container, const Value& item);
  bool is_instance(const Value& v, const Value& cls_or_tuple);
  Ref<Class> type_of(const Value& v);
  int64_t len(const Value& v);
  std::string str_of(const Value& v);   // str(v), honouring __str__/__repr__ of user classes
  std::string repr_of(const Value& v);
  bool truth(const Value& v);           // truthiness, honouring __bool__/__len__

  // ---- exceptions (exceptions.cpp) ----
  bool is_exception_class(const Value& v) const;  // a subclass of BaseException
  bool is_exception(const Value& v) const;        // an instance of one
  // The class an error of type `type` ("KeyError", "torch._dynamo.exc.Unsupported") is an instance of.
  Ref<Class> exception_class(const std::string& type);
  // The exception object of an error, made (and kept in it) on first use.
  Value exception_value(PyError& e);
  // KeyError(key), its object made at once so that e.args[0] is the key itself.
  PyError key_error(const Value& key);
  // The error that raises `exc` again with the traceback it was caught with.
  PyError error_for(const Value& exc);
  // `raise exc [from cause]`: a class is instantiated first.
  [[noreturn]] void raise_value(const Value& exc, const Value* cause);
  // The exception an except clause (or a finally run for an exception) of a
  // running frame is handling, innermost first; None when there is none.
  Value handled_exception(const Frame** in_frame = nullptr) const;
  // Sets exc.__context__ to the exception being handled, as CPython chains them.
  void note_context(const Value& exc);
  // When `frame` has a handler for its current instruction: records the frame
  // in the traceback, makes the exception object, cuts the value stack to the
  // handler's depth, pushes the exception and moves pc to the handler.
  bool handle_exception(Frame& frame, PyError& e);
  // Traceback text as CPython prints it, with the exceptions chained before it.
  std::string format_exception(const PyError& e, int chain_depth = 0);
  static std::string exception_type_name(const Class& cls);
  bool is_not_implemented(const Value& v) const;  // the NotImplemented a binary operator method returns

  // ---- descriptors (descriptors.cpp) ----
  // Get: a user class with __get__ only (a non-data descriptor: the instance's
  // own attribute wins); DataGet: with __set__ or __delete__ too (wins over it).
  enum class Descriptor : uint8_t { None, Static, ClassMethod, Property, Get, DataGet };
  Descriptor descriptor_kind(const Value& v) const;
  // Found on the class, these win over the instance's own attribute.
  static bool is_data_descriptor(Descriptor d) { return d == Descriptor::Property || d == Descriptor::DataGet; }
  // `attr`, found in the namespace of `cls`, read through `self` (an instance, or
  // None when read from the class): a staticmethod's function, a classmethod
  // bound to the class, a property's getter called, a function bound to self.
  Value bind_class_attr(const Value& self, Class* cls, const Value& attr);

  // ---- modules and builtins ----
  Ref<Module> module(std::string_view dotted);  // nullptr if the subset has no such module
  void add_module(Ref<Module> m);
  // A module made on first use (import or attribute of its parent) by `install`,
  // which must add_module it: keeps large preludes out of VM start-up.
  void add_lazy_module(std::string name, std::function<void(VM&)> install);
  Ref<Dict> builtins() const { return builtins_; }
  Ref<Class> builtin_type(std::string_view name) const;
  void register_type(const Ref<Class>& cls) { builtin_types_[cls->name] = cls; }
  void write_out(std::string_view text);
  void write_err(std::string_view text);

  // ---- state ----
  bool grad_enabled = true;
  FrameHook* frame_hook = nullptr;
  Tracer* tracer = nullptr;            // set while a frame is being captured
  Frame* current_frame = nullptr;      // innermost running frame
  const VMOptions& options() const { return options_; }
  // Converts a code object's constants to Values once.
  std::shared_ptr<ValueVec> consts_of(const CodePtr& code);
  // Arbitrary per-VM extension state (capture keeps its caches here).
  std::map<std::string, std::shared_ptr<void>> extensions;

 private:
  friend struct VMInternals;
  Value call_function(Function* fn, const CallArgs& args);
  Value make_generator(Function* fn, const CallArgs& args);
  Value build_class(const Value& body, const std::string& name, ValueVec bases, const Dict* keywords = nullptr);
  [[noreturn]] void rethrow_with_location(PyError& e, Frame& frame);
  [[noreturn]] void raise_with_location(PyError e, Frame& frame);
  VMOptions options_;
  Ref<Dict> builtins_;
  std::map<std::string, Ref<Module>, std::less<>> modules_;
  std::map<std::string, std::function<void(VM&)>, std::less<>> lazy_modules_;
  std::map<std::string, Ref<Class>, std::less<>> builtin_types_;
  Ref<Class> base_exception_;
  std::map<std::string, Ref<Class>, std::less<>> foreign_exceptions_;
  // Holds each code object too: a freed one's address may be reused by the next
  // program's code, which must not find the old constants.
  std::map<const Code*, std::pair<CodePtr, std::shared_ptr<ValueVec>>> consts_cache_;
  int depth_ = 0;
  int64_t steps_ = 0;
  int64_t deadline_ns_ = 0;  // steady clock; 0 = no time limit
  uint32_t ticks_ = 0;
};

// The path a program may open, symlinks and ".." resolved, or PermissionError
// when it lies outside the folders VMOptions allows (file_access.cpp).
// A compile-time constant as the value it stands for (tuples nested, code objects wrapped).
Value const_value(const Const& c);

std::string program_file_path(VM& vm, const std::string& path, bool write);

// Registration of the builtin namespace and of the torch modules (builtins.cpp,
// torch_module.cpp, nn prelude); called by the VM constructor.
void install_builtins(VM& vm);
void install_exceptions(VM& vm);
void install_descriptors(VM& vm);
void install_sets(VM& vm);
void install_torch(VM& vm);
// The standard-library modules (stdlib.cpp) are made when first imported, so
// that start-up does not pay for them: VM::module makes one on a miss, as it
// installs the lazy torch modules.
bool is_stdlib_module(std::string_view name);
Ref<Module> load_stdlib_module(VM& vm, std::string_view name);
// __kiln_annotate__, which records a class body's annotations (stdlib.cpp).
void install_annotate_builtin(VM& vm);

// Tells capture an object is about to change (it cannot replay such effects).
inline void note_mutation(VM& vm, const Value& obj) {
  if (vm.tracer) vm.tracer->note_mutation(vm, obj);
}

// Helpers shared by builtins and the torch bindings.
Value make_builtin(std::string name, BuiltinFn fn);
void set_attr_builtin(const Ref<Dict>& dict, const std::string& qualified, const std::string& name, BuiltinFn fn);
int64_t to_index(const Value& v, const char* what);   // int or bool, else TypeError
double to_double(const Value& v, const char* what);   // int, float or bool

// `attr` read through `self`: a function or builtin becomes a method bound to
// `self` (a builtin is copied with the new receiver); anything else is itself.
Value bind_if_function(const Value& self, const Value& attr);

}  // namespace kiln::py
