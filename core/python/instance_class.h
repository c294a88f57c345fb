#pragma once
// obj.__class__ = C: the instance becomes one of C, as CPython allows between
// user classes (parametrizations and mixins swap a module's class this way).
// Anything else is CPython's TypeError, never an attribute named __class__.
#include "core/python/object.h"

namespace kiln::py {

void set_instance_class(Instance& inst, const Value& cls);

}  // namespace kiln::py
