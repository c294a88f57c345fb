#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds a preset
# (release by default; `scripts/build.sh debug` for the sanitizer build).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
