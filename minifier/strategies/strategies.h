#pragma once
// The strategies' factories, one file each (listed in run order in strategies.cpp).
#include <memory>
#include <string>
#include <vector>

#include "minifier/strategy.h"

namespace kiln::minify {

std::unique_ptr<Strategy> make_localize();            // localize.cpp
std::unique_ptr<Strategy> make_probe_ops();           // probe_ops.cpp
std::unique_ptr<Strategy> make_truncate();            // truncate.cpp
std::unique_ptr<Strategy> make_replace_with_inputs(); // replace_with_inputs.cpp
std::unique_ptr<Strategy> make_remove_outputs();      // remove_outputs.cpp
std::unique_ptr<Strategy> make_dead_code();           // dead_code.cpp
std::unique_ptr<Strategy> make_unused_inputs();       // unused_inputs.cpp
std::unique_ptr<Strategy> make_consolidate_inputs();  // consolidate_inputs.cpp
std::unique_ptr<Strategy> make_constant_inputs();     // constant_inputs.cpp
std::unique_ptr<Strategy> make_simplify_dtypes();     // simplify_dtypes.cpp
std::unique_ptr<Strategy> make_shrink_shapes();       // shrink_shapes.cpp

// probe-ops' candidates: each kind of op of `base` alone, fed with the
// recorded values (the minifier also judges them while the input's own
// verdict is made); `targets` gets each one's op.
std::vector<Candidate> probe_candidates(const Candidate& base, const Recording& values,
                                        std::vector<std::string>* targets = nullptr);

}  // namespace kiln::minify
