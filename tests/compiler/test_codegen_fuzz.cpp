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
// The check itself (tolerances, what a failure prints) is codegen_fuzz_check.h,
// shared with tools/codegen_fuzz.cpp, which runs it on the GPU backend too.
#include <chrono>
#include <cstdlib>
#include <map>

#include "codegen_fuzz_check.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;

namespace {

using test::FuzzOutcome;
using test::FuzzResult;
using test::fuzz_one;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
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
      FuzzResult r = fuzz_one(seed);
      nodes += r.nodes;
      if (r.outcome == FuzzOutcome::EagerRejected) {
        if (++rejected <= 3) qInfo("seed %u rejected by eager: %s", seed, r.report.c_str());
        continue;
      }
      if (r.outcome == FuzzOutcome::Failed) {
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

  // The split family (few long rows, random_split_graph.h) through the CPU
  // backend: its graphs are valid, eager takes them, and the comparison holds;
  // tools/codegen_fuzz.cpp runs the same family on the GPU, where they split.
  void split_family_matches_eager() {
    const int graphs = env_int("KILN_FUZZ_SPLIT_GRAPHS", 40);
    std::map<std::string, int> reductions;
    for (int k = 0; k < graphs; ++k) {
      const uint32_t seed = 1 + uint32_t(k);
      FuzzResult r = fuzz_one(seed, "kiln", "none", "split");
      QVERIFY2(r.outcome == FuzzOutcome::Ok, r.report.c_str());
      std::vector<Tensor> unused;
      for (const Node& n : test::SplitReductionGraphGenerator(seed).build(&unused).nodes)
        if (n.op == OpKind::CallFunction) ++reductions[n.target];
    }
    for (const char* op : {"aten::sum.dim_IntList", "aten::sum.default", "aten::mean.dim", "aten::amax.default",
                           "aten::amin.default"})
      QVERIFY2(reductions[op] >= 1, op);
  }

  // The conv family (random_conv_graph.h) through the CPU backend: its graphs
  // are valid and eager takes them (every layout, groups, 1-D and 2-D drawn);
  // tools/codegen_fuzz.cpp runs it on the GPU, with KILN_CONV=implicit
  // through the implicit-GEMM kernel.
  void conv_family_matches_eager() {
    const int graphs = env_int("KILN_FUZZ_CONV_GRAPHS", 60);
    int grouped = 0, one_d = 0;
    for (int k = 0; k < graphs; ++k) {
      const uint32_t seed = 1 + uint32_t(k);
      FuzzResult r = fuzz_one(seed, "kiln", "none", "conv");
      QVERIFY2(r.outcome == FuzzOutcome::Ok, r.report.c_str());
      std::vector<Tensor> unused;
      for (const Node& n : test::ConvGraphGenerator(seed).build(&unused).nodes)
        if (n.op == OpKind::CallFunction && n.target == "aten::convolution.default") {
          grouped += n.args.at(8).i > 1;
          one_d += n.args.at(3).items.size() == 1;
        }
    }
    QVERIFY(grouped >= 1 && one_d >= 1);
  }

  // The attention-train family (attention_train_graphs.h) through the CPU
  // backend: hand-written attention is fused by fuse-attention exactly where it
  // should be, and the fused joint graph's outputs and gradients match the
  // unfused joint graph's in float64; tools/codegen_fuzz.cpp runs it on the GPU
  // (the flash forward and backward). Both fused and unfused forms must occur,
  // causal ones and the nanoGPT projection among them, or the family tests little.
  void attention_train_family_matches_unfused() {
    const int graphs = env_int("KILN_FUZZ_ATTENTION_TRAIN_GRAPHS", 36);
    int fused = 0, unfused = 0, causal = 0, projection = 0, ragged = 0;
    for (int k = 0; k < graphs; ++k) {
      const uint32_t seed = 1 + uint32_t(k);
      FuzzResult r = fuzz_one(seed, "kiln", "none", "attention-train");
      QVERIFY2(r.outcome == FuzzOutcome::Ok, r.report.c_str());
      fused += r.attention_fused == 1;
      unfused += r.attention_fused == 0;
      const test::AttentionTrainForm f = test::random_attention_train_form(seed);
      causal += r.attention_fused == 1 && f.causal();
      projection += f.projection;
      ragged += f.l != f.s;
    }
    qInfo("attention-train: %d graphs, %d fused (%d causal), %d left unfused", graphs, fused, causal, unfused);
    QCOMPARE(fused + unfused, graphs);
    if (graphs >= 30) QVERIFY(fused >= 5 && unfused >= 3 && causal >= 1 && projection >= 1 && ragged >= 1);
  }

  // The comparison catches a wrong result: the injected relu bug (relu(x) + 1)
  // in a generated graph that has a relu is reported as a mismatch.
  void an_injected_bug_is_caught() {
    int caught = 0, with_relu = 0;
    for (uint32_t seed = 1; seed <= 200 && with_relu < 5; ++seed) {
      std::vector<Tensor> unused;
      bool relu = false;
      for (const Node& n : test::CodegenGraphGenerator(seed).build(&unused).nodes) relu |= n.target == "aten::relu.default";
      if (!relu || fuzz_one(seed).outcome != FuzzOutcome::Ok) continue;
      ++with_relu;
      FuzzResult r = fuzz_one(seed, "kiln", "relu:accuracy");
      if (r.outcome == FuzzOutcome::Failed && r.report.find("mismatch") != std::string::npos) ++caught;
    }
    QVERIFY(with_relu >= 3);
    // A relu whose result is dead or only reaches a comparison can hide the bug; most must show it.
    QVERIFY2(caught * 2 >= with_relu, (std::to_string(caught) + " of " + std::to_string(with_relu)).c_str());
  }
};

QTEST_GUILESS_MAIN(TestCodegenFuzz)
#include "test_codegen_fuzz.moc"
