#!/usr/bin/env bash
# Builds Kiln and runs the main job on the bundled example: the eager kernels
# checked against real PyTorch's outputs in the reference op corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh release
ref="${KILN_REFERENCE_DIR:-../shared/reference}"
./build/app/kiln-cli conformance --corpus "$ref/opcorpus"
