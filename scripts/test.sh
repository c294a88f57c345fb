#!/usr/bin/env bash
# Builds Kiln and runs every test (CTest: QtTest cases and command-line checks).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh "${1:-release}"
export KILN_REFERENCE_DIR="${KILN_REFERENCE_DIR:-$(cd .. && pwd)/shared/reference}"
ctest --preset "${1:-release}"
