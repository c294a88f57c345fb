// Allowed: graph sits above util.
#include <string>
#include "core/util/strings.h"
