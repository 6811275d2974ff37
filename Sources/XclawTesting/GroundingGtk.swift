/// A GTK 3 app built from stock widgets (python3-gi) that reports every press on stdout as `pressed ID`, with the Tk
/// app's controls (`groundingTkTargets`): a keypad of single characters, word buttons, check and radio buttons, an
/// entry beside its "Name:" label, a list (a GtkTreeView, whose rows the accessibility tree leaves out) and a menubar.
/// Run with an accessibility bus its windows are served by their tree; without one, by per-control reading and OCR.
/// `argv[1]` picks the theme: default (Adwaita) or dark (Adwaita's dark variant).
public let groundingGtkSource = #"""
    import sys, gi
    gi.require_version("Gtk", "3.0")
    from gi.repository import Gtk, GLib

    variant = sys.argv[1] if len(sys.argv) > 1 else "default"
    title = sys.argv[2] if len(sys.argv) > 2 else "grounding gtk " + variant
    if variant == "dark":
        Gtk.Settings.get_default().set_property("gtk-application-prefer-dark-theme", True)

    def report(what):
        print("pressed " + what, flush=True)

    win = Gtk.Window(title=title)
    win.connect("destroy", Gtk.main_quit)
    outer = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=4)
    win.add(outer)

    menubar = Gtk.MenuBar()
    for name in ("File", "Edit", "View", "Help"):
        item = Gtk.MenuItem(label=name)
        menu = Gtk.Menu()
        close = Gtk.MenuItem(label="Close menu")
        menu.append(close)
        item.set_submenu(menu)
        menu.connect("show", lambda m, n=name: report("menu " + n))
        menubar.append(item)
    outer.pack_start(menubar, False, False, 0)

    top = Gtk.Box(orientation=Gtk.Orientation.HORIZONTAL, spacing=12, margin=6)
    outer.pack_start(top, False, False, 0)
    pad = Gtk.Grid(row_spacing=3, column_spacing=3)
    keys = [["7", "8", "9", "÷", "("], ["4", "5", "6", "×", ")"], ["1", "2", "3", "-", "%"],
            ["0", ".", "=", "+", "←"], ["√", "π", "C", "e", "E"]]
    for r, row in enumerate(keys):
        for c, key in enumerate(row):
            b = Gtk.Button(label=key)
            b.set_size_request(40, -1)
            b.connect("clicked", lambda w, k=key: report("key " + k))
            pad.attach(b, c, r, 1, 1)
    top.pack_start(pad, False, False, 0)

    words = Gtk.Grid(row_spacing=4, column_spacing=4)
    labels = ["Open", "Save", "Save As", "Don't Save", "Clear", "Clear Hot Spot", "Fill", "Flood Fill", "Apply",
              "Cancel", "OK", "Help me"]
    for i, label in enumerate(labels):
        b = Gtk.Button(label=label)
        b.connect("clicked", lambda w, l=label: report("button " + l))
        words.attach(b, i % 3, i // 3, 1, 1)
    top.pack_start(words, False, False, 0)

    store = Gtk.ListStore(str)
    for fruit in ["Apple", "Lemon", "Cherry", "Plum"]:
        store.append([fruit])
    view = Gtk.TreeView(model=store, headers_visible=False)
    view.append_column(Gtk.TreeViewColumn("Fruit", Gtk.CellRendererText(), text=0))
    view.set_size_request(120, -1)
    def selected(selection):
        model, it = selection.get_selected()
        if it is not None: report("row " + model[it][0])
    view.get_selection().connect("changed", selected)
    view.get_selection().unselect_all()
    top.pack_start(view, False, False, 0)

    form = Gtk.Grid(row_spacing=6, column_spacing=8, margin=6)
    outer.pack_start(form, False, False, 0)
    for i, label in enumerate(["Remember me", "Bold", "Italic"]):
        c = Gtk.CheckButton(label=label)
        c.connect("toggled", lambda w, l=label: report("check " + l))
        form.attach(c, i, 0, 1, 1)
    hidden = Gtk.RadioButton(label="none")
    for i, label in enumerate(["Small", "Medium", "Large"]):
        r = Gtk.RadioButton.new_with_label_from_widget(hidden, label)
        r.connect("toggled", lambda w, l=label: report("radio " + l) if w.get_active() else None)
        form.attach(r, i, 1, 1, 1)
    form.attach(Gtk.Label(label="Name:", xalign=1), 0, 2, 1, 1)
    entry = Gtk.Entry(width_chars=24)
    entry.connect("button-press-event", lambda w, e: report("entry Name") or False)
    form.attach(entry, 1, 2, 2, 1)

    win.show_all()
    def ready():
        view.get_selection().unselect_all()
        print("ready", flush=True)
        return False
    GLib.timeout_add(300, ready)
    Gtk.main()
    """#
