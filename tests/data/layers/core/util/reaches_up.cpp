// Not allowed: util reaching up into graph.
#include <vector>
#include "core/graph/graph.h"
