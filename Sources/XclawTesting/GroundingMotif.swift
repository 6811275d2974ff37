/// A small Motif app (libXm, compiled by the test with cc) that reports every press on stdout as `pressed LABEL`: a
/// keypad of single characters and word buttons, drawn by Motif in X's core fonts, which is what Motif apps on a
/// plain Debian look like, and a text field captioned "Name:" (a click on it reports `entry Name`); or, given `dialog` after its title, a question dialog (a stock XmMessageBox in a dialog
/// shell of its own over a main window) whose buttons are words whose capitals X's bitmap fonts draw alike ("Move",
/// "Name", "Window"). Debian has no small Motif app of its own to drive (nedit and ddd are large), so the suite
/// builds this one from stock widgets.
public let groundingMotifSource = #"""
    #include <Xm/Xm.h>
    #include <Xm/RowColumn.h>
    #include <Xm/PushB.h>
    #include <Xm/MessageB.h>
    #include <Xm/Label.h>
    #include <Xm/TextF.h>
    #include <stdio.h>
    #include <string.h>

    static void pressed(Widget w, XtPointer label, XtPointer call) {
        (void)w; (void)call;
        printf("pressed %s\n", (const char *)label);
        fflush(stdout);
    }

    static void clicked(Widget w, XtPointer label, XEvent *event, Boolean *go_on) {
        (void)w; (void)event; (void)go_on;
        printf("pressed %s\n", (const char *)label);
        fflush(stdout);
    }

    static Widget button(Widget parent, const char *label) {
        XmString text = XmStringCreateLocalized((char *)label);
        Widget b = XtVaCreateManagedWidget("key", xmPushButtonWidgetClass, parent, XmNlabelString, text, NULL);
        XmStringFree(text);
        XtAddCallback(b, XmNactivateCallback, pressed, (XtPointer)label);
        return b;
    }

    static void stock(Widget box, unsigned char child, const char *label) {
        XmString text = XmStringCreateLocalized((char *)label);
        Widget b = XmMessageBoxGetChild(box, child);
        XtVaSetValues(b, XmNlabelString, text, NULL);
        XmStringFree(text);
    }

    static int dialog(XtAppContext app, Widget top, const char *title) {
        static const char *extra[] = {"No", "Name", "Next", "Window", "Width", "Mode", "Menu", "Rename", "Wait"};
        XtRealizeWidget(top);
        Arg args[2];
        XmString message = XmStringCreateLocalized("Move the New file? Merge Names Now");
        XtSetArg(args[0], XmNmessageString, message);
        XtSetArg(args[1], XmNautoUnmanage, False);
        Widget box = XmCreateQuestionDialog(top, "question", args, 2);
        XmStringFree(message);
        XtVaSetValues(XtParent(box), XmNtitle, title, NULL);
        stock(box, XmDIALOG_OK_BUTTON, "Move");
        stock(box, XmDIALOG_CANCEL_BUTTON, "Merge");
        stock(box, XmDIALOG_HELP_BUTTON, "Maybe");
        XtAddCallback(box, XmNokCallback, pressed, (XtPointer) "Move");
        XtAddCallback(box, XmNcancelCallback, pressed, (XtPointer) "Merge");
        XtAddCallback(box, XmNhelpCallback, pressed, (XtPointer) "Maybe");
        for (unsigned i = 0; i < sizeof extra / sizeof extra[0]; i++) button(box, extra[i]);
        XtManageChild(box);
        XtAppMainLoop(app);
        return 0;
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
        int asked = argc > 2 && strcmp(argv[2], "dialog") == 0;
        Widget top = XtVaOpenApplication(&app, "Grounding", NULL, 0, &argc, argv, NULL, sessionShellWidgetClass,
                                         XmNtitle, asked ? "grounding motif main" : argc > 1 ? argv[1] : "grounding motif",
                                         NULL);
        if (asked) {
            XtVaSetValues(top, XmNwidth, 400, XmNheight, 300, NULL);
            return dialog(app, top, argv[1]);
        }
        Widget column = XtVaCreateManagedWidget("main", xmRowColumnWidgetClass, top, XmNorientation, XmVERTICAL, NULL);
        Widget keys = XtVaCreateManagedWidget("keys", xmRowColumnWidgetClass, column, XmNpacking, XmPACK_COLUMN,
                                              XmNnumColumns, 5, XmNorientation, XmHORIZONTAL, NULL);
        /* A text field named by its caption, which ends in a colon: a click on it is reported. */
        Widget row = XtVaCreateManagedWidget("row", xmRowColumnWidgetClass, column, XmNorientation, XmHORIZONTAL, NULL);
        XmString caption = XmStringCreateLocalized("Name:");
        XtVaCreateManagedWidget("caption", xmLabelWidgetClass, row, XmNlabelString, caption, NULL);
        XmStringFree(caption);
        Widget field = XtVaCreateManagedWidget("name", xmTextFieldWidgetClass, row, XmNcolumns, 20, NULL);
        XtAddEventHandler(field, ButtonPressMask, False, clicked, (XtPointer) "entry Name");
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

/// The Motif dialog's targets: every button, by its label.
public let groundingMotifDialogLabels = [
    "Move", "Merge", "Maybe", "No", "Name", "Next", "Window", "Width", "Mode", "Menu", "Rename", "Wait",
]

/// An xmessage button row of words whose capitals X's bitmap fonts draw alike ("M", "N", "W" and "H").
public let groundingXmessageCapitals = [
    "Move", "New", "Merge", "Maybe", "No", "Name", "Next", "Window", "Wait", "Width", "Menu",
]

/// The Motif app's targets: every key, by its label.
public let groundingMotifLabels = [
    "7", "8", "9", "+", "C", "4", "5", "6", "-", "CE", "1", "2", "3", "=", "OK", "0", ".", "(", ")", "Cancel", "Apply",
    "Help", "Save", "Undo", "Redo",
]
