#include "compiler/capture/guard.h"

#include <algorithm>
#include <climits>
#include <functional>
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
    case Kind::DictContains: return "DICT_CONTAINS";
  }
  return {};
}

namespace {

std::string list_text(const std::vector<int64_t>& v, const std::function<bool(size_t)>& dynamic) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += dynamic(i) ? "None" : std::to_string(v[i]);
  }
  return out + "]";
}

// Dynamo's "User stack trace" block under a failed guard.
std::string stack_text(const std::vector<StackFrame>& stack) {
  if (stack.empty()) return {};
  std::string out = "\nUser stack trace:";
  for (const StackFrame& f : stack) {
    out += "\n  File \"" + f.file + "\", line " + std::to_string(f.line) + ", in " + f.function;
    std::string code = f.code;
    code.erase(0, code.find_first_not_of(" \t"));
    if (!code.empty()) out += "\n    " + code;
  }
  return out;
}

// "# <code>  # <file>:<line> in <function>", the comment Dynamo puts after a guard.
std::string user_comment(const Guard& g) {
  std::string code = g.user_code;
  code.erase(0, code.find_first_not_of(" \t"));
  code.erase(code.find_last_not_of(" \t\r") + 1);
  return "# " + code + "  # " + g.user_file + ":" + std::to_string(g.user_line) + " in " + g.user_function;
}

// A failed guard's reason as Dynamo prints it: the guard padded to 57
// columns, the user-line comment, then the user stack block.
std::string reason_with_stack(const Guard& g, std::string line) {
  if (!g.user_code.empty()) {
    if (line.size() < 57) line += std::string(57 - line.size(), ' ');
    line += "  " + user_comment(g);
  }
  return line + stack_text(g.user_stack);
}

std::string torch_dtype_name(DType d) { return std::string("torch.") + std::string(dtype_name(d)); }

std::string dispatch_keys(const std::string& device) {
  return device.starts_with("cuda") ? "DispatchKeySet(CUDA, BackendSelect, ADInplaceOrView, AutogradCUDA)"
                                    : "DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU)";
}

}  // namespace

std::string Guard::text() const {
  switch (kind) {
    case Kind::TensorMatch:
      return "check_tensor(" + source->str() + ", Tensor, " + dispatch_keys(device) + ", " + torch_dtype_name(dtype) +
             ", device=" + (device.starts_with("cuda:") ? device.substr(5) : std::string("None")) + ", requires_grad=" + (requires_grad ? "True" : "False") +
             ", size=" + list_text(sizes, [this](size_t i) { return i < dynamic.size() && dynamic[i]; }) +
             ", stride=" + list_text(strides, [this](size_t i) { return stride_is_dynamic(i); }) + ")";
    case Kind::EqualsMatch: return source->str() + " == " + py::repr(expected);
    case Kind::TypeMatch: return "___check_type_id(" + source->str() + "), type=" + py::repr(expected);
    case Kind::IdMatch: return "___check_obj_id(" + source->str() + ")";
    case Kind::LengthCheck: return "len(" + source->str() + ") == " + std::to_string(length);
    case Kind::GradMode: return std::string("torch.is_grad_enabled() == ") + (grad_mode ? "True" : "False");
    case Kind::DictContains: return std::string(contains ? "" : "not ") + "___dict_contains(" + py::repr(expected) + ", " + source->str() + ")";
  }
  return {};
}

bool Guard::stride_is_dynamic(size_t dim) const {
  for (size_t j = dim + 1; j < dynamic.size(); ++j)
    if (dynamic[j]) return true;
  return false;
}

bool Guard::check(py::VM& vm, const py::Frame& frame, std::string* why) const {
  auto fail = [&](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  if (kind == Kind::GradMode) {
    if (vm.grad_enabled != grad_mode) return fail("GLOBAL_STATE changed: grad_mode ");
    // Only the switches that change what ops compute (nesting and the cache flag do not).
    const torchapi::AutocastState& now = torchapi::autocast_state();
    if (now.cpu_enabled != autocast.cpu_enabled || now.cuda_enabled != autocast.cuda_enabled ||
        (now.cpu_enabled && now.cpu_dtype != autocast.cpu_dtype) ||
        (now.cuda_enabled && now.cuda_dtype != autocast.cuda_dtype))
      return fail("GLOBAL_STATE changed: autocast ");
    return true;
  }
  py::Value v;
  if (!source->eval(vm, frame, v)) return fail(source->str() + " is no longer present");
  switch (kind) {
    case Kind::TensorMatch: {
      const std::string name = "tensor '" + source->short_name() + "'";
      if (!v.is(py::ObjKind::Tensor)) return fail(name + " is not a tensor (" + py::type_name(v) + ")");
      const auto* t = v.as<py::TensorObj>();
      if (dispatch_keys(t->device) != dispatch_keys(device))
        return fail(name + " dispatch key set mismatch. expected " + dispatch_keys(device) + ", actual " + dispatch_keys(t->device));
      if (t->device != device) return fail(name + " device mismatch. expected " + device + ", actual " + t->device);
      if (t->t.dtype() != dtype)
        return fail(name + " dtype mismatch. expected " + scalar_type_name(dtype) + ", actual " + scalar_type_name(t->t.dtype()));
      if (t->requires_grad != requires_grad)
        return fail(name + " requires_grad mismatch. expected requires_grad=" + (requires_grad ? "1" : "0"));
      if (t->t.dim() != int64_t(sizes.size()))
        return fail(name + " rank mismatch. expected " + std::to_string(sizes.size()) + ", actual " + std::to_string(t->t.dim()));
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (dynamic[i]) {
          // A dynamic dim still specializes 0 and 1, as Dynamo's symbolic shapes do.
          if (t->t.sizes()[i] < 2) return fail("2 <= " + source->short_name() + ".size()[" + std::to_string(i) + "]");
          continue;
        }
        if (t->t.sizes()[i] != sizes[i])
          return fail(name + " size mismatch at index " + std::to_string(i) + ". expected " + std::to_string(sizes[i]) +
                      ", actual " + std::to_string(t->t.sizes()[i]));
      }
      for (size_t i = 0; i < strides.size(); ++i) {
        if (stride_is_dynamic(i)) continue;
        if (t->t.sizes()[i] > 1 && t->t.strides()[i] != strides[i])
          return fail(name + " stride mismatch at index " + std::to_string(i) + ". expected " + std::to_string(strides[i]) +
                      ", actual " + std::to_string(t->t.strides()[i]));
      }
      return true;
    }
    case Kind::EqualsMatch: {
      bool same_type = v.tag() == expected.tag() && (!v.is_obj() || v.obj()->kind == expected.obj()->kind);
      if (same_type && py::equal(v, expected)) return true;
      // Dynamo checks None by identity.
      std::string line = source->short_name() + (expected.is_none() ? " is None" : " == " + py::repr(expected));
      if (from_symbol) return fail(line + (user_code.empty() ? "" : "  " + user_comment(*this)));
      return fail(reason_with_stack(*this, line));
    }
    case Kind::TypeMatch:
      if (vm.type_of(v).get() == expected.as<py::Class>()) return true;
      {
        const py::Class* cls = expected.as<py::Class>();
        std::string line = "___check_type_id(" + source->short_name() + ", ID), type=<class '" + cls->module + "." + cls->name + "'>";
        if (!user_code.empty()) line += "  " + user_comment(*this) + " (HINT: type " + cls->name + ")";
        return fail(line + stack_text(user_stack));
      }
    case Kind::IdMatch:
      if (v.same(expected)) return true;
      return fail("___check_obj_id(" + source->str() + ")");
    case Kind::LengthCheck:
      if ((v.is(py::ObjKind::List) || v.is(py::ObjKind::Tuple) || v.is(py::ObjKind::Dict)) && vm.len(v) == length) {
        return true;
      } else {
        return fail(reason_with_stack(*this, "len(" + source->short_name() + ") == " + std::to_string(length)));
      }
    case Kind::DictContains: {
      if (v.is(py::ObjKind::Dict) && (v.as<py::Dict>()->find(expected) != nullptr) == contains) return true;
      std::string line = std::string(contains ? "" : "not ") + "___dict_contains(" + py::repr(expected) + ", " + source->short_name() + ")";
      return fail(reason_with_stack(*this, line));
    }
    case Kind::GradMode: break;
  }
  return true;
}

bool check_guards(py::VM& vm, const py::Frame& frame, const std::vector<Guard>& guards, std::string* why,
                  const Guard** failed) {
  for (const Guard& g : guards)
    if (!g.check(vm, frame, why)) {
      if (failed) *failed = &g;
      return false;
    }
  return true;
}

void order_guards(std::vector<Guard>& guards) {
  // Global state, then tensors (s04's recompile reasons show Dynamo reports a
  // tensor mismatch before a constant's), then by source name, as Dynamo
  // installs guards sorted by Guard.sort_key.
  auto key = [](const Guard& g) {
    // A module's parameters and buffers sort with the module's other guards
    // (its type check first, by name), not with the frame's input tensors;
    // likewise a tensor inside a list sorts after the list's length check.
    bool input_tensor = g.kind == Guard::Kind::TensorMatch && !g.source->base;
    int group = g.kind == Guard::Kind::GradMode ? 0 : input_tensor ? 1 : 2;
    return std::make_pair(group, group == 0 ? std::string() : g.source->str());
  };
  std::stable_sort(guards.begin(), guards.end(), [&](const Guard& a, const Guard& b) { return key(a) < key(b); });
  for (size_t i = 0; i < guards.size(); ++i) guards[i].rank = int(i);
}

std::string guard_root(const Guard& g) {
  if (g.kind == Guard::Kind::GradMode || !g.source) return {};
  const Source* s = g.source.get();
  while (s->base) s = s->base.get();
  return s->str();
}

void reorder_after_failure(std::vector<Guard>& guards, std::map<std::string, int>& fail_counts, const Guard& failed) {
  if (failed.kind == Guard::Kind::GradMode) return;
  ++fail_counts[guard_root(failed)];
  auto key = [&](const Guard& g) {
    if (g.kind == Guard::Kind::GradMode) return std::make_pair(INT32_MIN, g.rank);
    auto it = fail_counts.find(guard_root(g));
    return std::make_pair(it == fail_counts.end() ? 0 : -it->second, g.rank);
  };
  std::stable_sort(guards.begin(), guards.end(), [&](const Guard& a, const Guard& b) { return key(a) < key(b); });
}

}  // namespace kiln::capture
