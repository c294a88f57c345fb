#pragma once
// What the loaders (session.cpp, session_trace.cpp, session_repro.cpp) share
// and nothing outside session/ needs.
#include <memory>
#include <string>

#include "compiler/pipeline/training_split.h"
#include "core/util/status.h"
#include "session/session.h"

namespace kiln::session {

// LoadOptions::partitioner by name; an error naming the choices otherwise.
Expected<pipeline::Partitioner> partitioner_of(const LoadOptions& o);

// A session of `kind` for `path`, titled by the file's name (a folder's,
// when the path ends in a separator).
std::shared_ptr<Session> new_session(Session::Kind kind, const std::string& path);

// A file's bytes; empty when it cannot be read (sources are optional).
std::string read_text(const std::string& path);

}  // namespace kiln::session
