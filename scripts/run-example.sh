#!/usr/bin/env bash
# Builds Kiln and runs the main job: the workbench on its bundled example
# (resources/examples/workbench_demo.py, compiled by Kiln: a graph break, a
# recompile, every stage down to the generated code). With no display it
# renders the same window offscreen to build/workbench_example.png and
# prints the example's explain report, so a headless machine shows it too.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the main job runs: the workbench and kiln-cli, not the ~100 test
# programs (scripts/test.sh builds those).
./scripts/build.sh release --target kiln kiln-cli
if [[ -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ]]; then
  exec ./build/app/kiln "$@"
fi
QT_QPA_PLATFORM=offscreen ./build/app/kiln --screenshot build/workbench_example.png --quit
echo "kiln: no display; the window on the bundled example is in build/workbench_example.png"
./build/app/kiln-cli explain resources/examples/workbench_demo.py
