#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds a preset
# (release by default; `scripts/build.sh debug` for the sanitizer build).
# Arguments after the preset go to `cmake --build` (`--target kiln kiln-cli`
# builds only those and what they link, not the test programs).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
shift || true
./scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" "$@"
