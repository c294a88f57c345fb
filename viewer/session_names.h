#pragma once
// The viewer wraps kiln_session's plain structs (sessions, stages, numerics,
// stage links) in Qt models and views and names them unqualified.
namespace kiln::session {}
namespace kiln::viewer {
using namespace kiln::session;
}  // namespace kiln::viewer
