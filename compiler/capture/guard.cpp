#include "compiler/capture/guard.h"

#include <sstream>

namespace kiln::capture {

std::string scalar_type_name(DType d) {
  switch (d) {
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Int64: return "Long";
    case DType::Int32: return "Int";
    case DType::Int16: return "Short";
    case DType::Int8: return "Char";
    case DType::UInt8: return "Byte";
    case DType::Bool: return "Bool";
  }
  return "Unknown";
}

std::string Guard::kind_name() const {
  switch (kind) {
    case Kind::TensorMatch: return "TENSOR_MATCH";
    case Kind::EqualsMatch: return "EQUALS_MATCH";
    case Kind::TypeMatch: return "TYPE_MATCH";
    case Kind::IdMatch: return "ID_MATCH";
    case Kind::LengthCheck: return "LENGTH_CHECK";
    case Kind::GradMode: return "GRAD_MODE";
  }
  return {};
}

namespace {

std::string list_text(const std::vector<int64_t>& v, const std::vector<bool>& dynamic) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += i < dynamic.size() && dynamic[i] ? "None" : std::to_string(v[i]);
  }
  return out + "]";
}

std::string torch_dtype_name(DType d) { return std::string("torch.") + std::string(dtype_name(d)); }

}  // namespace

std::string Guard::text() const {
  switch (kind) {
    case Kind::TensorMatch:
      return "check_tensor(" + source->str() + ", Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), " +
             torch_dtype_name(dtype) + ", device=None, requires_grad=" + (requires_grad ? "True" : "False") +
             ", size=" + list_text(sizes, dynamic) + ", stride=" + list_text(strides, dynamic) + ")";
    case Kind::EqualsMatch: return source->str() + " == " + py::repr(expected);
    case Kind::TypeMatch: return "___check_type_id(" + source->str() + "), type=" + py::repr(expected);
    case Kind::IdMatch: return "___check_obj_id(" + source->str() + ")";
    case Kind::LengthCheck: return "len(" + source->str() + ") == " + std::to_string(length);
    case Kind::GradMode: return std::string("torch.is_grad_enabled() == ") + (grad_mode ? "True" : "False");
  }
  return {};
}

bool Guard::check(py::VM& vm, const py::Frame& frame, std::string* why) const {
  auto fail = [&](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  if (kind == Kind::GradMode) {
    if (vm.grad_enabled == grad_mode) return true;
    return fail(std::string("GLOBAL_STATE changed: grad_mode ") + (grad_mode ? "True" : "False") + " != " +
                (vm.grad_enabled ? "True" : "False"));
  }
  py::Value v;
  if (!source->eval(vm, frame, v)) return fail(source->str() + " is no longer present");
  switch (kind) {
    case Kind::TensorMatch: {
      const std::string name = "tensor '" + source->short_name() + "'";
      if (!v.is(py::ObjKind::Tensor)) return fail(name + " is not a tensor (" + py::type_name(v) + ")");
      const auto* t = v.as<py::TensorObj>();
      if (t->device != "cpu")
        return fail(name + " dispatch key set mismatch. expected DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), actual DispatchKeySet(CUDA, BackendSelect, ADInplaceOrView, AutogradCUDA)");
      if (t->t.dtype() != dtype)
        return fail(name + " dtype mismatch. expected " + scalar_type_name(dtype) + ", actual " + scalar_type_name(t->t.dtype()));
      if (t->requires_grad != requires_grad)
        return fail(name + " requires_grad mismatch. expected requires_grad=" + (requires_grad ? "1" : "0"));
      if (t->t.dim() != int64_t(sizes.size()))
        return fail(name + " rank mismatch. expected " + std::to_string(sizes.size()) + ", actual " + std::to_string(t->t.dim()));
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (dynamic[i]) {
          // A dynamic dim still specializes 0 and 1, as Dynamo's symbolic shapes do.
          if (t->t.sizes()[i] < 2) return fail("2 <= " + source->str() + ".size()[" + std::to_string(i) + "]");
          continue;
        }
        if (t->t.sizes()[i] != sizes[i])
          return fail(name + " size mismatch at index " + std::to_string(i) + ". expected " + std::to_string(sizes[i]) +
                      ", actual " + std::to_string(t->t.sizes()[i]));
      }
      for (size_t i = 0; i < strides.size(); ++i) {
        if (dynamic[i] || (i + 1 < strides.size() && dynamic[i + 1])) continue;
        if (t->t.sizes()[i] > 1 && t->t.strides()[i] != strides[i])
          return fail(name + " stride mismatch at index " + std::to_string(i) + ". expected " + std::to_string(strides[i]) +
                      ", actual " + std::to_string(t->t.strides()[i]));
      }
      return true;
    }
    case Kind::EqualsMatch: {
      bool same_type = v.tag() == expected.tag() && (!v.is_obj() || v.obj()->kind == expected.obj()->kind);
      if (same_type && py::equal(v, expected)) return true;
      std::string code = source->short_name() + " == " + py::repr(expected);
      std::string line = code;
      if (!user_code.empty()) {
        if (line.size() < 57) line += std::string(57 - line.size(), ' ');
        line += "  # " + user_code + "  # " + user_file + ":" + std::to_string(user_line) + " in " + user_function;
      }
      return fail(line);
    }
    case Kind::TypeMatch:
      if (vm.type_of(v).get() == expected.as<py::Class>()) return true;
      return fail("___check_type_id(" + source->str() + ")");
    case Kind::IdMatch:
      if (v.same(expected)) return true;
      return fail("___check_obj_id(" + source->str() + ")");
    case Kind::LengthCheck:
      if (vm.len(v) == length) return true;
      return fail("len(" + source->str() + ") == " + std::to_string(length));
    case Kind::GradMode: break;
  }
  return true;
}

bool check_guards(py::VM& vm, const py::Frame& frame, const std::vector<Guard>& guards, std::string* why) {
  for (const Guard& g : guards)
    if (g.kind == Guard::Kind::TensorMatch && !g.check(vm, frame, why)) return false;
  for (const Guard& g : guards)
    if (g.kind != Guard::Kind::TensorMatch && !g.check(vm, frame, why)) return false;
  return true;
}

}  // namespace kiln::capture
