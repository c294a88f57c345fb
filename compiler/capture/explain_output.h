#pragma once
// The text of torch._dynamo.explain(fn)(...)'s ExplainOutput as PyTorch 2.11
// prints it: counts, break reasons, "Ops per Graph" (each call_function
// target's str()), "Out Guards" (each graph's guards in 2.11's Guard layout:
// the global-state guards every graph has, then the globals and inputs it
// read) and "Compile Times" (one row per Dynamo phase, one figure per call).
// Object ids and weakref addresses are Kiln's own stand-ins of the same form:
// Kiln's objects have no CPython addresses.
#include <string>
#include <vector>

#include "compiler/capture/capture.h"
#include "compiler/capture/region_tracer.h"

namespace kiln::capture {

struct OutGuard {
  std::string name;              // "L['a']", "G['torch'].abs", "" for global state
  std::string source;            // "local", "global", "shape_env"
  std::string create_fn;         // "TENSOR_MATCH", "MODULE_MATCH", "GRAD_MODE", ...
  std::string guard_types;       // "['TENSOR_MATCH']" or "None"
  std::string code_list;         // "[\"hasattr(L['a'], ...) == False\"]" or "None"
  std::string object_type;       // the weakref's referent type ("Tensor", "module"); empty: no weakref
  std::string class_weakref;     // "Guarded Class Weakref" text
  py::Value object;              // a tensor: its weakref prints "dead" once only explain holds it
};

// One graph's guards, in the order Dynamo 2.11 adds them to its output graph.
std::vector<OutGuard> out_guards(const RegionResult& region);

// One frame compile, for "Compile Times".
struct CompileTiming {
  bool restarted = false;  // a second attempt (compile_attempt_1)
  bool has_graph = false;  // the user compiler ran
  double total_s = 0, attempt_s[2] = {0, 0}, guards_s = 0;
};

std::string compile_times_text(const std::vector<CompileTiming>& compiles);

struct ExplainData {
  CallableReport report;
  std::vector<std::vector<OutGuard>> guards;  // per graph
  std::vector<CompileTiming> compiles;
};

std::string explain_text(const ExplainData& e);

}  // namespace kiln::capture
