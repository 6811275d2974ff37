// XTest: synthetic input injected by the server as if from real devices.
#include <X11/Xlib.h>
#include <X11/extensions/XTest.h>
