// Not allowed: Qt outside a folder marked qt.
#include <QString>
