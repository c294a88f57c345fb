#pragma once
// The one op registry, keyed by ATen's qualified name ("aten::add.Tensor").
// Each op has a schema, a meta function (output dtypes, sizes, strides; no data)
// and a CPU kernel. Ops are grouped in family files listed once in
// op_families.def; each family has register_<family>_ops(OpRegistry&).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ops/schema.h"
#include "core/ops/value.h"

namespace kiln {

// Bound arguments in schema order with typed accessors; read by meta functions and kernels.
class OpArgs {
 public:
  OpArgs(const Schema& schema, ValueList values) : schema_(&schema), values_(std::move(values)) {}
  const Schema& schema() const { return *schema_; }
  std::string op_name() const { return schema_->full_name(); }
  size_t size() const { return values_.size(); }
  const Value& operator[](size_t i) const { return values_[i]; }
  const ValueList& values() const { return values_; }

  const Tensor& tensor(size_t i) const { return values_[i].to_tensor(); }
  Tensor opt_tensor(size_t i) const { return values_[i].is_none() ? Tensor() : values_[i].to_tensor(); }
  std::vector<Tensor> tensors(size_t i) const { return values_[i].to_tensor_list(); }
  int64_t integer(size_t i) const { return values_[i].to_int(); }
  std::optional<int64_t> opt_integer(size_t i) const;
  double real(size_t i) const { return values_[i].to_double(); }
  std::optional<double> opt_real(size_t i) const;
  bool boolean(size_t i) const { return values_[i].to_bool(); }
  Scalar scalar(size_t i) const { return values_[i].to_scalar(); }
  std::optional<Scalar> opt_scalar(size_t i) const;
  // int[] arguments; `n` broadcasts a single int (int[2] kernel_size=3).
  std::vector<int64_t> ints(size_t i, size_t n = 0) const { return values_[i].to_int_list(n); }
  std::optional<std::vector<int64_t>> opt_ints(size_t i, size_t n = 0) const;
  std::optional<DType> opt_dtype(size_t i) const;
  std::string str(size_t i) const { return values_[i].to_string(); }
  std::optional<std::string> opt_str(size_t i) const;

 private:
  const Schema* schema_;
  ValueList values_;
};

using OpFn = std::function<ValueList(const OpArgs&)>;

struct OpDef {
  Schema schema;
  OpFn meta;
  OpFn cpu;
  std::string family;
};

class OpRegistry {
 public:
  // Registers an op; a bad schema or a duplicate name is a bug in Kiln (KILN_CHECK).
  void add(std::string_view schema, OpFn meta, OpFn cpu);
  const OpDef* find(std::string_view qualified_name) const;
  std::vector<const OpDef*> all() const;
  void set_family(std::string family) { family_ = std::move(family); }

 private:
  std::map<std::string, OpDef, std::less<>> ops_;
  std::string family_;
};

// The registry with every family registered (built on first use, thread-safe).
const OpRegistry& op_registry();

// Binds arguments, runs the CPU kernel (or the meta function), and turns any
// user error raised inside into a Status naming the op.
Expected<ValueList> call_op(std::string_view name, const ValueList& args, const KwargList& kwargs = {});
Expected<ValueList> call_meta(std::string_view name, const ValueList& args, const KwargList& kwargs = {});

// For kernels that reuse other ops: runs `name` and throws on failure.
ValueList invoke(std::string_view name, const ValueList& args, const KwargList& kwargs = {});
Tensor invoke_tensor(std::string_view name, const ValueList& args, const KwargList& kwargs = {});

}  // namespace kiln
