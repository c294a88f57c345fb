#pragma once
// Where a node of a stage was written, for the source view: a user line it
// came from, or the line of a repro file that defines it. Programs' and
// dumps' nodes carry their user line (NodeMeta::stack, from FX's `# File:
// path:line` comments); a PyTorch repro.py, a minifier_launcher.py and a
// Kiln repro's graph.txt are their own source, with no such comments, so
// their nodes are found by the statement that defines them; a node a pass
// made (a Kiln stage of a repro) through its provenance (NodeMeta::from, up
// SessionStage::parent); a dump's stage without comments (fx_graph_runnable)
// through the node of the same name in the stage before it.
// Tests: tests/viewer/test_source_links_gui.cpp.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/graph/graph.h"
#include "session/session.h"

namespace kiln::session {

struct SourceRef {
  std::string file;  // the session's source_file, or a file the dump quotes (Session::quoted_lines)
  int line = 0;
};

// The 1-based line of `source` whose statement defines node `name` ("name =
// ..." or "name: "f32[4]" = ...", at the start of a line after indentation),
// the first in a `def forward` if there is one; 0 when no line does.
int defining_line(std::string_view source, std::string_view name);

// True when the session's source text is a graph's own file (a repro), whose
// lines define nodes by name.
bool source_is_graph(const Session& s);

// Node `name` of stage `stage` of `c`. `graph_of(i)` gives stage i's graph
// when it is at hand (null when it is not parsed yet). A frame in a file the
// view can show (the source file, or one the dump quotes) is preferred, the
// innermost first; nullopt when no line is known.
std::optional<SourceRef> node_source(const Session& s, const SessionCompile& c, int stage, const std::string& name,
                                     const std::function<std::shared_ptr<const Graph>(int)>& graph_of);

}  // namespace kiln::session
