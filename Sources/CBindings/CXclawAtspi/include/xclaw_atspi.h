// The AT-SPI2 reader: the accessibility tree over GDBus, for the `xclaw-atspi` helper process.
// Everything here blocks; the helper runs in its own process so an abort or a hung application never reaches xclaw.
#ifndef XCLAW_ATSPI_H
#define XCLAW_ATSPI_H

/// A connection to one accessibility bus.
typedef struct xa_reader xa_reader;

/// Keep nodes that are hidden or off screen (for `xclaw tree`).
#define XA_ALL 1
/// Ask every actionable node for its action names.
#define XA_ACTIONS 2
/// Walk every application, even those that answer Cache.GetItems (for measuring the two routes).
#define XA_WALK 4

/// The accessibility bus address the session bus at `session` advertises (`org.a11y.Bus.GetAddress`), or NULL
/// with `*error` set when nothing owns org.a11y.Bus (nothing is started: the name is checked before it is called).
char *xa_session_a11y_address(const char *session, int timeout_ms, char **error);

/// Connects to the accessibility bus at `address`; NULL with `*error` set on failure.
xa_reader *xa_open(const char *address, int timeout_ms, char **error);

/// Closes the connection.
void xa_close(xa_reader *reader);

/// The nodes of every application as one JSON object (see the helper's documentation); NULL with `*error` set.
/// `pid` > 0 restricts the dump to that process's applications.
char *xa_dump(xa_reader *reader, int flags, int pid, char **error);

/// Performs the action named `name` (case-insensitive; NULL or "" = the first) of the node; returns the action's
/// name (free with `xa_free`) or NULL with `*error` set.
char *xa_do_action(xa_reader *reader, const char *bus, const char *path, const char *name, char **error);

/// Gives the node the keyboard focus (`Component.GrabFocus`); 0 on success, -1 with `*error` set.
int xa_grab_focus(xa_reader *reader, const char *bus, const char *path, char **error);

/// Listens to the tree's events (children, states, properties, text, bounds, windows) and
/// counts them; each line read from `in_fd` is answered on `out_fd` with the count so far, once every event the bus
/// sent before the question has been counted (a Ping round trip). Returns 0 when `in_fd` ends, 3 when the bus goes.
int xa_watch(xa_reader *reader, int in_fd, int out_fd, char **error);

/// Frees a string this library returned.
void xa_free(char *s);

#endif
