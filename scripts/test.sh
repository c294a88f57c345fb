#!/usr/bin/env bash
# Builds Kiln and runs every test: a short libFuzzer run of each reader
# (scripts/fuzz.sh), then CTest (QtTest cases and command-line checks).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./scripts/build.sh "$preset"
export KILN_REFERENCE_DIR="${KILN_REFERENCE_DIR:-$(cd .. && pwd)/shared/reference}"
./scripts/fuzz.sh "${KILN_FUZZ_SECONDS:-15}"
ctest --preset "$preset"
