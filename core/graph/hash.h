#pragma once
// A structural hash that identifies a graph for caches and the minifier. It
// ignores node names, so renaming (l_x_ vs arg0_1) or reparsing printed text
// gives the same hash.
//
// It includes, in node order:
//   - each node's op kind and target (placeholder targets are names, so those
//     are left out; get_attr and call_module paths stay in);
//   - args in order and kwargs sorted by keyword, as trees: the kind of every
//     element, constants by value (floats by bit pattern, nan as one value),
//     dtype / device / layout / memory-format / global names, and each node
//     reference as the index of the node it reads, which captures the use-def
//     structure;
//   - the output node's result tree like any other args;
//   - meta['val'] as print_readable shows it: a tensor's dtype and sizes (ints
//     or symbol expressions), a Sym's expression, or an unread annotation's
//     text. Strides, device, tensor subclass and vals FX prints no annotation
//     for (tuples, Python scalars) are left out;
//   - each nested subgraph's name and structural hash, in order.
// It leaves out names, source stacks, scopes, provenance, descriptors, the
// class name and how the signature is written (pytree, expanded). Because
// references are indices, two graphs that differ only in the order of
// independent nodes hash differently.
#include <cstdint>

#include "core/graph/graph.h"

namespace kiln {

uint64_t structural_hash(const Graph& g);

}  // namespace kiln
