// libpq, PostgreSQL's client library, for the fleet's store (XclawStore's PostgresConnection). Its API is plain C
// functions and imports into Swift as it is; this header only gathers it.
#ifndef XCLAW_CPOSTGRES_SHIM_H
#define XCLAW_CPOSTGRES_SHIM_H

#include <libpq-fe.h>

#endif
