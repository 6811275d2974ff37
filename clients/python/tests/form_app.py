"""A Tk form the tests drive (python3-tk): it reports on stdout what happened to it, so what a test checks comes
from the app, never from xclaw. `pressed LABEL N` for each button (N tells the two "Save" buttons apart), `name=TEXT`
whenever the entry's text changes, and `ready` once it is drawn. "Start" shows "Done" in the status line a moment
later, for `watch`."""

import sys
import tkinter as tk
from tkinter import font as tkfont

title = sys.argv[1] if len(sys.argv) > 1 else "xclaw pytest form"
root = tk.Tk(className="Pyform")
root.title(title)
root.geometry("+40+40")
for font_name in ("TkDefaultFont", "TkTextFont"):
    tkfont.nametofont(font_name).configure(size=12)


def report(text):
    print(text, flush=True)


buttons = tk.Frame(root, padx=6, pady=6)
buttons.grid(row=0, column=0, sticky="w")
for number, label in enumerate(["OK", "Save", "Save", "Cancel", "Start"], start=1):
    tk.Button(buttons, text=label, command=lambda text=label, n=number: report(f"pressed {text} {n}")).grid(
        row=0, column=number, padx=6
    )

form = tk.Frame(root, padx=6, pady=6)
form.grid(row=1, column=0, sticky="w")
tk.Label(form, text="Name:").grid(row=0, column=0, sticky="e")
name = tk.StringVar()
name.trace_add("write", lambda *_: report("name=" + name.get()))
tk.Entry(form, textvariable=name, width=28).grid(row=0, column=1, padx=6)

status = tk.Label(root, text="Idle", padx=6, pady=6)
status.grid(row=2, column=0, sticky="w")


def start():
    report("pressed Start")
    # The scenario: the result shows up a moment after the press, as a real app's would.
    root.after(400, lambda: status.configure(text="Done"))


buttons.winfo_children()[-1].configure(command=start)

root.wait_visibility(root)
root.update()
root.after_idle(lambda: report("ready"))
root.mainloop()
