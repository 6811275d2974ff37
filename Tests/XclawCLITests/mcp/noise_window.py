"""A window of random pixels (the worst case for PNG): `python3 noise_window.py WIDTH HEIGHT`, on $DISPLAY.

Prints "ready" once the window is mapped and drawn. Uses Tk (python3-tk) and a PPM of os.urandom bytes, so the
pixels are made in C, not in a Python loop.
"""

import os
import sys
import tempfile
import tkinter

width, height = int(sys.argv[1]), int(sys.argv[2])
with tempfile.NamedTemporaryFile(suffix=".ppm", delete=False) as ppm:
    ppm.write(b"P6 %d %d 255\n" % (width, height) + os.urandom(width * height * 3))
root = tkinter.Tk()
root.overrideredirect(True)
root.geometry("%dx%d+0+0" % (width, height))
image = tkinter.PhotoImage(file=ppm.name)
os.unlink(ppm.name)
tkinter.Label(root, image=image, borderwidth=0).pack()


def ready():
    print("ready", flush=True)


root.after(300, ready)
root.mainloop()
