// The code generator fuzzer: random graphs (tests/compiler/random_graph.h)
// are decomposed, compiled for the CPU and run, and their outputs compared
// with the ATen interpreter's (the eager kernels) on the original graph.
//
// CI runs a few hundred graphs. The long run:
//   KILN_FUZZ_GRAPHS=10000 KILN_FUZZ_SEED=1 build/tests/test_codegen_fuzz
// Graph k uses seed KILN_FUZZ_SEED + k, so one failing seed is rerun alone
// with KILN_FUZZ_GRAPHS=1 KILN_FUZZ_SEED=<seed>. A failure prints the seed,
// the graph (print_readable), the decomposed graph and the post-fusion IR.
//
// Tolerance: |got - want| <= tol * max(1, |want|), NaN equal to NaN, with tol
// from the least precise floating dtype anywhere in the graph (inputs and
// every node), because the generated code may keep a low-precision
// intermediate in float where eager rounds it: float64 1e-9, float32 1e-4
// (libm and vector libm differ by a few ulp, sums are reassociated, and
// mul+add may contract to an FMA), float16 1e-2, bfloat16 4e-2 (a few
// roundings of 2^-8). Integer and bool outputs must be equal; the generator
// makes them only from values that are exact in both (see random_graph.h).
#include <chrono>
#include <cstdlib>
#include <map>

#include "compiler/decomp/decompose.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/graph/printer.h"
#include "loopir_test_util.h"
#include "core/tensor/tensor_repr.h"
#include "random_graph.h"
#include "test_support.h"

using namespace kiln;
using runtime::CompiledGraph;
using runtime::CompileOptions;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

double tolerance_of(const Graph& g) {
  double tol = 0;
  for (const Node& n : g.nodes) {
    if (!n.meta.val.is_tensor()) continue;
    const TensorMeta* m = &n.meta.val.tensor;
    double t = m->dtype == "float64"    ? 1e-9
               : m->dtype == "float32"  ? 1e-4
               : m->dtype == "float16"  ? 1e-2
               : m->dtype == "bfloat16" ? 4e-2
                                        : 0;
    tol = std::max(tol, t);
  }
  return tol;
}

// "" when every output agrees (integers and bools exactly; NaN equals NaN and
// an infinity itself), else what differs.
std::string compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  if (got.size() != want.size()) return "output counts differ";
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string which = "output " + std::to_string(i) + " (" + std::string(dtype_name(want[i].dtype())) + ")";
    if (got[i].sizes() != want[i].sizes()) return which + ": sizes " + shape_str(got[i].sizes()) + " vs " + shape_str(want[i].sizes());
    if (got[i].dtype() != want[i].dtype()) return which + ": dtype " + std::string(dtype_name(got[i].dtype()));
    const double t = is_floating(want[i].dtype()) ? tol : 0.0;
    std::vector<double> a = test::values(got[i]), b = test::values(want[i]);
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k]))) continue;
      if (std::fabs(a[k] - b[k]) <= t * std::max(1.0, std::fabs(b[k]))) continue;
      return which + " element " + std::to_string(k) + ": compiled " + std::to_string(a[k]) + ", eager " + std::to_string(b[k]);
    }
  }
  return {};
}

enum class Outcome { Ok, EagerRejected, Failed };

struct Result {
  Outcome outcome = Outcome::Ok;
  std::string report;
  size_t nodes = 0;
};

std::string stage_text(const CompiledGraph& c, const std::string& name) {
  for (const runtime::CodegenStage& s : c.stages())
    if (s.name == name) return s.text;
  return "(no stage " + name + ")";
}

Result fuzz_one(uint32_t seed, const std::string& inject_bug = "none") {
  Result r;
  std::vector<Tensor> inputs;
  Graph g = test::CodegenGraphGenerator(seed).build(&inputs);
  r.nodes = g.size();
  std::vector<Value> in(inputs.begin(), inputs.end());
  auto eager = pipeline::run_aten_graph(g, in);
  if (!eager) {
    r.outcome = Outcome::EagerRejected;
    r.report = eager.status().message();
    return r;
  }
  std::vector<Tensor> want;
  for (const Value& v : *eager) want.push_back(v.to_tensor());
  std::string header = "seed " + std::to_string(seed) + "\n" + print_graph_module(g);
  // Small inputs are printed whole: a mismatch often hangs on one value.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].numel() <= 64) header += "input " + std::to_string(i) + ": " + tensor_repr(inputs[i]) + "\n";
  auto fail = [&](std::string why) {
    r.outcome = Outcome::Failed;
    r.report = header + why;
    return r;
  };
  auto decomposed = decomp::decompose(g);
  if (!decomposed) return fail("decompose: " + decomposed.status().message());
  CompileOptions o;
  o.use_cache = false;
  o.inject_bug = inject_bug;
  auto compiled = CompiledGraph::compile(*decomposed, o);
  if (!compiled) return fail("decomposed:\n" + print_graph_module(*decomposed) + "compile: " + compiled.status().message());
  auto got = (*compiled)->run(inputs);
  if (!got) return fail("run: " + got.status().message());
  std::string d = compare(*got, want, tolerance_of(g));
  if (d.empty()) return r;
  o.keep_text = true;
  auto again = CompiledGraph::compile(*decomposed, o);
  return fail("decomposed:\n" + print_graph_module(*decomposed) + "post-fusion IR:\n" +
              (again ? stage_text(**again, "ir_post_fusion") : again.status().message()) + "\nmismatch: " + d);
}

}  // namespace

class TestCodegenFuzz : public QObject {
  Q_OBJECT
 private slots:
  void compiled_graphs_match_eager() {
    const int graphs = env_int("KILN_FUZZ_GRAPHS", 300);
    const uint32_t first = uint32_t(env_int("KILN_FUZZ_SEED", 1));
    auto t0 = std::chrono::steady_clock::now();
    int rejected = 0, failed = 0;
    size_t nodes = 0;
    std::map<std::string, int> ops;
    for (int k = 0; k < graphs; ++k) {
      uint32_t seed = first + uint32_t(k);
      Result r = fuzz_one(seed);
      nodes += r.nodes;
      if (r.outcome == Outcome::EagerRejected) {
        if (++rejected <= 3) qInfo("seed %u rejected by eager: %s", seed, r.report.c_str());
        continue;
      }
      if (r.outcome == Outcome::Failed) {
        ++failed;
        if (failed <= 20) qWarning("FUZZ FAILURE\n%s\n", r.report.c_str());
      }
      if (k < 400) {  // the op mix, for the coverage check below
        std::vector<Tensor> unused;
        for (const Node& n : test::CodegenGraphGenerator(seed).build(&unused).nodes)
          if (n.op == OpKind::CallFunction) ++ops[n.target];
      }
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    qInfo("fuzz: %d graphs from seed %u, %zu nodes, %d rejected by eager, %d failed, %.1f s", graphs, first, nodes, rejected,
          failed, s);
    QCOMPARE(failed, 0);
    QVERIFY2(rejected * 10 <= graphs, "eager rejected more than a tenth of the graphs: the generator makes bad calls");
    // The generator must keep reaching every family, or the fuzzer tests little.
    if (graphs >= 200)
      for (const char* op : {"aten::sin.default", "aten::log.default", "aten::div.Tensor", "aten::maximum.default",
                             "aten::where.self", "aten::sum.dim_IntList", "aten::amax.default", "aten::amin.default",
                             "aten::permute.default", "aten::slice.Tensor", "aten::expand.default", "aten::view.default",
                             "aten::squeeze.dim", "aten::_to_copy.default"})
        QVERIFY2(ops[op] >= 5, op);
  }

  // The comparison catches a wrong result: the injected relu bug (relu(x) + 1)
  // in a generated graph that has a relu is reported as a mismatch.
  void an_injected_bug_is_caught() {
    int caught = 0, with_relu = 0;
    for (uint32_t seed = 1; seed <= 200 && with_relu < 5; ++seed) {
      std::vector<Tensor> unused;
      bool relu = false;
      for (const Node& n : test::CodegenGraphGenerator(seed).build(&unused).nodes) relu |= n.target == "aten::relu.default";
      if (!relu || fuzz_one(seed).outcome != Outcome::Ok) continue;
      ++with_relu;
      Result r = fuzz_one(seed, "relu:accuracy");
      if (r.outcome == Outcome::Failed && r.report.find("mismatch") != std::string::npos) ++caught;
    }
    QVERIFY(with_relu >= 3);
    // A relu whose result is dead or only reaches a comparison can hide the bug; most must show it.
    QVERIFY2(caught * 2 >= with_relu, (std::to_string(caught) + " of " + std::to_string(with_relu)).c_str());
  }
};

QTEST_GUILESS_MAIN(TestCodegenFuzz)
#include "test_codegen_fuzz.moc"
