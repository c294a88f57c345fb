#include "compiler/capture/fx_namespace.h"

#include <cctype>

namespace kiln::capture {

namespace {

// Python keywords, builtins.__dict__ (CPython 3.12, with site's additions) and
// the globals FX adds to every graph: names a node may not take.
const std::set<std::string>& illegal_names() {
  static const std::set<std::string> names = {
      "ArithmeticError", "AssertionError", "AttributeError", "BaseException", "BaseExceptionGroup", "BlockingIOError",
      "BrokenPipeError", "BufferError", "BytesWarning", "ChildProcessError", "ConnectionAbortedError", "ConnectionError",
      "ConnectionRefusedError", "ConnectionResetError", "DeprecationWarning", "EOFError", "Ellipsis", "EncodingWarning",
      "EnvironmentError", "Exception", "ExceptionGroup", "False", "FileExistsError", "FileNotFoundError",
      "FloatingPointError", "FutureWarning", "GeneratorExit", "IOError", "ImportError", "ImportWarning",
      "IndentationError", "IndexError", "InterruptedError", "IsADirectoryError", "KeyError", "KeyboardInterrupt",
      "LookupError", "MemoryError", "ModuleNotFoundError", "NameError", "None", "NoneType", "NotADirectoryError",
      "NotImplemented", "NotImplementedError", "OSError", "OverflowError", "PendingDeprecationWarning",
      "PermissionError", "ProcessLookupError", "RecursionError", "ReferenceError", "ResourceWarning", "RuntimeError",
      "RuntimeWarning", "StopAsyncIteration", "StopIteration", "SyntaxError", "SyntaxWarning", "SystemError",
      "SystemExit", "TabError", "TimeoutError", "True", "TypeError", "UnboundLocalError", "UnicodeDecodeError",
      "UnicodeEncodeError", "UnicodeError", "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError",
      "Warning", "ZeroDivisionError", "__build_class__", "__debug__", "__doc__", "__import__", "__loader__",
      "__name__", "__package__", "__spec__", "abs", "aiter", "all", "and", "anext", "any", "as", "ascii", "assert",
      "async", "await", "bin", "bool", "break", "breakpoint", "bytearray", "bytes", "callable", "chr", "class",
      "classmethod", "compile", "complex", "continue", "copyright", "credits", "def", "del", "delattr", "device",
      "dict", "dir", "divmod", "elif", "else", "enumerate", "eval", "except", "exec", "exit", "filter", "finally",
      "float", "for", "format", "from", "frozenset", "fx_pytree", "getattr", "global", "globals", "hasattr", "hash",
      "help", "hex", "id", "if", "import", "in", "inf", "input", "int", "is", "isinstance", "issubclass", "iter",
      "lambda", "len", "license", "list", "locals", "map", "max", "memoryview", "min", "nan", "next", "nonlocal",
      "not", "object", "oct", "open", "or", "ord", "pass", "pow", "print", "property", "pytree", "quit", "raise",
      "range", "repr", "return", "reversed", "round", "set", "setattr", "slice", "sorted", "staticmethod", "str",
      "sum", "super", "torch", "try", "tuple", "type", "vars", "while", "with", "yield", "zip"};
  return names;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// _name_regex: ^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$ -> base and the digits
// of the suffix (empty when none); false when `s` is not an identifier.
bool split_name(const std::string& s, std::string& base, std::string& digits) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!ident_char(c)) return false;
  size_t end = s.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(s[end - 1]))) --end;
  // The lazy base leaves at least one character before "_<digits>".
  if (end < s.size() && end >= 2 && s[end - 1] == '_') {
    base = s.substr(0, end - 1);
    digits = s.substr(end);
  } else {
    base = s;
    digits.clear();
  }
  return true;
}

}  // namespace

std::string FxNamespace::create_name(std::string candidate) {
  std::string base, digits;
  if (!split_name(candidate, base, digits)) {
    // Runs of characters illegal in an identifier become one underscore.
    std::string clean;
    for (size_t i = 0; i < candidate.size();) {
      if (ident_char(candidate[i])) {
        clean += candidate[i++];
        continue;
      }
      clean += '_';
      while (i < candidate.size() && !ident_char(candidate[i])) ++i;
    }
    if (clean.empty()) clean = "_unnamed";
    if (std::isdigit(static_cast<unsigned char>(clean[0]))) clean = "_" + clean;
    candidate = clean;
    split_name(candidate, base, digits);
  }
  int num;
  if (digits.empty() || used_.count(candidate)) {
    auto it = base_count_.find(candidate);
    num = it == base_count_.end() ? 0 : it->second;
    if (illegal_names().count(candidate)) candidate = base + "_" + std::to_string(++num);
  } else {
    num = digits.size() > 9 ? 0 : std::stoi(digits);
  }
  while (used_.count(candidate)) candidate = base + "_" + std::to_string(++num);
  used_.insert(candidate);
  auto it = base_count_.find(base);
  journal_.push_back({candidate, base, it != base_count_.end(), it != base_count_.end() ? it->second : 0});
  base_count_[base] = num;
  return candidate;
}

std::string FxNamespace::rename(const std::string& current, const std::string& candidate) {
  if (candidate == current) return current;
  return create_name(candidate);
}

void FxNamespace::rollback(size_t mark) {
  while (journal_.size() > mark) {
    const Made& m = journal_.back();
    used_.erase(m.name);
    if (m.had_count) base_count_[m.base] = m.old_count;
    else base_count_.erase(m.base);
    journal_.pop_back();
  }
}

}  // namespace kiln::capture
