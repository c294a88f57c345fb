// What programs read about their PyTorch and the compiler settings they assign
// (runtime_prelude.cpp): torch.cuda's memory statistics without CUDA,
// torch.version, torch.hub.tqdm, torch._inductor/_functorch/_dynamo.config,
// the attention-backend context managers and torch.distributed.optim.
// Expected values: PyTorch 2.11's source (torch/cuda/memory.py: without an
// initialised allocator the getters read an empty dict, and a reset passes
// device None to the C++ binding, which raises "invalid argument to ...";
// torch/utils/_config_module.py for the settings).
#include <QtTest/QtTest>

#include "tests/python/python_run_util.h"

using kiln::test::last_error_line;
using kiln::test::Ran;
using kiln::test::run_python;

class TestTorchRuntime : public QObject {
  Q_OBJECT

  static bool cuda() { return run_python("import torch\nprint(torch.cuda.is_available())\n").out == "True\n"; }

 private slots:
  void cuda_memory_statistics_without_cuda() {
    if (cuda()) QSKIP("a CUDA device is present: the statistics are refused there (exit 3)");
    Ran r = run_python(
        "import torch\n"
        "print(torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(device=None),\n"
        "      torch.cuda.memory_allocated(0), torch.cuda.memory_reserved())\n"
        "print(torch.cuda.max_memory_allocated() // 1024 // 1024, torch.cuda.empty_cache())\n"
        "for f in (torch.cuda.reset_peak_memory_stats, torch.cuda.reset_accumulated_memory_stats):\n"
        "    try:\n"
        "        f()\n"
        "    except RuntimeError as e:\n"
        "        print(type(e).__name__, e)\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("0 0 0 0\n0 None\nRuntimeError invalid argument to reset_peak_memory_stats\n"
                                "RuntimeError invalid argument to reset_accumulated_memory_stats\n"));
  }

  void version_and_hub_tqdm() {
    Ran r = run_python(
        "import torch\nfrom torch.hub import tqdm\n"
        "print(torch.version.__version__ == torch.__version__, torch.version.cuda, torch.version.hip)\n"
        "print(sum([i for i in tqdm(range(4), desc='x')]))\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("True None None\n6\n"));
  }

  // Tuning, caching and naming settings are kept silently; a setting that
  // changes numbers or graphs, set away from its default, is kept and
  // reported once; one Kiln does not know is refused at its line.
  void settings_modules() {
    Ran r = run_python(
        "import torch\nimport torch._inductor.config as config\nimport torch._functorch.config\n"
        "import torch._dynamo.config\n"
        "print(config.coordinate_descent_tuning, config.triton.cudagraph_trees, config.fx_graph_cache)\n"
        "config.coordinate_descent_tuning = True\n"
        "config.triton.unique_kernel_names = True\n"
        "torch._inductor.config.triton.cudagraph_trees = False\n"
        "torch._functorch.config.enable_autograd_cache = True\n"
        "torch._dynamo.config.cache_size_limit = 16\n"
        "print(config.coordinate_descent_tuning, config.triton.cudagraph_trees, torch._dynamo.config.cache_size_limit)\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("False True True\nTrue False 16\n"));
    QCOMPARE(r.err, std::string());

    r = run_python(
        "import torch._inductor.config as config\nimport torch._dynamo.config as dc\n"
        "for v in (True, False, True):\n"
        "    config.emulate_precision_casts = v\n"
        "dc.automatic_dynamic_shapes = True\n"
        "dc.automatic_dynamic_shapes = False\n"
        "print(config.emulate_precision_casts, dc.automatic_dynamic_shapes)\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("True False\n"));
    QCOMPARE(r.err, std::string("prog.py:4: UserWarning: torch._inductor.config.emulate_precision_casts = True: this "
                                "setting changes what PyTorch computes; Kiln keeps the value but does not follow it\n"
                                "  config.emulate_precision_casts = v\n"
                                "prog.py:6: UserWarning: torch._dynamo.config.automatic_dynamic_shapes = False: this "
                                "setting changes which graphs PyTorch compiles and when it recompiles; Kiln keeps the "
                                "value but does not follow it\n"
                                "  dc.automatic_dynamic_shapes = False\n"));

    for (const char* source : {"import torch._inductor.config as c\nc.not_a_setting = 1\n",
                               "import torch._inductor.config as c\nc.triton.not_a_setting = 1\n",
                               "import torch._dynamo.config as c\nc.not_a_setting = 1\n"}) {
      r = run_python(source);
      QCOMPARE(r.exit, 3);
      QVERIFY2(last_error_line(r.err).find("not_a_setting is a compiler setting Kiln does not know") != std::string::npos,
               r.err.c_str());
    }
  }

  // Kiln computes attention by the math formula: a context with MATH is
  // honoured silently; one without it is reported once.
  void attention_backends() {
    Ran r = run_python(
        "import torch\nfrom torch.nn.attention import sdpa_kernel, SDPBackend\n"
        "print(SDPBackend.MATH, torch.backends.cuda.flash_sdp_enabled())\n"
        "with sdpa_kernel([SDPBackend.MATH]):\n"
        "    print(torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled())\n"
        "print(torch.backends.cuda.flash_sdp_enabled())\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("<SDPBackend.MATH: 0> True\nFalse True\nTrue\n"));
    QCOMPARE(r.err, std::string());

    r = run_python(
        "import torch\n"
        "with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False, enable_math=True):\n"
        "    print(torch.backends.cuda.mem_efficient_sdp_enabled())\n"
        "for i in range(2):\n"
        "    with torch.backends.cuda.sdp_kernel(enable_math=False):\n"
        "        pass\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("False\n"));
    QVERIFY2(r.err.find("prog.py:2: FutureWarning: `torch.backends.cuda.sdp_kernel()` is deprecated.") == 0, r.err.c_str());
    QVERIFY2(r.err.find("prog.py:5: UserWarning: scaled_dot_product_attention with the MATH backend disabled") !=
                     std::string::npos &&
                 r.err.find("MATH backend disabled") == r.err.rfind("MATH backend disabled"),
             r.err.c_str());
  }

  void distributed_optim_imports_and_refuses_use() {
    Ran r = run_python(
        "import torch\nfrom torch.distributed.optim import ZeroRedundancyOptimizer\nprint('imported')\n"
        "ZeroRedundancyOptimizer([torch.zeros(1)], optimizer_class=torch.optim.SGD)\n");
    QCOMPARE(r.out, std::string("imported\n"));
    QCOMPARE(r.exit, 3);
  }
};

QTEST_APPLESS_MAIN(TestTorchRuntime)
#include "test_torch_runtime.moc"
