#!/bin/sh
# The include-direction check (cmake/check_layers.cmake) on a small tree with
# two wrong includes and two allowed ones: it must fail, name exactly the two
# wrong ones with file and line, and pass the project's own tree.
set -u
script="$1"; fixture="$2"; project="$3"
out=$(cmake -DROOT="$fixture" -DRULES="$fixture/layers.txt" -P "$script" 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "FAIL: the check passed a tree with wrong-direction includes"; exit 1; }
echo "$out" | grep -q '^core/util/reaches_up.cpp:3: includes core/graph/graph.h, but core/util may include only core/util$' \
  || { echo "FAIL: util -> graph not reported at its line"; exit 1; }
echo "$out" | grep -q '^core/graph/uses_qt.h:2: includes Qt (<QString>), but core/graph must build without Qt$' \
  || { echo "FAIL: Qt include not reported at its line"; exit 1; }
[ "$(echo "$out" | grep -c ': includes ')" -eq 2 ] || { echo "FAIL: allowed includes reported"; exit 1; }
cmake -DROOT="$project" -DRULES="$project/cmake/layers.txt" -P "$script" \
  || { echo "FAIL: the project's own tree breaks cmake/layers.txt"; exit 1; }
echo "PASS"
