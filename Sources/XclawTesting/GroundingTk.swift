/// A Tk app built from stock widgets (python3-tk) that reports every press on stdout as `pressed ID`: the ground truth
/// of the grounding suite comes from the app, never from xclaw. Its widgets are the controls users tap by label: a
/// keypad of single characters, word buttons (whole labels inside longer ones, look-alikes), check and radio buttons,
/// an entry beside its "Name:" label, a menubar and a list. `argv[1]` picks the variant: default, dark, small (7 points), 8pt or 2x.
public let groundingTkSource = #"""
    import sys, tkinter as tk
    from tkinter import font as tkfont

    variant = sys.argv[1] if len(sys.argv) > 1 else "default"
    title = sys.argv[2] if len(sys.argv) > 2 else "grounding " + variant
    root = tk.Tk(className="Grounding")
    root.title(title)
    size = {"default": 10, "dark": 10, "small": 7, "8pt": 8, "2x": 10}[variant]
    if variant == "2x":
        root.tk.call("tk", "scaling", 2.0)
    for name in ("TkDefaultFont", "TkTextFont", "TkMenuFont"):
        tkfont.nametofont(name).configure(size=size)
    colours = {}
    if variant == "dark":
        colours = dict(bg="#2b2b2b", fg="#e6e6e6", activebackground="#3c3c3c", activeforeground="#ffffff",
                       highlightbackground="#2b2b2b")
        root.configure(bg="#2b2b2b")

    def report(what):
        print("pressed " + what, flush=True)

    def frame(parent):
        f = tk.Frame(parent, padx=4, pady=4)
        if colours: f.configure(bg=colours["bg"])
        return f

    menubar = tk.Menu(root)
    for name in ("File", "Edit", "View", "Help"):
        m = tk.Menu(menubar, tearoff=0, postcommand=lambda n=name: report("menu " + n))
        m.add_command(label="Close menu", command=lambda: None)
        menubar.add_cascade(label=name, menu=m)
        if colours: m.configure(bg=colours["bg"], fg=colours["fg"])
    if colours: menubar.configure(bg=colours["bg"], fg=colours["fg"])
    root.configure(menu=menubar)

    keys = [["7", "8", "9", "÷", "("], ["4", "5", "6", "×", ")"], ["1", "2", "3", "-", "%"],
            ["0", ".", "=", "+", "←"], ["√", "π", "C", "e", "E"]]
    pad = frame(root)
    pad.grid(row=0, column=0, sticky="nw")
    for r, row in enumerate(keys):
        for c, key in enumerate(row):
            b = tk.Button(pad, text=key, width=3, command=lambda k=key: report("key " + k), **colours)
            b.grid(row=r, column=c, padx=2, pady=2)

    words = frame(root)
    words.grid(row=0, column=1, sticky="nw")
    labels = ["Open", "Save", "Save As", "Don't Save", "Clear", "Clear Hot Spot", "Fill", "Flood Fill", "Apply",
              "Cancel", "OK", "Help me"]
    for i, label in enumerate(labels):
        b = tk.Button(words, text=label, command=lambda l=label: report("button " + l), **colours)
        b.grid(row=i // 3, column=i % 3, padx=3, pady=3, sticky="we")

    form = frame(root)
    form.grid(row=1, column=0, columnspan=2, sticky="nw")
    checks = {}
    for i, label in enumerate(["Remember me", "Bold", "Italic"]):
        v = tk.IntVar()
        checks[label] = v
        tk.Checkbutton(form, text=label, variable=v, command=lambda l=label: report("check " + l),
                       **({k: colours[k] for k in ("bg", "fg", "activebackground", "activeforeground")} if colours else {})
                       ).grid(row=0, column=i, padx=4, sticky="w")
    choice = tk.StringVar(value="")
    for i, label in enumerate(["Small", "Medium", "Large"]):
        tk.Radiobutton(form, text=label, value=label, variable=choice, command=lambda l=label: report("radio " + l),
                       **({k: colours[k] for k in ("bg", "fg", "activebackground", "activeforeground")} if colours else {})
                       ).grid(row=1, column=i, padx=4, sticky="w")
    tk.Label(form, text="Name:", **({k: colours[k] for k in ("bg", "fg")} if colours else {})).grid(
        row=2, column=0, sticky="e")
    entry = tk.Entry(form, width=24, **({"bg": "#1e1e1e", "fg": colours["fg"], "insertbackground": colours["fg"]}
                                        if colours else {}))
    entry.grid(row=2, column=1, columnspan=2, sticky="w", pady=6)
    entry.bind("<Button-1>", lambda e: report("entry Name"))

    rows = tk.Listbox(form, height=4, exportselection=False,
                      **({"bg": "#1e1e1e", "fg": colours["fg"], "selectbackground": "#3a5f8f"} if colours else {}))
    for fruit in ["Apple", "Lemon", "Cherry", "Plum"]:
        rows.insert("end", fruit)
    rows.grid(row=0, column=3, rowspan=3, padx=12, sticky="n")
    rows.bind("<<ListboxSelect>>", lambda e: report("row " + rows.get(rows.curselection()[0])) if rows.curselection() else None)

    root.update_idletasks()
    print("ready %d" % root.winfo_id(), flush=True)
    root.mainloop()
    """#

/// What a tap on each control of the Tk app must make it report, by the label a user would tap.
public let groundingTkTargets: [(label: String, expected: String, role: String?)] =
    [
        "7", "8", "9", "÷", "(", "4", "5", "6", "×", ")", "1", "2", "3", "-", "%", "0", ".", "=", "+", "←", "√", "π",
        "C", "e", "E",
    ].map { ($0, "key " + $0, nil) }
    + [
        "Open", "Save", "Save As", "Don't Save", "Clear", "Clear Hot Spot", "Fill", "Flood Fill", "Apply", "Cancel",
        "OK", "Help me",
    ].map { ($0, "button " + $0, nil) }
    + ["Remember me", "Bold", "Italic"].map { ($0, "check " + $0, nil) }
    + ["Small", "Medium", "Large"].map { ($0, "radio " + $0, nil) }
    + [("Name", "entry Name", "field")]
    + ["Apple", "Lemon", "Cherry", "Plum"].map { ($0, "row " + $0, nil) }
    + ["File", "Edit", "View", "Help"].map { ($0, "menu " + $0, nil) }
