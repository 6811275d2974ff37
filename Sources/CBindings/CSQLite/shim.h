// SQLite, used by agent persistence.
#include <sqlite3.h>
