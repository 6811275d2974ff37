// The session-bus client of the desktop services (notifications, media, calendar, units): calls with a deadline,
// replies as JSON, and a queue of the signals (or, for a monitor, the messages) the connection was asked for.
// Arguments go in as GVariant text (`('title', uint32 0)`), which the Swift side writes from typed values.
#ifndef XCLAW_BUS_H
#define XCLAW_BUS_H

/// A private connection to one message bus.
typedef struct xclaw_bus xclaw_bus;

/// Connects to the bus at `address` (a D-Bus address, `unix:path=…`) and says Hello, giving up after `timeout_ms`;
/// NULL with `*error` set on failure. `monitor_rules` non-NULL (a NULL-terminated list, may be empty: everything)
/// turns the connection into a monitor (`BecomeMonitor`), which only receives.
xclaw_bus *xclaw_bus_open(const char *address, int timeout_ms, const char *const *monitor_rules, char **error);

/// Closes the connection and frees what it queued.
void xclaw_bus_close(xclaw_bus *bus);

/// The connection's unique name (`:1.42`).
const char *xclaw_bus_unique_name(xclaw_bus *bus);

/// Calls `method`; `args` is GVariant text of a tuple (NULL or "" for none). Returns 0 with `*reply` the reply's
/// values as a JSON array; -1 with `*error_name` (the D-Bus error name, or "xclaw.BadArguments" when `args` does not
/// parse) and `*error` set. A call unanswered after `timeout_ms` fails with org.freedesktop.DBus.Error.NoReply.
int xclaw_bus_call(xclaw_bus *bus, const char *destination, const char *path, const char *interface,
                   const char *method, const char *args, int timeout_ms, char **reply, char **error_name,
                   char **error);

/// Asks the bus to deliver the signals `match_rule` selects (AddMatch); they are queued for `xclaw_bus_next`.
/// 0, or -1 with `*error` set.
int xclaw_bus_subscribe(xclaw_bus *bus, const char *match_rule, int timeout_ms, char **error);

/// The next queued message as a JSON object (`type`, `sender`, `destination`, `path`, `interface`, `member`,
/// `serial`, `reply_serial`, `error_name`, `body`), waiting at most `timeout_ms`; NULL when none came, or when the
/// connection closed (then `*closed` is 1).
char *xclaw_bus_next(xclaw_bus *bus, int timeout_ms, int *closed);

/// Frees a string this library returned.
void xclaw_bus_free(char *s);

#endif
