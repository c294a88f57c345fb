#include "compiler/pipeline/graph_backends.h"

#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/runtime/cuda_graph.h"

namespace kiln::pipeline {

namespace {

// The case as a graph: every tensor argument (also inside Tensor[] lists) a placeholder.
struct CaseGraph {
  Graph graph;
  std::vector<Value> inputs;
};

Expected<CaseGraph> case_graph(const CorpusCase& c) {
  CaseGraph out;
  GraphEmitter e(out.graph);
  auto to_earg = [&](const Value& v) -> EArg {
    if (v.is_tensor()) {
      out.inputs.push_back(v);
      return e.placeholder("arg" + std::to_string(out.inputs.size() - 1), v.to_tensor());
    }
    if (v.is_list()) {
      bool tensors = false;
      for (const Value& x : v.to_list()) tensors |= x.is_tensor();
      if (tensors) {
        std::vector<Var> vars;
        for (const Value& x : v.to_list()) {
          if (x.is_none()) {
            vars.push_back(Var{});
            continue;
          }
          out.inputs.push_back(x);
          vars.push_back(e.placeholder("arg" + std::to_string(out.inputs.size() - 1), x.to_tensor()));
        }
        return EArg::list(std::move(vars));
      }
    }
    return v;
  };
  try {
    std::vector<EArg> args;
    for (const Value& a : c.args) args.push_back(to_earg(a));
    EKwargs kwargs;
    for (const auto& [k, v] : c.kwargs) kwargs.emplace_back(k, to_earg(v));
    std::vector<Var> results = e.call(c.op, args, kwargs);
    std::vector<Var> outs;
    for (Var v : results)
      if (v.valid()) outs.push_back(v);
    e.output(outs);
  } catch (const Error& err) {
    std::string why = err.what();
    // Ops whose results are not all tensors (a Python number, a bool) have no graph form here.
    if (why.find("which an emitter cannot hold") != std::string::npos) return Status::error("skip: " + why);
    return Status::error(why);
  }
  return out;
}

ConformanceBackend graph_backend(bool decompose) {
  return [decompose](const CorpusCase& c) -> Expected<ValueList> {
    Expected<CaseGraph> cg = case_graph(c);
    if (!cg) return cg.status();
    Graph g = std::move(cg->graph);
    if (decompose) {
      Expected<Graph> d = decomp::decompose(g);
      if (!d) return d.status();
      g = std::move(*d);
    }
    Expected<std::vector<Value>> r = run_aten_graph(g, cg->inputs);
    if (!r) return r.status();
    return ValueList(r->begin(), r->end());
  };
}

// The case through every graph pass, then compiled by `compile_fn` and run
// (CompiledGraph and CudaCompiledGraph both take and return host tensors).
template <typename CompileFn>
ConformanceBackend compiled_backend(CompileFn compile_fn) {
  return [compile_fn](const CorpusCase& c) -> Expected<ValueList> {
    Expected<CaseGraph> cg = case_graph(c);
    if (!cg) return cg.status();
    auto code = compile_fn(std::move(cg->graph));
    if (!code) return code.status();
    std::vector<Tensor> inputs;
    for (const Value& v : cg->inputs) inputs.push_back(v.to_tensor());
    Expected<std::vector<Tensor>> r = (*code)->run(inputs);
    if (!r) return r.status();
    return ValueList(r->begin(), r->end());
  };
}

}  // namespace

ConformanceBackend kiln_backend() {
  return compiled_backend([](Graph g) { return compile_to_cpu(std::move(g)); });
}

ConformanceBackend kiln_cuda_backend() {
  return compiled_backend([](Graph g) { return compile_to_cuda(std::move(g)); });
}

Expected<std::string> kiln_cuda_compile_case(const CorpusCase& c) {
  Expected<CaseGraph> cg = case_graph(c);
  if (!cg) return cg.status();
  runtime::CudaCompileOptions options;
  options.compile_only = true;
  Expected<std::shared_ptr<runtime::CudaCompiledGraph>> code = compile_to_cuda(std::move(cg->graph), options);
  if (!code) return code.status();
  const runtime::CudaCompileStats& st = (*code)->stats();
  return std::to_string(st.kernels) + " kernel(s), " + std::to_string(st.extern_groups) + " extern call(s), " +
         std::to_string(st.cubin_bytes) + " bytes of sm_" + std::to_string(options.sm) + " code";
}

ConformanceBackend aot_eager_backend() { return graph_backend(false); }
ConformanceBackend decomp_eager_backend() { return graph_backend(true); }

}  // namespace kiln::pipeline
