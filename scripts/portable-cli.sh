#!/usr/bin/env bash
# Packs a kiln-cli that runs where no LLVM is installed (the lent GPU machine):
# LLVM linked statically (KILN_LLVM_STATIC=ON), the other shared libraries
# beside it. Writes .portable/bundle.tar.xz; on the other machine:
#   tar -xJf bundle.tar.xz -C /tmp && LD_LIBRARY_PATH=/tmp/bundle/lib /tmp/bundle/kiln-cli bench cpu --threads 16
#   (KILN_GEMM=openblas: the same on OpenBLAS; the table's GEMM line names the libraries)
#   python3 scripts/bench/inductor_cpu.py 16     # the same graphs through Inductor
# KILN_PORTABLE_TESTS="test_cuda_conv test_cuda_placement" also packs those
# QtTest executables (with Qt's libraries), for the tests that need a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
tests="${KILN_PORTABLE_TESTS:-}"
cmake -S . -B build-portable -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_GUI=OFF -DKILN_LLVM_STATIC=ON \
  -DBUILD_TESTING=$([ -n "$tests" ] && echo ON || echo OFF) >/dev/null
ninja -C build-portable kiln-cli kiln-codegen-fuzz kiln-program-fuzz $tests
rm -rf .portable/bundle && mkdir -p .portable/bundle/lib
strip -o .portable/bundle/kiln-cli build-portable/app/kiln-cli
strip -o .portable/bundle/kiln-codegen-fuzz build-portable/tools/kiln-codegen-fuzz
strip -o .portable/bundle/kiln-program-fuzz build-portable/tools/kiln-program-fuzz
# glibc and the C++ runtime come from the target machine; everything else travels.
for t in $tests; do strip -o ".portable/bundle/$t" "build-portable/tests/$t"; done
# oneDNN is opened with dlopen (core/ops/gemm_onednn.cpp), so ldd of the executables
# does not name it: it travels with what it needs (libgomp, libOpenCL).
# (awk reads to the end: an early exit would kill ldconfig with SIGPIPE, which
# pipefail and set -e turn into a silent stop of this script.)
dnnl=$(ldconfig -p | awk '$1 == "libdnnl.so.2" && !found {print $NF; found = 1}')
[ -n "$dnnl" ] || { echo "portable-cli: libdnnl.so.2 not found (Debian package libdnnl-dev)" >&2; exit 1; }
{ ldd build-portable/app/kiln-cli $(for t in $tests; do echo "build-portable/tests/$t"; done) "$dnnl"; echo "libdnnl.so.2 => $dnnl"; } |
  awk '/=>/ {print $3}' | grep -vE 'lib(c|m|stdc\+\+|gcc_s)\.so' | sort -u |
  while read -r lib; do cp -L "$lib" .portable/bundle/lib/; done
# A dictionary larger than all the executables together, so the LLVM code
# each links statically is stored once (-9's 64 MiB window holds about one
# executable: with three tests the bundle passed the device's 64 MiB limit).
XZ_OPT="--lzma2=preset=9,dict=512MiB" tar -C .portable -cJf .portable/bundle.tar.xz bundle && rm -rf .portable/bundle
ls -la .portable/bundle.tar.xz
