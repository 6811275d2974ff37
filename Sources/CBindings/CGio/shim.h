// GDBus (gio-2.0), for the desktop services' session-bus client in CXclawBus.
#include <gio/gio.h>
