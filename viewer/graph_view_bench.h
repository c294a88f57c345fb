#pragma once
// `kiln --bench-view`: frame times of the graph view on a generated graph,
// offscreen. A scripted sequence of wheel zooms, drags and fits, each frame
// painted synchronously and timed (median and 95th percentile), first with the
// graph as it opens (scopes collapsed), then with every scope expanded.
#include <QString>

#include <memory>

#include "core/graph/graph.h"

namespace kiln {

// A graph of about `nodes` nodes shaped like a deep network: blocks of
// diamonds (residual adds) in module scopes "stage<i>.<j>.<op>", with tensor
// shapes, so scopes, labels and long edges all occur.
std::shared_ptr<Graph> bench_graph(int nodes);

// Runs the benchmark in a view of width x height and returns the report, one
// line per phase. Needs a QApplication.
QString run_view_bench(int nodes, int width, int height);

}  // namespace kiln
