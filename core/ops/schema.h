#pragma once
// ATen function schemas as native_functions.yaml writes them:
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// parsed once at registration; call sites bind positional and keyword
// arguments against them, with defaults filled in.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ops/value.h"
#include "core/util/status.h"

namespace kiln {

struct ArgType {
  enum class Base { Tensor, Int, Float, Bool, Scalar, ScalarType, Str, Layout, Device, MemoryFormat, Generator, Any };
  Base base = Base::Any;
  bool is_list = false;    // int[], Tensor[]
  int fixed_size = 0;      // int[2]
  bool optional = false;   // int?  int[1]?  Tensor?
  bool element_optional = false;  // Tensor?[]
  std::string text;        // as written, for printing
};

struct Argument {
  std::string name;
  ArgType type;
  std::optional<Value> default_value;
  bool kwarg_only = false;
  bool is_write = false;  // Tensor(a!): the op mutates this argument
  bool is_alias = false;  // Tensor(a): the result may alias this argument
};

struct Schema {
  std::string name;      // "aten::add"
  std::string overload;  // "Tensor"; empty means "default"
  std::vector<Argument> args;
  std::vector<Argument> returns;
  std::string text;      // the schema as given
  // "aten::add.Tensor" / "aten::sin.default" as the corpus and traces name ops.
  std::string full_name() const { return name + "." + (overload.empty() ? "default" : overload); }
  int index_of(std::string_view arg) const;
};

Expected<Schema> parse_schema(std::string_view text);

using KwargList = std::vector<std::pair<std::string, Value>>;

// Values in schema order, defaults filled; a user error for missing, unknown,
// duplicate or extra arguments.
Expected<ValueList> bind_arguments(const Schema& schema, const ValueList& args, const KwargList& kwargs);

}  // namespace kiln
