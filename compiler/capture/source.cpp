#include "compiler/capture/source.h"

namespace kiln::capture {

SourcePtr Source::local(std::string name, int slot) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::Local;
  s->name = std::move(name);
  s->index = slot;
  return s;
}

SourcePtr Source::stack(int index) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::Stack;
  s->index = index;
  s->name = "___stack" + std::to_string(index);
  return s;
}

SourcePtr Source::global(std::string name) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::Global;
  s->name = std::move(name);
  return s;
}

SourcePtr Source::attr(SourcePtr base, std::string name) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::Attr;
  s->base = std::move(base);
  s->name = std::move(name);
  return s;
}

SourcePtr Source::item(SourcePtr base, py::Value key) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::Item;
  s->base = std::move(base);
  s->key = std::move(key);
  return s;
}

SourcePtr Source::cell(std::string name, int slot) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::Cell;
  s->name = std::move(name);
  s->index = slot;
  return s;
}

SourcePtr Source::closure_cell(SourcePtr function, int freevar) {
  auto s = std::make_shared<Source>();
  s->kind = Kind::ClosureCell;
  s->base = std::move(function);
  s->index = freevar;
  return s;
}

std::string Source::str() const {
  switch (kind) {
    case Kind::Local:
    case Kind::Stack:
    case Kind::Cell: return "L['" + name + "']";
    case Kind::Global: return "G['" + name + "']";
    case Kind::Attr: return base->str() + "." + name;
    case Kind::Item: return base->str() + "[" + py::repr(key) + "]";
    case Kind::ClosureCell: return base->str() + ".__closure__[" + std::to_string(index) + "].cell_contents";
  }
  return {};
}

std::string Source::short_name() const {
  // Dynamo's failure texts name a local by itself: self._modules['lin'], xs[0].
  switch (kind) {
    case Kind::Local:
    case Kind::Stack:
    case Kind::Cell: return name;
    case Kind::Global: return str();
    case Kind::Attr: return base->short_name() + "." + name;
    case Kind::Item: return base->short_name() + "[" + py::repr(key) + "]";
    case Kind::ClosureCell: return base->short_name() + ".__closure__[" + std::to_string(index) + "].cell_contents";
  }
  return {};
}

std::string Source::graph_name() const {
  // Runs of characters that cannot be in an identifier become one '_'.
  std::string text = str(), out;
  bool pending = false;
  for (char c : text) {
    if (isalnum(static_cast<unsigned char>(c))) {
      if (pending && !out.empty()) out += '_';
      pending = false;
      out += c;
    } else {
      pending = true;
    }
  }
  if (pending) out += '_';
  return out;
}

bool Source::is_module_state() const {
  for (const Source* s = this; s; s = s->base.get())
    if (s->kind == Kind::Attr && (s->name == "_parameters" || s->name == "_buffers")) return true;
  return false;
}

bool Source::eval(py::VM& vm, const py::Frame& frame, py::Value& out) const {
  switch (kind) {
    case Kind::Local:
      if (size_t(index) >= frame.locals.size() || py::is_unbound(frame.locals[size_t(index)])) return false;
      out = frame.locals[size_t(index)];
      return true;
    case Kind::Stack:
      if (size_t(index) >= frame.stack.size()) return false;
      out = frame.stack[size_t(index)];
      return true;
    case Kind::Cell: {
      if (size_t(index) >= frame.cells.size() || !frame.cells[size_t(index)]->bound) return false;
      out = frame.cells[size_t(index)]->value;
      return true;
    }
    case Kind::ClosureCell: {
      py::Value fn;
      if (!base->eval(vm, frame, fn) || !fn.is(py::ObjKind::Function)) return false;
      const auto& closure = fn.as<py::Function>()->closure;
      if (size_t(index) >= closure.size() || !closure[size_t(index)]->bound) return false;
      out = closure[size_t(index)]->value;
      return true;
    }
    case Kind::Global: {
      const py::Value* v = frame.globals->find_str(name);
      if (!v) v = vm.builtins()->find_str(name);
      if (!v) return false;
      out = *v;
      return true;
    }
    case Kind::Attr: {
      py::Value b;
      if (!base->eval(vm, frame, b)) return false;
      // Instance attributes are read from the instance dict directly: a guard must not run user code.
      if (b.is(py::ObjKind::Instance)) {
        const py::Value* v = b.as<py::Instance>()->dict->find_str(name);
        if (!v) return false;
        out = *v;
        return true;
      }
      return vm.try_getattr(b, name, out);
    }
    case Kind::Item: {
      py::Value b;
      if (!base->eval(vm, frame, b)) return false;
      if (b.is(py::ObjKind::Dict)) {
        const py::Value* v = b.as<py::Dict>()->find(key);
        if (!v) return false;
        out = *v;
        return true;
      }
      if (b.is(py::ObjKind::List) || b.is(py::ObjKind::Tuple)) {
        const py::ValueVec& items = b.is(py::ObjKind::List) ? b.as<py::List>()->items : b.as<py::Tuple>()->items;
        if (!key.is_int()) return false;
        const int64_t n = int64_t(items.size()), i = key.as_int() < 0 ? key.as_int() + n : key.as_int();
        if (i < 0 || i >= n) return false;
        out = items[size_t(i)];
        return true;
      }
      return false;
    }
  }
  return false;
}

}  // namespace kiln::capture
