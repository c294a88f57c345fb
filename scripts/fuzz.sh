#!/usr/bin/env bash
# Builds the libFuzzer targets with clang 19 (ASan + UBSan) into build-fuzz/ and
# runs each for SECONDS (default 20), seeded with the reference files (and the
# Python target with resources/examples too). A crash, leak, timeout or
# out-of-memory fails the script and leaves the input in build-fuzz/artifacts/.
# KILN_FUZZ_BUILD_DIR picks another build folder; KILN_FUZZ_TARGETS runs only
# the named targets ("fuzz_python"). KILN_FUZZ_PARALLEL=1 runs the targets at
# once rather than one after another (the long runs: 2 hours each in 2 hours).
# KILN_FUZZ_TIMEOUT sets libFuzzer's per-input limit (default 10 s; a wall
# clock, so runs sharing the machine with a build need more);
# KILN_FUZZ_NO_BUILD=1 runs the targets as they are built.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
build="${KILN_FUZZ_BUILD_DIR:-build-fuzz}"
targets="${KILN_FUZZ_TARGETS:-fuzz_safetensors fuzz_graph_text fuzz_trace fuzz_trace_json fuzz_workspace_index fuzz_python}"
ref="${KILN_REFERENCE_DIR:-$(cd .. && pwd)/shared/reference}"
[ -f "$ref/README.md" ] || { echo "fuzz.sh: reference data not found at $ref" >&2; exit 1; }
if [ "${KILN_FUZZ_NO_BUILD:-0}" != 1 ]; then
  ./scripts/install-deps.sh
  CC=clang-19 CXX=clang++-19 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_FUZZ=ON >/dev/null
  cmake --build "$build" --target $targets
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{safetensors,graph,trace,index,python} "$build"/artifacts
# Seeds: small safetensors files made from the corpus header, every graph text,
# every trace log and every Python program of the reference folder and of the
# examples.
head -c 4096 "$ref/opcorpus/ops.safetensors" > "$work/safetensors/head"
find "$ref" -name 'fx_graph_*.py' -o -name 'repro.py' -o -name 'minifier_launcher.py' | \
  while read -r f; do cp "$f" "$work/graph/$(echo "$f" | md5sum | cut -c1-12).py"; done
find "$ref/traces" "$ref/minifier" -name '*.log' -size -2M | \
  while read -r f; do cp "$f" "$work/trace/$(echo "$f" | md5sum | cut -c1-12).log"; done
# The index decoder's seeds: the same logs behind an odd first byte (encode,
# then damage one byte) and two bytes saying where.
for f in "$work"/trace/*.log; do { printf '\001\000\100'; head -c 200000 "$f"; } > "$work/index/$(basename "$f")"; done

cp "$ref"/programs/*.py resources/examples/*.py tests/data/language/*.py "$work/python/"
# Generator expressions inside a compiled function (the tracer inlines them).
printf 'import torch\ndef f(x, ws):\n    return sum(w * x for w in ws) + next(w for w in ws if w.shape[0] > 1), any(w.shape[0] > 5 for w in ws)\nprint(torch.compile(f)(torch.ones(2), [torch.ones(2), torch.arange(2.0)]))\n' > "$work/python/genexp_compiled.py"
# The subset's modules and tensor kinds, with names of their own (several are program.py).
for d in re numpy complex sparse packed; do
  for f in tests/data/"$d"/*.py; do cp "$f" "$work/python/${d}_$(basename "$f")"; done
done
# torch.jit.trace / script, torch.fx.symbolic_trace and traceback's printing.
cp tests/data/regressions/jit_trace_fx_script.py tests/data/regressions/fx_graph_building.py "$work/python/"
# torch.autograd.grad and torch.func (nested: second derivatives), default device contexts,
# module hooks, pruning, OrderedDict state dicts and dict views.
for f in autograd_grad_and_func default_device_context module_hooks_and_jacfwd pruning_methods diff_and_load_versions \
         parametrize_and_solve weight_norm_old_and_new spectral_norm_gan_step ordered_dicts_and_views \
         double_backward_and_hessians; do
  cp "tests/data/regressions/$f.py" "$work/python/"
done
# torch.save archives (PyTorch's and a hostile one) go to torch.load.
cp tests/data/serialization/*.pt "$work/python/"
# Two ResNet-18 training steps, or its forward at batch 16 x 128x128, take minutes
# under ASan: seeds that can only time out.
rm -f "$work/python/resnet18_train.py" "$work/python/resnet18_infer.py"

run() {
  local target=$1 corpus=$2 log="$work/$1.out" rc=0 extra=()
  # A dictionary of keywords and torch names keeps mutated programs compiling.
  [ -f tests/fuzz/"$target".dict ] && extra=(-dict=tests/fuzz/"$target".dict)
  echo "fuzz.sh: $target for ${seconds}s"
  ASAN_OPTIONS=detect_leaks=1 ./"$build"/tests/fuzz/"$target" "$corpus" "${extra[@]}" \
    -max_total_time="$seconds" -timeout="${KILN_FUZZ_TIMEOUT:-10}" -rss_limit_mb=4096 -max_len=1048576 \
    -artifact_prefix="$build"/artifacts/"$target"- -print_final_stats=1 >"$log" 2>&1 || rc=$?
  # Prefixed with the target: parallel runs finish in any order.
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done |==[0-9]+==ERROR|SUMMARY)' "$log" | sed "s/^/$target: /" || true
  if [ "$rc" -ne 0 ]; then tail -40 "$log" >&2; echo "fuzz.sh: $target FAILED" >&2; return 1; fi
}
declare -A corpus=([fuzz_safetensors]=safetensors [fuzz_graph_text]=graph [fuzz_trace]=trace [fuzz_trace_json]=trace
                  [fuzz_workspace_index]=index [fuzz_python]=python)
if [ "${KILN_FUZZ_PARALLEL:-0}" = 1 ]; then
  pids=()
  for target in $targets; do run "$target" "$work/${corpus[$target]}" & pids+=($!); done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  [ "$failed" = 0 ] || exit 1
else
  for target in $targets; do run "$target" "$work/${corpus[$target]}"; done
fi
echo "fuzz.sh: no crash, leak or timeout"
