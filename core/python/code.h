#pragma once
// Bytecode of the Python subset: what core/python/compiler.cpp emits from the
// AST and what the interpreter (vm.cpp) and the capture (compiler/capture)
// execute. It is a stack machine in the manner of CPython's, on purpose: a graph
// break, like TorchDynamo's, happens at one instruction, and capture resumes at
// the next with the value stack and the locals as they were.
//
// Notation below: TOS is the top of stack, TOS1 the one under it; "pops a, b"
// means b was on top. Jump targets are absolute instruction indices.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::py {

enum class Op : uint8_t {
  Nop,
  // ---- stack ----
  PopTop,      // pops one value
  DupTop,      // pushes TOS again
  DupTopTwo,   // a, b -> a, b, a, b
  RotTwo,      // a, b -> b, a
  RotThree,    // a, b, c -> c, a, b   (TOS moves down two)
  RotFour,     // a, b, c, d -> d, a, b, c
  // ---- names; arg indexes the code object's table named in the comment ----
  LoadConst,   // consts[arg]
  LoadFast,    // varnames[arg]; reading an unbound local is an error naming it
  StoreFast,   // varnames[arg] = pop
  LoadDeref,   // cells[arg]: cellvars then freevars
  StoreDeref,  // cells[arg] = pop
  LoadClosure, // pushes the cell object cells[arg] itself (for MakeFunction)
  LoadGlobal,  // names[arg] in globals, then builtins; NameError otherwise
  StoreGlobal, // names[arg]
  LoadName,    // names[arg]: class-body namespace / module globals, then globals, then builtins
  StoreName,   // names[arg] in the current namespace (module or class body)
  LoadAttr,    // pops obj; pushes obj.names[arg]
  StoreAttr,   // pops value, obj (obj on top): obj.names[arg] = value
  // ---- subscripts ----
  BinarySubscr,  // pops container, key; pushes container[key]
  StoreSubscr,   // pops value, container, key (key on top): container[key] = value
  BuildSlice,    // arg = 2 or 3: pops start, stop[, step]; pushes slice
  // ---- operators: arg is a BinaryOpKind / CompareKind / UnaryOpKind ----
  BinaryOp,     // pops a, b; pushes a <op> b
  InplaceOp,    // pops a, b; pushes a <op>= b (in-place for tensors and lists)
  UnaryOp,      // pops a; pushes <op> a
  CompareOp,    // pops a, b; pushes a <cmp> b
  // ---- control flow; targets are absolute ----
  Jump,               // pc = arg
  PopJumpIfFalse,     // pops v; if not truthy(v): pc = arg
  PopJumpIfTrue,      // pops v; if truthy(v): pc = arg
  JumpIfFalseOrPop,   // if not truthy(TOS): pc = arg (TOS stays) else pop
  JumpIfTrueOrPop,    // if truthy(TOS): pc = arg (TOS stays) else pop
  GetIter,            // pops iterable; pushes an iterator over it
  ForIter,            // TOS is an iterator: push next value, or pop the iterator and pc = arg when exhausted
  // ---- containers ----
  BuildTuple,   // pops arg values; pushes a tuple of them in order
  BuildList,    // pops arg values; pushes a list
  BuildMap,     // pops 2*arg values k0, v0, k1, v1, ...; pushes a dict
  BuildString,  // pops arg strings; pushes their concatenation (f-strings)
  ListAppend,   // pops v; appends v to the list at stack depth arg (1 = new TOS) (comprehensions)
  ListExtend,   // pops iterable; extends the list at depth arg (star-unpacking in [a, *b])
  ListToTuple,  // pops a list; pushes a tuple with its items
  DictUpdate,   // pops mapping; merges it into the dict at depth arg (** in calls and literals)
  MapAdd,       // pops key, value; sets it in the dict at depth arg (dict comprehensions)
  UnpackSequence,  // pops a sequence of exactly arg items; pushes them so the first is on top
  UnpackEx,        // a, *b, c = ...: arg = before | (after << 8); pushes like UnpackSequence with the starred part as a list
  FormatValue,     // arg & 3: conversion 0 none, 1 str, 2 repr, 3 ascii; arg & 4: a format spec string is on top (popped first); pops value, pushes str
  // ---- calls ----
  Call,        // pops callable, then arg positional args (callable pushed first); pushes result
  CallKw,      // like Call, but TOS is a tuple of keyword names (a const): the last len(names) args are keyword args
  CallEx,      // arg & 1: TOS is a kwargs dict; under it a positional tuple, under it the callable
  MakeFunction,  // pops code (a Code const) then, by flags in arg, closure tuple (8), kwdefaults dict (2), defaults tuple (1) - pushed in that order before the code; pushes a function
  BuildClass,    // pops a keywords dict when arg & 0x100 (class keywords), then arg & 0xff base classes, then the class name (str), then a body function (no args) run with a fresh namespace; pushes the class
  ReturnValue,   // pops value; returns it from the frame
  // ---- modules ----
  ImportName,  // names[arg] is a dotted module name; pushes the top package (import a.b binds a) ...
  ImportModule,// ... or the named module itself (import a.b as c, from-imports use ImportFrom on it)
  ImportFrom,  // TOS is a module; pushes getattr(module, names[arg]) leaving the module on the stack
  // ---- with-statements ----
  WithEnter,   // pops ctx manager; pushes ctx.__exit__ (bound) then the result of ctx.__enter__()
  WithExit,    // pops the __exit__ bound method pushed by WithEnter and calls it with (None, None, None)
  WithExceptExit,  // a with-body's handler: pops exc, exit; calls exit(type(exc), exc, tb): pc = arg when it
                   // returns true (the exception is swallowed), else the exception propagates
  // ---- exceptions (handlers are found through Code::exception_table, not a block stack) ----
  Raise,         // arg 1: pops exc; arg 2: pops exc, cause. A class is instantiated first.
  Reraise,       // arg 0: pops exc and raises it again, its traceback kept (finally, unmatched except);
                 // arg 1: a bare `raise`: raises the exception being handled (Code::handled_ranges)
  CheckExcMatch, // pops a class or tuple of classes; TOS is the exception: pushes isinstance(exc, classes)
  PopExcept,     // pops the exception an except clause handled
  BuildSet,      // arg >= 0: pops arg values; arg -1: pops a list; pushes a set of them (the builtin set class)
  // ---- generators ----
  Yield,         // pops v; the frame suspends with v as its result (Frame::yielded), None pushed for the resume
  // ---- misc ----
  RaiseAssert, // pops message (or None when arg == 0): raises AssertionError at this instruction's location
  DeleteFast,  // unbinds varnames[arg]
  DeleteSubscr,// pops container, key: del container[key]
  DeleteAttr,  // pops obj: del obj.names[arg]
};

enum class BinaryOpKind : uint8_t { Add, Sub, Mul, TrueDiv, FloorDiv, Mod, Pow, MatMul, LShift, RShift, And, Or, Xor };
enum class UnaryOpKind : uint8_t { Neg, Pos, Not, Invert };
enum class CompareKind : uint8_t { Lt, Le, Eq, Ne, Gt, Ge, In, NotIn, Is, IsNot };

const char* op_name(Op op);
const char* binary_op_symbol(BinaryOpKind k);   // "+", "//", "@" ...
const char* compare_symbol(CompareKind k);      // "<", "in", "is not" ...

struct Instr {
  Op op = Op::Nop;
  int32_t arg = 0;
  // Source position of the expression or statement the instruction belongs to
  // (1-based line, 1-based column); every error and every graph node names it.
  int32_t line = 0;
  int32_t col = 0;
};

// A compile-time constant. Kept out of the interpreter's object model so the
// compiler does not depend on it; the VM converts each once per code object.
struct Const {
  // BigInt: an int literal past int64, kept as its text in `s` (a '-', then
  // the digits with their base prefix, as "0x1ffffffffffffffff").
  enum class Kind : uint8_t { None, Bool, Int, Float, Str, Tuple, Code, Ellipsis, BigInt };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<Const> items;      // Tuple (keyword-name tuples for CallKw, defaults are built at run time)
  std::shared_ptr<struct Code> code;
};

// A range of instructions [start, end) whose exceptions go to `target`: the
// value stack is cut to `depth` items, the exception pushed, and the frame goes
// on at `target`. Static, as CPython 3.11's exception table, so a frame has no
// block stack: capture can stop and resume it anywhere. Ranges nest; `level`
// (how many protected blocks enclose the range, itself included) picks the
// innermost of those containing an instruction.
struct ExceptEntry {
  int32_t start = 0, end = 0, target = 0, depth = 0, level = 0;
};

struct Code {
  std::string name;       // "forward", "<lambda>", "<listcomp>", "<module>", class name for class bodies
  std::string qualname;   // "Net.forward", "f.<locals>.<lambda>"
  std::string filename;   // as given to the compiler
  int firstlineno = 0;
  // Parameters are the first entries of varnames: positional (argcount, the
  // first posonly count of them... not supported: none), then keyword-only
  // (kwonlyargcount), then *args if has_varargs, then **kwargs if has_varkw.
  int argcount = 0;
  int kwonlyargcount = 0;
  bool has_varargs = false;
  bool has_varkw = false;
  bool is_class_body = false;  // names resolve through the class namespace (LoadName/StoreName)
  bool is_module = false;
  bool is_generator = false;   // calling it makes a generator that runs the frame between yields
  bool is_genexp = false;      // a generator expression's "<genexpr>" (its one argument: the first iterable's iterator)
  // The program's own code, not Kiln's Python (torch.nn, the standard library):
  // an error is located at the innermost line of the program, as a user reads it.
  bool in_program = false;
  std::vector<std::string> varnames;  // fast locals (parameters first)
  std::vector<std::string> cellvars;  // locals captured by nested functions; a parameter listed here is copied into its cell at entry
  std::vector<std::string> freevars;  // names captured from enclosing functions
  std::vector<std::string> names;     // globals, attributes, imported modules
  std::vector<Const> consts;
  std::vector<Instr> code;
  // [start, end) instruction ranges evaluating a def's annotations: a name
  // there that PyTorch has and Kiln's subset lacks becomes its text (a
  // forward reference) instead of stopping a program CPython runs.
  std::vector<std::pair<int, int>> annotation_spans;
  std::vector<ExceptEntry> exception_table;
  // Ranges inside except clauses and exception-path finally bodies: `depth` is
  // the value-stack index of the exception being handled there (what a bare
  // `raise` re-raises and what a new exception's __context__ is).
  std::vector<ExceptEntry> handled_ranges;
  // The innermost entry of `table` containing `pc`, or null.
  static const ExceptEntry* innermost(const std::vector<ExceptEntry>& table, int pc);
  const ExceptEntry* handler_at(int pc) const { return innermost(exception_table, pc); }
  // Source lines of the file (shared by all code objects of one file), for
  // "code: x = torch.sin(x)" in graph meta and for tracebacks.
  std::shared_ptr<const std::vector<std::string>> source_lines;
};

using CodePtr = std::shared_ptr<Code>;

// Line `line` (1-based) of the code's source file without its indentation, as
// tracebacks, guard comments and graph "code:" lines quote it; empty when absent.
std::string source_line(const Code& code, int line);

// Disassembly, one instruction per line ("  12 LoadFast x (line 3:9)"), for tests and `--dump-bytecode`.
std::string disassemble(const Code& code, bool recursive = true);

}  // namespace kiln::py
