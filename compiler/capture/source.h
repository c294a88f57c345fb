#pragma once
// Where a value the trace read came from, relative to the frame's state at
// the start of the traced region: L['x'], G['w'], L['self']._modules['lin'].
// Guards are checked against sources and graph inputs are fetched through
// them on every call, so a source must re-evaluate to the same object.
#include <memory>
#include <string>

#include "core/python/vm.h"

namespace kiln::capture {

struct Source;
using SourcePtr = std::shared_ptr<const Source>;

struct Source {
  // Cell: a cell or free variable of the traced frame (index: its slot in
  // Frame::cells), L['k'] as Dynamo spells a root frame's free variable.
  // ClosureCell: free variable `index` of the function `base` evaluates to,
  // base.__closure__[index].cell_contents: an inlined closure's captured values.
  enum class Kind { Local, Stack, Global, Attr, Item, Cell, ClosureCell };
  Kind kind = Kind::Local;
  std::string name;   // Local / Global / Attr name
  int index = 0;      // Local slot, Stack depth from the bottom
  py::Value key;      // Item key: an int or a str
  SourcePtr base;     // Attr / Item

  static SourcePtr local(std::string name, int slot);
  static SourcePtr stack(int index);
  static SourcePtr global(std::string name);
  static SourcePtr attr(SourcePtr base, std::string name);
  static SourcePtr item(SourcePtr base, py::Value key);
  static SourcePtr cell(std::string name, int slot);
  static SourcePtr closure_cell(SourcePtr function, int freevar);

  // Dynamo's spelling: L['x'], L['___stack0'], G['w'], L['self']._modules['lin'].
  std::string str() const;
  // The graph input name Dynamo derives from it: L_self_modules_lin_parameters_weight_.
  std::string graph_name() const;
  // For messages: 'x' for L['x'], the full text otherwise.
  std::string short_name() const;
  // A module parameter or buffer (Dynamo puts those graph inputs first).
  bool is_module_state() const;
  // Re-reads the value from a frame's state; false when it is gone.
  bool eval(py::VM& vm, const py::Frame& frame, py::Value& out) const;
};

}  // namespace kiln::capture
