// Scenes the tests of several layers share.

/// A fixture window with known text in several fonts, sizes and themes, buttons, check boxes, an empty field beside
/// its label and a repeated label.
public let perceptionWidgets: [String] = [
    "--text", "20,20,9x15,#000000:Plain label nine",
    "--text", "20,60,6x13,#000000:small six thirteen",
    "--text", "20,100,12x24,#000000:Large twelve",
    "--text", "20,150,10x20,#ffffff,#202020:Dark Mode Label",
    "--text", "20,200,9x15bold,#1a1a80:Bold blue words",
    "--button", "300,20,100,30:Save",
    "--button", "420,20,100,30:Cancel",
    "--checkbox", "300,130:Remember me",
    "--checkbox", "300,158:Keep me posted",
    "--text", "300,80,9x15,#000000:Name",
    "--field", "360,74,200,28",
    "--text", "20,250,9x15,#000000:Repeat",
    "--text", "300,250,9x15,#000000:Repeat",
]
