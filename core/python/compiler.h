#pragma once
// Front end of Kiln's Python subset: source text to the bytecode of code.h.
// Errors are "SyntaxError: <what>" or "unsupported construct: <name> (<why>)",
// located at file:line:column (Status::to_string prints "file:line:col: ...").
#include <string>
#include <string_view>

#include "core/python/code.h"
#include "core/util/status.h"

namespace kiln::py {

// Compiles a whole file to its module code object (is_module, name "<module>").
// Conventions the interpreter relies on, beyond code.h:
//  - Comprehensions and generator expressions run inline in the enclosing code
//    object (a generator expression is evaluated eagerly, as a list). Their
//    variables have hidden names "<comp>.x.N" (fast locals in functions,
//    LoadName/StoreName at module and class level).
//  - A class body is a function without parameters whose code has
//    is_class_body set, name = the class name and qualname = the class's
//    qualified name; it returns None.
//  - Docstrings of the module and of classes are stored as __doc__; those of
//    functions are dropped.
Expected<CodePtr> compile_module(std::string_view source, const std::string& filename);

}  // namespace kiln::py
