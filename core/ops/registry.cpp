#include "core/ops/registry.h"
#include "core/util/limits.h"

namespace kiln {

#define KILN_OP_FAMILY(name) void register_##name##_ops(OpRegistry&);
#include "core/ops/op_families.def"
#undef KILN_OP_FAMILY

std::optional<int64_t> OpArgs::opt_integer(size_t i) const {
  if (values_[i].is_none()) return std::nullopt;
  return values_[i].to_int();
}
std::optional<double> OpArgs::opt_real(size_t i) const {
  if (values_[i].is_none()) return std::nullopt;
  return values_[i].to_double();
}
std::optional<Scalar> OpArgs::opt_scalar(size_t i) const {
  if (values_[i].is_none()) return std::nullopt;
  return values_[i].to_scalar();
}
std::optional<std::vector<int64_t>> OpArgs::opt_ints(size_t i, size_t n) const {
  if (values_[i].is_none()) return std::nullopt;
  return values_[i].to_int_list(n);
}
std::optional<DType> OpArgs::opt_dtype(size_t i) const {
  if (values_[i].is_none()) return std::nullopt;
  return values_[i].to_dtype();
}
std::optional<std::string> OpArgs::opt_str(size_t i) const {
  if (values_[i].is_none()) return std::nullopt;
  return values_[i].to_string();
}

void OpRegistry::add(std::string_view schema_text, OpFn meta, OpFn cpu) {
  auto schema = parse_schema(schema_text);
  KILN_CHECK(schema.ok(), schema.status().message());
  std::string name = schema->full_name();
  KILN_CHECK(!ops_.count(name), "op registered twice: ", name);
  KILN_CHECK(meta && cpu, "op without meta function or kernel: ", name);
  ops_.emplace(name, OpDef{std::move(*schema), std::move(meta), std::move(cpu), family_});
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  if (it != ops_.end()) return &it->second;
  // "aten::sin" means "aten::sin.default".
  if (name.find('.') == std::string_view::npos) {
    it = ops_.find(std::string(name) + ".default");
    if (it != ops_.end()) return &it->second;
  }
  return nullptr;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [_, def] : ops_) out.push_back(&def);
  return out;
}

const OpRegistry& op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
#define KILN_OP_FAMILY(name) \
  r.set_family(#name);       \
  register_##name##_ops(r);
#include "core/ops/op_families.def"
#undef KILN_OP_FAMILY
    return r;
  }();
  return registry;
}

namespace {
Expected<ValueList> call(std::string_view name, const ValueList& args, const KwargList& kwargs, bool meta) {
  const OpDef* def = op_registry().find(name);
  if (!def) return Status::error("unknown op '" + std::string(name) + "'");
  auto bound = bind_arguments(def->schema, args, kwargs);
  if (!bound) return bound.status();
  try {
    OpArgs op_args(def->schema, std::move(*bound));
    return meta ? def->meta(op_args) : def->cpu(op_args);
  } catch (const Error& e) {
    return Status::error(def->schema.full_name() + ": " + e.what());
  } catch (const std::bad_alloc& e) {
    return Status::error(def->schema.full_name() + ": " + out_of_memory_text(e));
  }
}
}  // namespace

Expected<ValueList> call_op(std::string_view name, const ValueList& args, const KwargList& kwargs) {
  return call(name, args, kwargs, false);
}

Expected<ValueList> call_meta(std::string_view name, const ValueList& args, const KwargList& kwargs) {
  return call(name, args, kwargs, true);
}

ValueList invoke(std::string_view name, const ValueList& args, const KwargList& kwargs) {
  const OpDef* def = op_registry().find(name);
  KILN_CHECK(def, "invoke: unknown op ", name);
  auto bound = bind_arguments(def->schema, args, kwargs);
  if (!bound) throw Error(bound.status().message());
  return def->cpu(OpArgs(def->schema, std::move(*bound)));
}

Tensor invoke_tensor(std::string_view name, const ValueList& args, const KwargList& kwargs) {
  ValueList r = invoke(name, args, kwargs);
  KILN_CHECK(!r.empty() && r[0].is_tensor(), name, " returned no tensor");
  return r[0].to_tensor();
}

}  // namespace kiln
