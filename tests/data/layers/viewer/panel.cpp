// Allowed: the viewer may use Qt and core.
#include <QWidget>
#include "core/graph/graph.h"
