"""How a command reaches xclaw: handed to the daemon over its socket, or run as a process of the `xclaw` binary.

The daemon's wire (Sources/Daemon/XclawWire/DaemonWire.swift, version 3): one JSON request line, sent together with
the command's stdin, stdout and stderr as SCM_RIGHTS descriptors; the daemon runs the command on those descriptors
and answers one line with its exit status. While it runs, a byte on the socket is a signal for the command (2:
Ctrl-C), and hanging up is SIGHUP. Here stdout and stderr are pipes of our own, read as the output arrives.

The daemon is found where the `xclaw` front looks (`$XCLAW_STATE_DIR`, else `$XDG_RUNTIME_DIR/xclaw`, else
`/tmp/xclaw-UID`, then `daemon.sock`), in a directory that is ours and that nobody else can write, and is asked only
when its peer credentials say it runs as our user. With none running, one is started (`xclaw daemon start --auto`,
or `daemon start` for an xclaw without `--auto`). With `XCLAW_NO_DAEMON=1`, `daemon=False`, or a daemon that cannot
be started, every command runs as a process of the binary with the same arguments, so the output is the same JSON.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import os
import shutil
import signal
import socket
import stat
import struct
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

from .errors import DaemonDied, NotInstalled

__all__ = ["Transport", "Completed", "SERVED_COMMANDS", "WIRE_VERSION", "resolve_binary", "state_directory"]

log = logging.getLogger("xclaw")

#: The daemon's protocol version (DaemonWire.version).
WIRE_VERSION = 3
#: The longest request line the daemon takes (DaemonWire.maximumRequest); a longer one runs as a process.
MAXIMUM_REQUEST = 1 << 20
#: The commands a daemon serves (ServedCommands.names); the rest always run as a process (`agent`, `display`…).
SERVED_COMMANDS = frozenset(
    [
        "move", "click", "mousedown", "mouseup", "drag", "scroll", "key", "type", "cursor", "windows", "activate",
        "keydown", "keyup", "release-all", "active", "window", "desktop", "clipboard",
        "monitors", "capture", "pixel", "ocr", "snapshot", "tree", "find", "tap", "watch", "wait-stable", "run",
        "send", "chat", "pipeline", "notify", "media", "units", "unit", "calendar", "contacts", "shortcuts",
    ]
)  # fmt: skip

Chunk = Callable[[bytes], None]


@dataclass(frozen=True)
class Completed:
    """A command that ran to its end: its exit status and everything it wrote."""

    arguments: tuple[str, ...]
    exit_code: int
    stdout: bytes
    stderr: bytes
    #: "daemon" or "process": who ran it.
    via: str


def resolve_binary(binary: Optional[str], environment: Mapping[str, str]) -> str:
    """The `xclaw` to run: `binary`, else `$XCLAW_BIN`, else `xclaw` on PATH; NotInstalled says how to get one."""
    wanted = binary or environment.get("XCLAW_BIN") or "xclaw"
    found = shutil.which(wanted, path=environment.get("PATH", os.defpath)) if os.sep not in wanted else wanted
    if not found or not os.access(found, os.X_OK):
        raise NotInstalled(
            f"cannot run xclaw ({wanted!r} is not an executable): build it with `swift build -c release` and put "
            ".build/release on PATH, or pass binary= / set XCLAW_BIN to its path",
            exit_code=5,
            kind="internal",
        )
    return os.path.abspath(found)


def state_directory(environment: Mapping[str, str]) -> Optional[str]:
    """The daemon's directory as the front finds it, when it is ours and nobody else can write it; else None."""
    if environment.get("XCLAW_STATE_DIR"):
        directory = environment["XCLAW_STATE_DIR"]
    elif environment.get("XDG_RUNTIME_DIR"):
        directory = os.path.join(environment["XDG_RUNTIME_DIR"], "xclaw")
    else:
        directory = f"/tmp/xclaw-{os.getuid()}"
    try:
        info = os.lstat(directory)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    return directory


class _Pipe:
    """Reads one pipe on the event loop as data arrives, handing each chunk on and keeping all of it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, on_chunk: Optional[Chunk]) -> None:
        self.loop, self.fd, self.on_chunk = loop, fd, on_chunk
        self.chunks: list[bytes] = []
        self.done: asyncio.Future[bytes] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._ready)

    def _ready(self) -> None:
        self.drain()

    def drain(self) -> None:
        """Reads what the pipe holds now (without waiting), closing it at EOF."""
        while self.fd >= 0:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.close()
                return
            self.chunks.append(data)
            if self.on_chunk:
                self.on_chunk(data)

    def close(self) -> None:
        """Stops reading and closes the descriptor (at EOF, or when the command is given up)."""
        if self.fd < 0:
            return
        self.loop.remove_reader(self.fd)
        os.close(self.fd)
        self.fd = -1
        if not self.done.done():
            self.done.set_result(b"".join(self.chunks))


class _Output:
    """A command's stdout and stderr as two pipes of our own, read as the output arrives.

    Before each stderr chunk is handed on, stdout is drained: what the command wrote to stdout before a stderr line
    (an agent's text before its tool call) is handed on first, whatever order the two pipes are noticed in.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, on_stdout: Optional[Chunk], on_stderr: Optional[Chunk]):
        out_read, self.out_write = os.pipe2(os.O_CLOEXEC)
        err_read, self.err_write = os.pipe2(os.O_CLOEXEC)
        self.out = _Pipe(loop, out_read, on_stdout)

        def stderr(data: bytes) -> None:
            self.out.drain()
            if on_stderr:
                on_stderr(data)

        self.err = _Pipe(loop, err_read, stderr)

    def given(self) -> None:
        """Closes our copies of the write ends once the command holds them (EOF then comes from its side)."""
        for fd in (self.out_write, self.err_write):
            if fd >= 0:
                os.close(fd)
        self.out_write = self.err_write = -1

    async def read(self) -> tuple[bytes, bytes]:
        """Everything written, once both pipes reached EOF."""
        stdout, stderr = await asyncio.gather(self.out.done, self.err.done)
        return stdout, stderr

    def close(self) -> None:
        """Stops reading (at the end, or when the command is given up)."""
        self.given()
        self.out.close()
        self.err.close()


class Transport:
    """Runs xclaw commands for one desktop: through the daemon when one runs (starting it if need be), else as
    processes of the binary."""

    def __init__(self, binary: str, overrides: Mapping[str, str], daemon: bool) -> None:
        self.binary = binary
        self.overrides = dict(overrides)
        # As the front reads it: any value but "" and "0" means no daemon.
        self.use_daemon = daemon and self.environment().get("XCLAW_NO_DAEMON", "") in ("", "0")
        self.started_daemon = False
        self._start_tried = False
        self._start_lock: Optional[asyncio.Lock] = None

    def environment(self) -> dict[str, str]:
        """The environment a command runs with: this process's, at the time of the call, with the client's over it."""
        environment = dict(os.environ)
        environment.update(self.overrides)
        return environment

    async def run(
        self,
        arguments: Sequence[str],
        *,
        stdin: Optional[bytes] = None,
        on_stdout: Optional[Chunk] = None,
        on_stderr: Optional[Chunk] = None,
    ) -> Completed:
        """Runs `xclaw ARGUMENTS` and waits for its end; output is handed to the callbacks as it arrives."""
        environment = self.environment()
        if self.use_daemon and arguments and arguments[0] in SERVED_COMMANDS:
            done = await self._through_daemon(arguments, environment, stdin, on_stdout, on_stderr)
            if done is not None:
                return done
        return await self._as_process(arguments, environment, stdin, on_stdout, on_stderr)

    async def _through_daemon(
        self,
        arguments: Sequence[str],
        environment: dict[str, str],
        stdin: Optional[bytes],
        on_stdout: Optional[Chunk],
        on_stderr: Optional[Chunk],
    ) -> Optional[Completed]:
        """The command run by the daemon; None when no daemon takes it (it then runs as a process)."""
        connection = await self._connect(environment)
        if connection is None:
            return None
        line = (
            json.dumps(
                {
                    "version": WIRE_VERSION,
                    "op": "run",
                    "arguments": list(arguments),
                    "environment": environment,
                    "directory": os.getcwd(),
                    "pid": os.getpid(),
                },
                separators=(",", ":"),
            ).encode()
            + b"\n"
        )
        if len(line) > MAXIMUM_REQUEST:
            connection.close()
            log.warning("the request (%d bytes) is more than the daemon takes; running xclaw as a process", len(line))
            return None
        loop = asyncio.get_running_loop()
        output = _Output(loop, on_stdout, on_stderr)
        in_read, in_write = os.pipe2(os.O_CLOEXEC) if stdin is not None else (os.open(os.devnull, os.O_RDONLY), -1)
        try:
            sent = socket.send_fds(connection, [line], [in_read, output.out_write, output.err_write])
            if sent < len(line):
                connection.sendall(line[sent:])
        except OSError:
            output.close()
            for fd in (in_read, in_write):
                if fd >= 0:
                    os.close(fd)
            connection.close()
            return None
        os.close(in_read)
        output.given()
        feeding = loop.run_in_executor(None, _feed, in_write, stdin) if in_write >= 0 else None
        connection.setblocking(False)
        try:
            reply = await _reply(loop, connection)
            stdout, stderr = await output.read()
            if feeding is not None:
                await feeding
        except asyncio.CancelledError:
            # Given up (a timeout, a task cancelled, an agent's events no longer read): the command is interrupted
            # as Ctrl-C would interrupt it, and the daemon answers for it.
            try:
                connection.send(bytes([signal.SIGINT]))
            except OSError:
                pass
            raise
        finally:
            output.close()
            connection.close()
        if reply is None:
            raise DaemonDied(
                "the daemon died during the command; its effect is unknown and it was not run again (run "
                "`xclaw release-all --everything` should a key or button still be down)",
                exit_code=5,
                kind="internal",
                command=arguments,
                stderr=stderr.decode(errors="replace"),
            )
        answer = json.loads(reply)
        if isinstance(answer.get("exit"), int):
            return Completed(tuple(arguments), answer["exit"], stdout, stderr, "daemon")
        # Refused before it ran (another protocol version, a request it does not take): run it here, as the front does.
        log.warning("the daemon refused the command (%s); running xclaw as a process", answer.get("error"))
        return None

    async def _connect(self, environment: Mapping[str, str]) -> Optional[socket.socket]:
        """A connection to this user's daemon, starting one the first time none answers."""
        connection = _connect_now(environment)
        if connection is not None or self._start_tried:
            return connection
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            connection = _connect_now(environment)
            if connection is not None or self._start_tried:
                return connection
            self._start_tried = True
            await self._start_daemon(environment)
            connection = _connect_now(environment)
            if connection is None:
                log.warning("no xclaw daemon could be started; running xclaw as a process per command")
                self.use_daemon = False
            return connection

    async def _start_daemon(self, environment: Mapping[str, str]) -> None:
        """`xclaw daemon start --auto` (one unless one runs), or `daemon start` for an xclaw without `--auto`."""
        for arguments in (["daemon", "start", "--auto"], ["daemon", "start"]):
            process = await asyncio.create_subprocess_exec(
                self.binary,
                *arguments,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(environment),
            )
            out, err = await process.communicate()
            if process.returncode == 2 and b"--auto" in err:
                continue  # an xclaw from before `--auto`
            if process.returncode == 0:
                self.started_daemon = True
            else:
                log.info("xclaw daemon start: exit %s: %s", process.returncode, err.decode(errors="replace").strip())
            return

    async def _as_process(
        self,
        arguments: Sequence[str],
        environment: dict[str, str],
        stdin: Optional[bytes],
        on_stdout: Optional[Chunk],
        on_stderr: Optional[Chunk],
    ) -> Completed:
        """The command as a process of the binary."""
        if not self.use_daemon:
            environment = {**environment, "XCLAW_NO_DAEMON": "1"}
        loop = asyncio.get_running_loop()
        output = _Output(loop, on_stdout, on_stderr)
        try:
            process = await asyncio.create_subprocess_exec(
                self.binary,
                *arguments,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=output.out_write,
                stderr=output.err_write,
                env=environment,
            )
        except BaseException:
            output.close()
            raise
        output.given()

        async def feed() -> None:
            if stdin is None or process.stdin is None:
                return
            try:
                process.stdin.write(stdin)
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                process.stdin.close()

        try:
            await feed()
            stdout, stderr = await output.read()
            code = await process.wait()
        except asyncio.CancelledError:
            if process.returncode is None:
                process.send_signal(signal.SIGINT)
            raise
        finally:
            output.close()
        return Completed(tuple(arguments), code, stdout, stderr, "process")


def _connect_now(environment: Mapping[str, str]) -> Optional[socket.socket]:
    """A connection to the daemon's socket when one answers as this user; None otherwise."""
    directory = state_directory(environment)
    if directory is None:
        return None
    path = os.path.join(directory, "daemon.sock")
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", credentials)
        if uid != os.getuid():
            log.warning("the daemon socket %s belongs to uid %d; running xclaw as a process", path, uid)
            connection.close()
            return None
        return connection
    except OSError:
        connection.close()
        return None


async def _reply(loop: asyncio.AbstractEventLoop, connection: socket.socket) -> Optional[bytes]:
    """The daemon's reply line; None when it hung up without one."""
    data = b""
    while b"\n" not in data:
        try:
            chunk = await loop.sock_recv(connection, 4096)
        except ConnectionError:  # reset by a daemon that died (a hang-up without a reply reads as b"")
            return None
        if not chunk:
            return None
        data += chunk
    return data.split(b"\n", 1)[0]


def _feed(fd: int, data: Optional[bytes]) -> None:
    """Writes the command's stdin and closes it (on a worker thread: a pipe holds 64 KiB, the command reads as it
    goes)."""
    try:
        view = memoryview(data or b"")
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError:
        pass
    finally:
        os.close(fd)


def decode_stream() -> Callable[[bytes], str]:
    """An incremental UTF-8 decoder: a character split across two chunks is decoded once both arrived."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return lambda data: decoder.decode(data)
