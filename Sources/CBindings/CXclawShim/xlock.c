#include <X11/Xlibint.h>
#include <xcb/xcb.h>

#include "xclaw_shim.h"

// libX11's _XIOError (1.8.x) takes the display's user lock and releases its internal mutex for the exit it
// expects, then returns to its caller when the exit handler returns; that caller goes on as if it still held the
// mutex and releases it once more. Left so, another thread could enter Xlib on the same Display while the first
// still unwinds in it. Giving the user lock back and taking the mutex again leaves both as the caller expects.
void xclaw_display_io_error_returning(Display *dpy) {
    XUnlockDisplay(dpy);
    LockDisplay(dpy);
}

// libX11 keeps the XCB connection as the first member of its private `_X11XCBPrivate` (Xxcbint.h, unchanged since
// 2006); read so, rather than through libX11-xcb, whose development package Debian does not pull in with libx11-dev.
struct xclaw_x11xcb_private { xcb_connection_t *connection; };

// Freeing the Display of a connection whose server went away (XCloseDisplay, or its parts: the extensions' close
// hooks and _XFreeDisplayStructure) corrupted the daemon's heap about once in a hundred X server restarts under
// load; closing only the XCB connection never did in 600. So a lost connection closes its socket and XCB's buffers
// here, and Xlib's own structure is kept: nothing may call Xlib on `dpy` afterwards.
void xclaw_display_drop_lost(Display *dpy) {
    dpy->flags |= XlibDisplayIOError | XlibDisplayClosing;
    xcb_disconnect(((struct xclaw_x11xcb_private *)dpy->xcb)->connection);
}
