// kiln-codegen-fuzz: the code generator fuzzer of test_codegen_fuzz as a plain
// program, for the backend QtTest cannot reach: the GPU machine has no Qt.
//
//   kiln-codegen-fuzz --backend kiln-cuda --graphs 2000 --seed 1
//   kiln-codegen-fuzz --backend kiln-cuda --family split --graphs 200   # few long rows (split reductions)
//   kiln-codegen-fuzz --backend kiln-cuda --family attention --graphs 300   # attention_graphs.h: the flash kernel
//   kiln-codegen-fuzz --backend kiln-cuda --family gemm-epilogue --graphs 300   # mm + bias/relu/gelu/residual (cuBLASLt)
//   kiln-codegen-fuzz --backend kiln --family attention-train --graphs 300   # attention_train_graphs.h: fuse-attention +
//     autodiff; the fused joint graph (kiln-cuda: the flash forward and backward) vs the unfused one in float64
//   KILN_CONV=implicit kiln-codegen-fuzz --backend kiln-cuda --family conv --graphs 500   # the implicit-GEMM kernel
//   (--family conv without KILN_CONV: im2col + cuBLAS; both with TF32 for float32, held to 1e-2)
//
// Graph k uses seed SEED + k (rerun one with --graphs 1 --seed <seed>). Every
// failure prints the seed, the graph, the decomposed graph, the fused IR and
// (kiln-cuda) the CUDA source; exit 1 when any graph failed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "codegen_fuzz_check.h"
#include "compiler/codegen/cuda/cuda_api.h"

int main(int argc, char** argv) {
  std::string backend = "kiln", family = "random";
  int graphs = 300;
  unsigned seed = 1;
  int show = 10;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kiln-codegen-fuzz: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--backend") backend = next();
    else if (a == "--graphs") graphs = std::atoi(next());
    else if (a == "--seed") seed = unsigned(std::strtoul(next(), nullptr, 10));
    else if (a == "--show") show = std::atoi(next());
    else if (a == "--family") family = next();
    else if (a == "--verbose") verbose = true;
    else {
      std::fprintf(stderr, "usage: kiln-codegen-fuzz [--backend kiln|kiln-cuda] [--family random|split|attention|attention-train|gemm-epilogue|conv] [--graphs N] "
                           "[--seed S] [--show N] [--verbose]\n");
      return 2;
    }
  }
  if (backend != "kiln" && backend != "kiln-cuda") {
    std::fprintf(stderr, "kiln-codegen-fuzz: --backend is kiln or kiln-cuda, not %s\n", backend.c_str());
    return 2;
  }
  if (!kiln::test::fuzz_family_known(family)) {
    std::fprintf(stderr, "kiln-codegen-fuzz: --family is random, split, attention, attention-train, gemm-epilogue or conv, not %s\n", family.c_str());
    return 2;
  }
  if (backend == "kiln-cuda")
    if (kiln::Status st = kiln::codegen::cuda::cuda_init(); !st.ok()) {
      std::fprintf(stderr, "kiln-codegen-fuzz: kiln-cuda needs a GPU: %s\n", st.message().c_str());
      return 3;
    }
  // Line by line: a run cut short (a hung kernel, a time limit) still shows how far it got.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto t0 = std::chrono::steady_clock::now();
  int rejected = 0, failed = 0, fused = 0, unfused = 0;
  size_t nodes = 0;
  for (int k = 0; k < graphs; ++k) {
    const unsigned s = seed + unsigned(k);
    auto g0 = std::chrono::steady_clock::now();
    kiln::test::FuzzResult r = kiln::test::fuzz_one(s, backend, "none", family);
    nodes += r.nodes;
    fused += r.attention_fused == 1;
    unfused += r.attention_fused == 0;
    if (verbose)
      std::printf("seed %u: %zu nodes, %s, %.3f s\n", s, r.nodes,
                  r.outcome == kiln::test::FuzzOutcome::Ok ? "ok" : r.outcome == kiln::test::FuzzOutcome::Failed ? "FAILED" : "rejected",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count());
    if (r.outcome == kiln::test::FuzzOutcome::EagerRejected && ++rejected <= show && verbose)
      std::printf("seed %u rejected by eager: %s\n", s, r.report.c_str());
    if (r.outcome != kiln::test::FuzzOutcome::Failed) continue;
    if (++failed <= show) std::printf("FUZZ FAILURE\n%s\n\n", r.report.c_str());
    else std::printf("FUZZ FAILURE seed %u\n", s);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // attention-train: how many forms the pass fused and how many it left unfused (as it must).
  const std::string split = family == "attention-train"
                                ? ", " + std::to_string(fused) + " fused, " + std::to_string(unfused) + " left unfused"
                                : "";
  std::printf("fuzz %s (%s): %d graphs from seed %u, %zu nodes%s, %d rejected by eager, %d failed, %.1f s\n", backend.c_str(),
              family.c_str(), graphs, seed, nodes, split.c_str(), rejected, failed, secs);
  return failed ? 1 : 0;
}
