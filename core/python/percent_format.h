#pragma once
// `fmt % args`: printf-style string formatting as CPython does it (%s %r %a
// %d %i %u %x %X %o %c %e %E %f %F %g %G, flags, '*' widths, %(key)s).
#include <string>

#include "core/python/object.h"

namespace kiln::py {

class VM;
Value percent_format(VM& vm, const std::string& fmt, const Value& args);

}  // namespace kiln::py
