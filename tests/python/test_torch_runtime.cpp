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
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("0 0 0 0\n0 None\nRuntimeError invalid argument to reset_peak_memory_stats\n"
                                "RuntimeError invalid argument to reset_accumulated_memory_stats\n"));
  }

  // torch.diff as ATen computes it (n capped at the length, prepend/append
  // joined first, xor for booleans); the expected text is torch 1.13's (diff
  // is unchanged since). Its gradient is its subtractions' (this interpreter
  // has no derivative formulas; the regression programs differentiate it).
  void diff_with_prepend_and_append() {
    Ran r = run_python(
        "import torch\n"
        "x = torch.arange(6.0)\n"
        "y = torch.diff(x * x, n=2, prepend=torch.tensor([1.0]), append=torch.tensor([40.0, 50.0]))\n"
        "print(y.tolist())\n"
        "print(torch.diff(torch.tensor([True, False, False, True])).tolist(), torch.arange(12).view(3, 4).diff(dim=0).tolist())\n"
        "print(tuple(torch.diff(torch.ones(2, 3), n=5).shape), tuple(torch.diff(torch.ones(2, 3), n=0).shape))\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("[2.0, 2.0, 2.0, 2.0, 2.0, 6.0, -5.0]\n"
                                "[True, False, True] [[4, 4, 4, 4], [4, 4, 4, 4]]\n"
                                "(2, 0) (2, 3)\n"));
  }

  // A state dict keeps each module's version beside it (PyTorch's _metadata),
  // so _load_from_state_dict sees it; a dict made by hand has none, and
  // BatchNorm then fills in a missing num_batches_tracked, as PyTorch does.
  void state_dict_versions_reach_load_from_state_dict() {
    Ran r = run_python(
        "import torch\n"
        "import torch.nn as nn\n"
        "class V(nn.Module):\n"
        "    _version = 3\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.bn = nn.BatchNorm1d(2)\n"
        "    def _load_from_state_dict(self, sd, prefix, meta, *rest):\n"
        "        print('version', meta.get('version'))\n"
        "        super()._load_from_state_dict(sd, prefix, meta, *rest)\n"
        "v = V()\n"
        "v.load_state_dict(v.state_dict())\n"
        "hand = {k: t for k, t in v.state_dict().items() if 'num_batches' not in k}\n"
        "print(v.load_state_dict(hand))\n"
        "print(v.state_dict()._metadata[''], v.state_dict()._metadata['bn'])\n"
        "try:\n"
        "    hand._metadata\n"
        "except AttributeError as e:\n"
        "    print(e)\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("version 3\nversion None\n<All keys matched successfully>\n"
                                "{'version': 3} {'version': 2}\n'dict' object has no attribute '_metadata'\n"));
  }

  void version_and_hub_tqdm() {
    Ran r = run_python(
        "import torch\nfrom torch.hub import tqdm\n"
        "print(torch.version.__version__ == torch.__version__, torch.version.cuda, torch.version.hip)\n"
        "print(sum([i for i in tqdm(range(4), desc='x')]))\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
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
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("False True True\nTrue False 16\n"));
    QCOMPARE(r.err, std::string());

    r = run_python(
        "import torch._inductor.config as config\nimport torch._dynamo.config as dc\n"
        "for v in (True, False, True):\n"
        "    config.emulate_precision_casts = v\n"
        "dc.automatic_dynamic_shapes = True\n"
        "dc.automatic_dynamic_shapes = False\n"
        "print(config.emulate_precision_casts, dc.automatic_dynamic_shapes)\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
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
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("<SDPBackend.MATH: 0> True\nFalse True\nTrue\n"));
    QCOMPARE(r.err, std::string());

    r = run_python(
        "import torch\n"
        "with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False, enable_math=True):\n"
        "    print(torch.backends.cuda.mem_efficient_sdp_enabled())\n"
        "for i in range(2):\n"
        "    with torch.backends.cuda.sdp_kernel(enable_math=False):\n"
        "        pass\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
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

  // Named tensors are a gap of Kiln (exit 3), not the program's TypeError.
  void names_keyword_is_refused() {
    Ran r = run_python("import torch\nx = torch.randn(1, 2, names=('N', 'C'))\n");
    QCOMPARE(r.exit, 3);
    QCOMPARE(last_error_line(r.err), std::string("RuntimeError: randn(names=...): named tensors "
                                                 "(PyTorch's prototype named-tensor API) are not supported by Kiln"));
  }

  // gpt-fast's hook fuses three weights into one before the module loads; the
  // caller's dict is not changed (load_state_dict copies it), assign=True makes
  // the state dict's tensors the parameters. Expected: torch 1.13 for the parts
  // it has (the same output), PyTorch 2.11's module.py for the rest.
  void module_state_dict_hooks() {
    Ran r = run_python(
        "import torch\nimport torch.nn as nn\n"
        "class Attn(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.wqkv = nn.Linear(2, 6, bias=False)\n"
        "        self._register_load_state_dict_pre_hook(self.load_hook)\n"
        "    def load_hook(self, state_dict, prefix, *args):\n"
        "        if prefix + 'wq.weight' in state_dict:\n"
        "            wq, wk, wv = [state_dict.pop(prefix + n + '.weight') for n in ('wq', 'wk', 'wv')]\n"
        "            state_dict[prefix + 'wqkv.weight'] = torch.cat([wq, wk, wv])\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = Attn()\n"
        "        self.head = nn.Linear(2, 1)\n"
        "m = M()\n"
        "sd = {'attn.wq.weight': torch.ones(2, 2), 'attn.wk.weight': 2 * torch.ones(2, 2), 'attn.wv.weight': 3 * torch.ones(2, 2),\n"
        "      'head.weight': torch.zeros(1, 2, dtype=torch.float64), 'head.bias': torch.zeros(1, dtype=torch.float64)}\n"
        "print(m.load_state_dict(sd, assign=True))\n"
        "print(sorted(sd.keys()))\n"
        "print(m.attn.wqkv.weight.sum().item(), m.head.weight.dtype, type(m.head.weight).__name__, m.head.weight.requires_grad)\n"
        "calls = []\n"
        "h = m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(prefix))\n"
        "m.attn.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *a: calls.append('load ' + prefix + type(mod).__name__))\n"
        "print(list(m.state_dict().keys()))\n"
        "h.remove()\n"
        "m.load_state_dict(m.state_dict())\n"
        "m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())\n"
        "print(m.load_state_dict({}), calls)\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("<All keys matched successfully>\n"
                                "['attn.wk.weight', 'attn.wq.weight', 'attn.wv.weight', 'head.bias', 'head.weight']\n"
                                "24.0 torch.float64 Parameter True\n"
                                "['attn.wqkv.weight', 'head.weight', 'head.bias']\n"
                                "<All keys matched successfully> ['', 'load attn.Attn', 'load attn.Attn']\n"));
  }

  // PyTorch keeps any attribute a program sets on a tensor (BERT-pytorch's
  // `pe.require_grad = False`); Kiln keeps those that are not PyTorch's own.
  void attributes_set_on_tensors() {
    Ran r = run_python(
        "import torch\npe = torch.zeros(3)\npe.require_grad = False\n"
        "print(pe.require_grad, pe.requires_grad, hasattr(pe, 'foo'), hasattr(pe + 1, 'require_grad'))\n"
        "p = torch.nn.Parameter(torch.ones(2))\np._no_weight_decay = True\n"
        "print(getattr(p, '_no_weight_decay', False), getattr(torch.ones(1), '_no_weight_decay', False))\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("False False False False\nTrue False\n"));
    r = run_python("import torch\nx = torch.zeros(1)\nx.add = 1\n");
    QCOMPARE(r.exit, 3);
  }

  // pathlib's pure path arithmetic, as CPython 3.12 computes it; what would
  // look at the file system is os.path's probe or refused (exit 3).
  void pathlib_pure_paths() {
    Ran r = run_python(
        "from pathlib import Path, PurePosixPath\n"
        "p = Path('checkpoints/devset/devset-tiny/model.pth')\n"
        "print(p, repr(p), p.name, p.stem, p.suffix, p.parent, p.parent.name, p.parts)\n"
        "print(p.parent / 'tokenizer.model', 'int8' in str(p), p.name.split('.'))\n"
        "q = Path('/a//b/./c.tar.gz')\n"
        "print(q, q.suffixes, q.stem, q.parent.parent, q.parent.parent.parent.parent, q.is_absolute())\n"
        "print(Path(), Path('a').joinpath('b', 'c'), 'x' / Path('y'), Path('a/b').with_suffix('.txt'))\n"
        "print(Path('/x/y/z').relative_to('/x'), [str(x) for x in Path('a/b/c').parents], Path('a') == Path('a/'))\n"
        "print(PurePosixPath('//a'), Path('a/b') < Path('a/c'), repr(Path('.hidden').suffix), repr(Path('a.').suffix))\n");
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string(
                        "checkpoints/devset/devset-tiny/model.pth PosixPath('checkpoints/devset/devset-tiny/model.pth') "
                        "model.pth model .pth checkpoints/devset/devset-tiny devset-tiny ('checkpoints', 'devset', "
                        "'devset-tiny', 'model.pth')\n"
                        "checkpoints/devset/devset-tiny/tokenizer.model False ['model', 'pth']\n"
                        "/a/b/c.tar.gz ['.tar', '.gz'] c.tar /a / True\n"
                        ". a/b/c x/y a/b.txt\n"
                        "y/z ['a/b', 'a', '.'] True\n"
                        "//a True '' ''\n"));
    for (const char* source : {"from pathlib import Path\nPath('/etc/passwd').exists()\n",
                               "from pathlib import Path\nPath('/etc/passwd').read_text()\n",
                               "from pathlib import Path\nPath('/etc/passwd').open()\n",
                               "from pathlib import Path\nPath('x').resolve()\n"}) {
      r = run_python(source);
      QCOMPARE(r.exit, 3);
    }
  }
};

QTEST_APPLESS_MAIN(TestTorchRuntime)
#include "test_torch_runtime.moc"
