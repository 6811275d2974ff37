/// A small Motif app (libXm, compiled by the test with cc) that reports every press on stdout as `pressed LABEL`: a
/// keypad of single characters and word buttons, drawn by Motif in X's core fonts, which is what Motif apps on a
/// plain Debian look like. Debian has no small Motif app of its own to drive (nedit and ddd are large), so the suite
/// builds this one from stock widgets.
public let groundingMotifSource = #"""
    #include <Xm/Xm.h>
    #include <Xm/RowColumn.h>
    #include <Xm/PushB.h>
    #include <stdio.h>

    static void pressed(Widget w, XtPointer label, XtPointer call) {
        (void)w; (void)call;
        printf("pressed %s\n", (const char *)label);
        fflush(stdout);
    }

    int main(int argc, char **argv) {
        static const char *labels[] = {
            "7", "8", "9", "+", "C",
            "4", "5", "6", "-", "CE",
            "1", "2", "3", "=", "OK",
            "0", ".", "(", ")", "Cancel",
            "Apply", "Help", "Save", "Undo", "Redo",
        };
        XtAppContext app;
        Widget top = XtVaOpenApplication(&app, "Grounding", NULL, 0, &argc, argv, NULL, sessionShellWidgetClass,
                                         XmNtitle, argc > 1 ? argv[1] : "grounding motif", NULL);
        Widget keys = XtVaCreateManagedWidget("keys", xmRowColumnWidgetClass, top, XmNpacking, XmPACK_COLUMN,
                                              XmNnumColumns, 5, XmNorientation, XmHORIZONTAL, NULL);
        for (unsigned i = 0; i < sizeof labels / sizeof labels[0]; i++) {
            XmString text = XmStringCreateLocalized((char *)labels[i]);
            Widget button = XtVaCreateManagedWidget("key", xmPushButtonWidgetClass, keys, XmNlabelString, text, NULL);
            XmStringFree(text);
            XtAddCallback(button, XmNactivateCallback, pressed, (XtPointer)labels[i]);
        }
        XtRealizeWidget(top);
        XtAppMainLoop(app);
        return 0;
    }
    """#

/// The Motif app's targets: every key, by its label.
public let groundingMotifLabels = [
    "7", "8", "9", "+", "C", "4", "5", "6", "-", "CE", "1", "2", "3", "=", "OK", "0", ".", "(", ")", "Cancel", "Apply",
    "Help", "Save", "Undo", "Redo",
]
