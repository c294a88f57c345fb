#pragma once
// What Kiln prints where CPython prints an object's address ("<... object at
// 0x7f...>"): the object's number, which programs cannot turn into memory.
// One format for every such repr, so masks and readers see one shape.
#include <cstdio>
#include <string>

#include "core/python/object.h"

namespace kiln::py {

inline std::string object_address(const Object& o) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(o.serial));
  return text;
}

}  // namespace kiln::py
