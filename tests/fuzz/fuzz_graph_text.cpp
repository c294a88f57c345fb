// libFuzzer target: the print_readable parser on arbitrary text. A parsed graph
// must also print and re-parse (the round trip is part of what is fuzzed).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/graph/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto g = kiln::parse_graph_module(text, "fuzz.py");
  if (g.ok()) {
    (void)kiln::verify(*g);
    std::string printed = kiln::print_graph_module(*g);
    (void)kiln::parse_graph_module(printed, "fuzz-printed.py");
  }
  return 0;
}
