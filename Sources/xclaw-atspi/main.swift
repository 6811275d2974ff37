// xclaw-atspi: reads the AT-SPI2 accessibility tree, or acts on one node, for xclaw.
//
// xclaw runs this as a child process with a deadline, so an application that hangs the bus, or a GLib abort, ends
// only this process: xclaw then falls back to OCR. It imports no Foundation, so it starts in a few milliseconds.
//
//   xclaw-atspi dump   (--bus ADDRESS | --session ADDRESS) [--all] [--actions] [--walk] [--pid N] [--timeout MS]
//   xclaw-atspi action (--bus ADDRESS | --session ADDRESS) BUS PATH [ACTION]
//   xclaw-atspi focus  (--bus ADDRESS | --session ADDRESS) BUS PATH
//   xclaw-atspi address --session ADDRESS
//   xclaw-atspi watch  (--bus ADDRESS | --session ADDRESS): counts the tree's events; each line on stdin is answered
//                      with the count so far on stdout (every event the bus sent before the question counted)
// Exit status: 0 done; 2 bad usage; 3 no accessibility bus or cannot connect; 4 the call failed.
import CXclawAtspi

#if canImport(Glibc)
    import Glibc
#endif

/// Writes `text` to a file descriptor in full.
func write(_ text: String, to fd: Int32) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n <= 0 { return }
        offset += n
    }
}

/// Prints `message` on stderr and exits with `status`.
func fail(_ message: String, _ status: Int32) -> Never {
    write("xclaw-atspi: \(message)\n", to: 2)
    exit(status)
}

/// Takes a C string the reader allocated.
func take(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
    guard let pointer else { return nil }
    defer { xa_free(pointer) }
    return String(cString: pointer)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    fail("usage: xclaw-atspi dump|action|focus|watch|address (--bus ADDRESS | --session ADDRESS) …", 2)
}
arguments.removeFirst()
var bus: String?, session: String?, pid: Int32 = 0, timeout: Int32 = 1000
var flags: Int32 = 0
var positional: [String] = []
var index = 0
while index < arguments.count {
    let argument = arguments[index]
    func value() -> String {
        index += 1
        guard index < arguments.count else { fail("\(argument) needs a value", 2) }
        return arguments[index]
    }
    switch argument {
    case "--bus": bus = value()
    case "--session": session = value()
    case "--pid":
        guard let number = Int32(value()), number > 0 else { fail("--pid needs a process id", 2) }
        pid = number
    case "--timeout":
        guard let number = Int32(value()), (1...600_000).contains(number) else {
            fail("--timeout needs milliseconds (1…600000)", 2)
        }
        timeout = number
    case "--all": flags |= XA_ALL
    case "--actions": flags |= XA_ACTIONS
    case "--walk": flags |= XA_WALK
    default:
        if argument.hasPrefix("--") { fail("unknown option \(argument)", 2) }
        positional.append(argument)
    }
    index += 1
}

var error: UnsafeMutablePointer<CChar>?
if bus == nil, let session {
    guard let address = take(xa_session_a11y_address(session, timeout, &error)) else {
        fail(take(error) ?? "no accessibility bus", 3)
    }
    bus = address
}
if command == "address" {
    guard let bus else { fail("address needs --session ADDRESS", 2) }
    write(bus + "\n", to: 1)
    exit(0)
}
guard let bus else { fail("\(command) needs --bus ADDRESS or --session ADDRESS", 2) }
guard let reader = xa_open(bus, timeout, &error) else { fail(take(error) ?? "cannot connect to \(bus)", 3) }

switch command {
case "dump":
    guard let json = take(xa_dump(reader, flags, pid, &error)) else { fail(take(error) ?? "dump failed", 4) }
    write(json, to: 1)
case "action":
    guard positional.count >= 2 else { fail("usage: xclaw-atspi action --bus ADDRESS BUS PATH [ACTION]", 2) }
    let name = positional.count > 2 ? positional[2] : ""
    guard let done = take(xa_do_action(reader, positional[0], positional[1], name, &error)) else {
        fail(take(error) ?? "the action failed", 4)
    }
    write(done + "\n", to: 1)
case "watch":
    let status = xa_watch(reader, 0, 1, &error)
    if status != 0 { fail(take(error) ?? "watching failed", status) }
case "focus":
    guard positional.count >= 2 else { fail("usage: xclaw-atspi focus --bus ADDRESS BUS PATH", 2) }
    guard xa_grab_focus(reader, positional[0], positional[1], &error) == 0 else {
        fail(take(error) ?? "could not focus", 4)
    }
default:
    fail("unknown command \(command) (dump, action, focus, watch, address)", 2)
}
xa_close(reader)
exit(0)
