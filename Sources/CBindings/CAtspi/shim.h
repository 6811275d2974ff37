// GDBus (gio-2.0) and AT-SPI2's constants, for the accessibility reader in CXclawAtspi. libatspi is linked only for its
// static role and state tables: `atspi_init` is never called (with no reachable bus it aborts the process).
#include <gio/gio.h>
#include <atspi/atspi-constants.h>
#include <atspi/atspi-enum-types.h>
#include <dbus/dbus.h>
#include <atspi/atspi-types.h>
#include <atspi/atspi-misc.h>
