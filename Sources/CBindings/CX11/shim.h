// Xlib core. XUTIL_DEFINE_FUNCTIONS turns the XDestroyImage/XGetPixel macros into callable functions.
#define XUTIL_DEFINE_FUNCTIONS 1
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/Xatom.h>
#include <X11/keysym.h>
#include <X11/XKBlib.h>
