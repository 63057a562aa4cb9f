# SPDX-License-Identifier: MIT
"""A thread-safe client of `hs serve` (JSON lines on its stdin and stdout).

One reader thread reads every line hs serve writes and hands each reply to the
request waiting for it (matched by id); events go to the callbacks of their
request.  Approval questions are answered on a thread of their own, so that a
slow answer never stops other sessions' replies.  When hs serve exits, every
waiting request fails at once with ServerDied; a request that gets no reply in
its time fails with Timeout.
"""
import base64
import concurrent.futures
import itertools
import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import (IO, Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple,
                    Union, overload)

from .errors import HsError, ServerDied, Timeout, error_from_reply

Data = Union[str, bytes]
StreamCallback = Callable[[str, Data], None]

#: The answers an approval handler may give.
DECISIONS = ("once", "session", "always", "deny")
# hs serve refuses request lines longer than this (they are answered with id
# null, which no request could be matched to): refuse them here instead.
MAX_LINE = 16 << 20
# How long hs serve may hold one approval question before it denies it; a
# request's deadline grows by this (and a margin) for each question asked.
APPROVAL_WAIT = 300.0


@dataclass(frozen=True)
class ApprovalRequest:
    """One question of hs serve: may this command (or mount, or risk) go ahead?"""
    request: str
    command: str
    rules: List[Dict[str, Any]]
    session: Optional[str]
    raw: Dict[str, Any] = field(repr=False)


ApprovalHandler = Callable[[ApprovalRequest], str]


def deny_all(request: ApprovalRequest) -> str:
    """The default approval handler: nobody is there to answer, so deny."""
    return "deny"


@dataclass(frozen=True)
class Result:
    """What a foreground command gave.  stdout and stderr are str when the
    output was valid UTF-8, bytes otherwise; truncated means hs kept only the
    head and tail of a long stream; duration is in seconds.  stdout_bytes and
    stderr_bytes count the whole output; output_id (when the sandbox keeps
    it) reads any range of it back with Session.read_output."""
    exit_code: int
    stdout: Data
    stderr: Data
    truncated: bool
    timed_out: bool
    cancelled: bool
    duration: float
    jobs_left: int
    stdout_bytes: int
    stderr_bytes: int
    output_id: Optional[str]
    raw: Dict[str, Any] = field(repr=False)

    @property
    def ok(self) -> bool:
        """True when the command exited 0."""
        return self.exit_code == 0


@dataclass(frozen=True)
class JobOutput:
    """A slice of a job's output: data from the asked offset, where to go on
    from, and whether the offset fell in the middle hs dropped (gap)."""
    data: Data
    next_offset: int
    gap: bool
    raw: Dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Cursor:
    """Where a screen's cursor is (0-based)."""
    row: int
    col: int


@dataclass(frozen=True)
class Screen:
    """What a terminal shows for a job's output: its rows of text (trailing
    blanks trimmed), the cursor, the size (rows, cols) it was rendered at,
    whether a full-screen program switched to the alternate screen, and
    whether it was rendered from a later point of a long output (partial)."""
    rows: List[str]
    cursor: Cursor
    size: Tuple[int, int]
    alternate: bool
    partial: bool
    raw: Dict[str, Any] = field(repr=False)

    @property
    def text(self) -> str:
        """The rows as one text, a newline after each."""
        return "".join(row + "\n" for row in self.rows)


#: A terminal for a command: True (24x80) or (rows, cols).
Pty = Union[bool, Tuple[int, int]]


def decoded(reply: Mapping[str, Any], name: str) -> Data:
    """The member NAME of a reply: its text, or the bytes of NAME_b64."""
    if name + "_b64" in reply:
        return base64.b64decode(reply[name + "_b64"])
    value = reply.get(name, "")
    return value if isinstance(value, str) else str(value)


def as_bytes(value: Data) -> bytes:
    """value as bytes (text as UTF-8)."""
    return value if isinstance(value, bytes) else value.encode("utf-8")


def put_data(fields: Dict[str, Any], name: str, value: Data) -> None:
    """Set NAME (text) or NAME_b64 (bytes that are not valid UTF-8) in fields."""
    if isinstance(value, str):
        fields[name] = value
        return
    try:
        fields[name] = value.decode("utf-8")
    except UnicodeDecodeError:
        fields[name + "_b64"] = base64.b64encode(value).decode("ascii")


def find_hs(hs: Optional[str]) -> str:
    """The hs program to run: the argument, else $HS, else hs on PATH."""
    path = hs or os.environ.get("HS") or shutil.which("hs")
    if not path:
        raise HsError("cannot find 'hs': pass its path, set HS, or put it on PATH")
    return path


class _Pending:
    """A request sent and not yet answered."""
    __slots__ = ("rid", "op", "future", "on_output", "on_approval", "deadline", "session")

    def __init__(self, rid: int, op: str, session: Optional[str], on_output: Optional[StreamCallback],
                 on_approval: Optional[ApprovalHandler], timeout: Optional[float]) -> None:
        self.rid = rid
        self.op = op
        self.session = session
        self.future: "concurrent.futures.Future[Dict[str, Any]]" = concurrent.futures.Future()
        self.on_output = on_output
        self.on_approval = on_approval
        self.deadline = None if timeout is None else time.monotonic() + timeout


class Client:
    """One `hs serve`: spawned from hs (argument, $HS or PATH), or attached to
    pipes given as (to_server, from_server) binary streams.

    on_approval answers approval questions of every session that has no
    handler of its own (default: deny).  timeout bounds every request but a
    command's, which gets its own timeout plus reply_grace (and none when it
    has none).  Use it as a context manager, or call close().
    """

    def __init__(self, hs: Optional[str] = None, *, args: Sequence[str] = (),
                 env: Optional[Mapping[str, str]] = None,
                 pipes: Optional[Tuple[IO[bytes], IO[bytes]]] = None,
                 on_approval: Optional[ApprovalHandler] = None,
                 timeout: float = 120.0, open_timeout: float = 900.0,
                 reply_grace: float = 60.0, stderr: Any = None) -> None:
        self.timeout = timeout
        self.open_timeout = open_timeout
        self.reply_grace = reply_grace
        self.on_approval: ApprovalHandler = on_approval or deny_all
        self.process: Optional["subprocess.Popen[bytes]"] = None
        if pipes is not None:
            self._to, self._from = pipes
        else:
            argv = [find_hs(hs), *args, "serve"]
            try:
                self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=stderr, env=None if env is None else dict(env))
            except OSError as e:
                raise HsError("cannot start '%s serve': %s (pass hs's path or set HS)"
                              % (argv[0], e.strerror or e)) from None
            assert self.process.stdin is not None and self.process.stdout is not None
            self._to, self._from = self.process.stdin, self.process.stdout
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._wlock = threading.Lock()
        self._pending: Dict[int, _Pending] = {}
        self._dead: Optional[str] = None
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="hs-serve-reader", daemon=True)
        self._reader.start()

    # -- the wire -----------------------------------------------------------

    def _read(self) -> None:
        why = "hs serve closed its output"
        try:
            for line in self._from:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue  # not ours to judge: hs writes whole JSON lines
                if isinstance(msg, dict):
                    self._dispatch(msg)
        except (OSError, ValueError) as e:
            why = "reading from hs serve failed: %s" % e
        self._die(why)

    def _dispatch(self, msg: Dict[str, Any]) -> None:
        rid = msg.get("id")
        if not isinstance(rid, int):
            return  # not an answer to any request of ours
        with self._lock:
            p = self._pending.get(rid)
            if p is not None and "event" not in msg:
                del self._pending[rid]
        if p is None:
            return
        event = msg.get("event")
        if event is None:
            p.future.set_result(msg)
        elif event == "output" and p.on_output is not None:
            try:
                p.on_output(str(msg.get("stream", "stdout")), decoded(msg, "data"))
            except Exception:  # a failing callback must not stop the reader
                pass
        elif event == "approval":
            if p.deadline is not None:
                p.deadline += APPROVAL_WAIT + self.reply_grace
            threading.Thread(target=self._answer, args=(p, msg), name="hs-approval", daemon=True).start()

    def _answer(self, p: _Pending, msg: Dict[str, Any]) -> None:
        req = ApprovalRequest(request=str(msg.get("request", "")), command=str(msg.get("command", "")),
                              rules=list(msg.get("rules") or []), session=p.session, raw=msg)
        handler = p.on_approval or self.on_approval
        try:
            decision = handler(req)
        except Exception:
            decision = "deny"
        if decision not in DECISIONS:
            decision = "deny"
        try:
            self.call("approve", {"request": req.request, "decision": decision})
        except HsError:
            pass  # the question expired or the server went: the request's reply says so

    def _die(self, why: str) -> None:
        code = None
        if self.process is not None:
            try:
                code = self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        if code is not None and code < 0:
            why += " (killed by signal %d)" % -code
        elif code is not None:
            why += " (exit status %d)" % code
        with self._lock:
            if self._dead is None:
                self._dead = "client closed" if self._closed else why
            pending, self._pending = self._pending, {}
        for p in pending.values():
            p.future.set_exception(ServerDied(self._dead + "; request %r (%s) got no reply" % (p.rid, p.op)))

    def send(self, op: str, fields: Optional[Mapping[str, Any]] = None, *,
             timeout: Optional[float] = None, on_output: Optional[StreamCallback] = None,
             on_approval: Optional[ApprovalHandler] = None) -> _Pending:
        """Send a request; the returned handle is waited on with wait()."""
        fields = dict(fields or {})
        session = fields.get("session")
        with self._lock:
            if self._dead is not None:
                raise ServerDied(self._dead)
            rid = next(self._ids)
            p = _Pending(rid, op, session if isinstance(session, str) else None, on_output, on_approval, timeout)
            self._pending[rid] = p
        fields.update(id=rid, op=op)
        line = (json.dumps(fields, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            if len(line) > MAX_LINE:
                raise HsError("request %s is %d bytes; hs serve takes at most %d per line (send less data)"
                              % (op, len(line), MAX_LINE))
            with self._wlock:
                self._to.write(line)
                self._to.flush()
        except (OSError, ValueError) as e:
            self._forget(p)
            raise ServerDied("cannot write to hs serve: %s" % e) from None
        except HsError:
            self._forget(p)
            raise
        return p

    def _forget(self, p: _Pending) -> None:
        with self._lock:
            self._pending.pop(p.rid, None)

    def _expired(self, p: _Pending) -> Timeout:
        self._forget(p)
        return Timeout("hs serve gave no reply to %s (request %d) in time; it may be hung" % (p.op, p.rid))

    def wait(self, p: _Pending) -> Dict[str, Any]:
        """The reply to p; raises ServerError, ServerDied or Timeout."""
        while True:
            left = None if p.deadline is None else p.deadline - time.monotonic()
            if left is not None and left <= 0:
                raise self._expired(p)
            try:
                reply = p.future.result(timeout=1.0 if left is None else min(left, 1.0))
                break
            except concurrent.futures.TimeoutError:
                continue
        if not reply.get("ok"):
            raise error_from_reply(reply)
        return reply

    async def wait_async(self, p: _Pending) -> Dict[str, Any]:
        """wait(), for asyncio: the event loop is never blocked."""
        import asyncio
        fut = asyncio.wrap_future(p.future)
        while True:
            left = None if p.deadline is None else p.deadline - time.monotonic()
            if left is not None and left <= 0:
                fut.cancel()
                raise self._expired(p)
            done, _ = await asyncio.wait([fut], timeout=1.0 if left is None else min(left, 1.0))
            if done:
                reply = fut.result()
                break
        if not reply.get("ok"):
            raise error_from_reply(reply)
        return reply

    def call(self, op: str, fields: Optional[Mapping[str, Any]] = None, *,
             timeout: Optional[float] = None) -> Dict[str, Any]:
        """Send a request and return its reply (timeout: this client's)."""
        return self.wait(self.send(op, fields, timeout=self.timeout if timeout is None else timeout))

    # -- the operations -----------------------------------------------------

    def hello(self) -> Dict[str, Any]:
        """The server's version and protocol number."""
        return self.call("hello")

    def backends(self, deep: bool = False) -> List[Dict[str, Any]]:
        """The backends hs knows, as `hs backends --json` lists them."""
        return list(self.call("backends", {"deep": deep}).get("backends", []))

    def check(self, command: str, *, context: Optional[str] = None,
              approval: Optional[str] = None) -> Dict[str, Any]:
        """The policy verdict for a command, without running it."""
        fields: Dict[str, Any] = {"command": command}
        if context is not None:
            fields["context"] = context
        if approval is not None:
            fields["approval"] = approval
        return self.call("check", fields)

    def open(self, backend: str = "local", *, session: Optional[str] = None,
             on_approval: Optional[ApprovalHandler] = None, **options: Any) -> "Session":
        """Open a session (a fresh name unless one is given) on a backend.
        options are the open request's members: image, mounts, network, memory,
        cpus, isolate, workspace, cwd, persistent, approval."""
        fields = open_fields(backend, session, options)
        p = self.send("open", fields, timeout=self.open_timeout, on_approval=on_approval)
        return Session(self, self.wait(p), on_approval)

    def close(self, timeout: float = 30.0) -> Optional[int]:
        """End hs serve: its input is closed (non-persistent sessions are torn
        down), then it is waited for (killed after timeout).  Returns its exit
        status when this client started it."""
        with self._lock:
            self._closed = True
        try:
            with self._wlock:
                self._to.close()
        except OSError:
            pass
        code = None
        if self.process is not None:
            try:
                code = self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                code = self.process.wait()
        self._reader.join(timeout=timeout)
        return code

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_fields(backend: str, session: Optional[str], options: Mapping[str, Any]) -> Dict[str, Any]:
    """The members of an open request."""
    fields: Dict[str, Any] = {"backend": backend, "session": session or "py-" + uuid.uuid4().hex[:12]}
    fields.update((k, v) for k, v in options.items() if v is not None)
    return fields


def exec_fields(session: str, command: str, timeout: Optional[float], cwd: Optional[str],
                env: Optional[Mapping[str, str]], stdin: Optional[Data], stream: bool,
                background: bool, approval: Optional[str], pty: Optional[Pty] = None,
                stdin_open: bool = False) -> Dict[str, Any]:
    """The members of an exec request."""
    fields: Dict[str, Any] = {"session": session, "command": command}
    if isinstance(pty, tuple):
        fields["pty"] = {"rows": int(pty[0]), "cols": int(pty[1])}
    elif pty:
        fields["pty"] = True
    if stdin_open:
        fields["stdin_open"] = True
    if timeout is not None:
        fields["timeout"] = timeout
    if cwd is not None:
        fields["cwd"] = cwd
    if env is not None:
        fields["env"] = dict(env)
    if stdin is not None:
        put_data(fields, "stdin", stdin)
    if stream:
        fields["stream"] = True
    if background:
        fields["background"] = True
    if approval is not None:
        fields["approval"] = approval
    return fields


def to_result(reply: Dict[str, Any]) -> Result:
    """The Result of an exec reply."""
    return Result(exit_code=int(reply.get("exit_code", -1)), stdout=decoded(reply, "stdout"),
                  stderr=decoded(reply, "stderr"), truncated=bool(reply.get("truncated")),
                  timed_out=bool(reply.get("timed_out")), cancelled=bool(reply.get("cancelled")),
                  duration=float(reply.get("duration_ms", 0)) / 1000.0,
                  jobs_left=int(reply.get("jobs_left", 0)),
                  stdout_bytes=int(reply.get("stdout_bytes", 0)),
                  stderr_bytes=int(reply.get("stderr_bytes", 0)),
                  output_id=reply.get("output_id"), raw=reply)


def write_fields(data: Data, eof: bool) -> Dict[str, Any]:
    """The members of a write_stdin request (but session and job)."""
    fields: Dict[str, Any] = {}
    if isinstance(data, bytes):
        fields["data_b64"] = base64.b64encode(data).decode("ascii")
    elif data:
        fields["data"] = data
    if eof:
        fields["eof"] = True
    return fields


def screen_fields(rows: Optional[int], cols: Optional[int]) -> Dict[str, Any]:
    """The members of a job output request for the screen."""
    fields: Dict[str, Any] = {"screen": True}
    if rows is not None:
        fields["rows"] = rows
    if cols is not None:
        fields["cols"] = cols
    return fields


def to_screen(reply: Dict[str, Any]) -> Screen:
    """The Screen of a job output reply with screen."""
    shot = reply.get("screen") or {}
    cur = shot.get("cursor") or {}
    size = shot.get("size") or {}
    return Screen(rows=[str(r) for r in shot.get("rows") or []],
                  cursor=Cursor(int(cur.get("row", 0)), int(cur.get("col", 0))),
                  size=(int(size.get("rows", 0)), int(size.get("cols", 0))),
                  alternate=bool(shot.get("alternate")), partial=bool(shot.get("partial")), raw=shot)


def output_fields(session: str, output_id: str, stream: str, offset: int,
                  length: Optional[int]) -> Dict[str, Any]:
    """The members of an output (range) request."""
    fields: Dict[str, Any] = {"session": session, "output_id": output_id, "stream": stream,
                              "offset": offset}
    if length is not None:
        fields["length"] = length
    return fields


def to_job_output(reply: Dict[str, Any]) -> JobOutput:
    """The JobOutput of a job output reply."""
    return JobOutput(data=decoded(reply, "data"), next_offset=int(reply.get("next_offset", 0)),
                     gap=bool(reply.get("gap")), raw=reply)


class Session:
    """A session of hs serve: one sandbox and its persistent shell."""

    def __init__(self, client: Client, info: Dict[str, Any],
                 on_approval: Optional[ApprovalHandler] = None) -> None:
        self.client = client
        self.info = info
        self.name: str = str(info["session"])
        self.on_approval = on_approval
        self.closed = False

    def _budget(self, timeout: Optional[float], wait: Optional[float]) -> Optional[float]:
        if wait is not None:
            return wait
        return None if timeout is None else timeout + self.client.reply_grace

    @overload
    def exec(self, command: str, *, timeout: Optional[float] = ..., cwd: Optional[str] = ...,
             env: Optional[Mapping[str, str]] = ..., stdin: Optional[Data] = ...,
             stream: Optional[StreamCallback] = ..., background: "Literal[False]" = ...,
             approval: Optional[str] = ..., on_approval: Optional[ApprovalHandler] = ...,
             wait: Optional[float] = ..., pty: Optional[Pty] = ...,
             stdin_open: bool = ...) -> Result: ...

    @overload
    def exec(self, command: str, *, timeout: Optional[float] = ..., cwd: Optional[str] = ...,
             env: Optional[Mapping[str, str]] = ..., stdin: Optional[Data] = ...,
             stream: Optional[StreamCallback] = ..., background: "Literal[True]",
             approval: Optional[str] = ..., on_approval: Optional[ApprovalHandler] = ...,
             wait: Optional[float] = ..., pty: Optional[Pty] = ...,
             stdin_open: bool = ...) -> "Job": ...

    def exec(self, command: str, *, timeout: Optional[float] = None, cwd: Optional[str] = None,
             env: Optional[Mapping[str, str]] = None, stdin: Optional[Data] = None,
             stream: Optional[StreamCallback] = None, background: bool = False,
             approval: Optional[str] = None, on_approval: Optional[ApprovalHandler] = None,
             wait: Optional[float] = None, pty: Optional[Pty] = None,
             stdin_open: bool = False) -> Union[Result, "Job"]:
        """Run command in the session shell.  timeout (seconds) is the
        command's deadline: hs kills it and all it started, exit code 124.
        stream(stream_name, data) is called with live output, on the reader
        thread (keep it short).  background=True returns a Job at once.
        pty=True (24x80) or (rows, cols) runs it on a pseudo-terminal (its
        output is the terminal stream, as stdout); stdin_open=True keeps a
        background job's stdin open for Job.write.  wait bounds the wait for
        the reply (default: timeout + reply_grace, unbounded without a
        timeout).  A denied command raises Denied."""
        p = self._send_exec(command, timeout, cwd, env, stdin, stream, background, approval, on_approval, wait,
                            pty, stdin_open)
        return self._finish_exec(self.client.wait(p), background)

    def _send_exec(self, command: str, timeout: Optional[float], cwd: Optional[str],
                   env: Optional[Mapping[str, str]], stdin: Optional[Data], stream: Optional[StreamCallback],
                   background: bool, approval: Optional[str], on_approval: Optional[ApprovalHandler],
                   wait: Optional[float], pty: Optional[Pty] = None, stdin_open: bool = False) -> _Pending:
        fields = exec_fields(self.name, command, timeout, cwd, env, stdin, stream is not None, background, approval,
                             pty, stdin_open)
        budget = self.client.timeout if background and wait is None else self._budget(timeout, wait)
        return self.client.send("exec", fields, timeout=budget, on_output=stream,
                                on_approval=on_approval or self.on_approval)

    def _finish_exec(self, reply: Dict[str, Any], background: bool) -> Union[Result, "Job"]:
        if background:
            return Job(self, str(reply["job"]))
        return to_result(reply)

    def cancel(self) -> bool:
        """Cancel the running foreground command (TERM, grace, KILL)."""
        return bool(self.client.call("cancel", {"session": self.name}).get("cancelled"))

    def job(self, job: str) -> "Job":
        """A handle on a job by name (j1 for a background exec, sN for what a
        command left running in the shell)."""
        return Job(self, job)

    def jobs(self) -> List[Dict[str, Any]]:
        """What the session shell runs in the background."""
        return list(self.client.call("job", {"session": self.name, "action": "list"}).get("jobs", []))

    def put_file(self, path: str, data: Data, mode: Optional[int] = None) -> None:
        """Write a file inside the sandbox, atomically (bytes or text)."""
        self.client.call("put_file", put_fields(self.name, path, data, mode))

    def get_file(self, path: str) -> bytes:
        """The bytes of a file inside the sandbox."""
        return as_bytes(decoded(self.client.call("get_file", {"session": self.name, "path": path}), "data"))

    def read_output(self, output_id: str, stream: str = "stdout", offset: int = 0,
                    length: Optional[int] = None) -> JobOutput:
        """A range of a finished (or running) command's whole output, by the
        output_id of its Result; gap is true when part of the range was
        evicted (data then starts later: see raw["offset"])."""
        return to_job_output(self.client.call("output", output_fields(self.name, output_id, stream, offset,
                                                                      length)))

    def close(self) -> None:
        """Tear the session's environment down (what it runs is stopped)."""
        if self.closed:
            return
        self.client.call("close", {"session": self.name}, timeout=self.client.open_timeout)
        self.closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.close()
        except ServerDied:
            pass  # nothing left to close


def put_fields(session: str, path: str, data: Data, mode: Optional[int]) -> Dict[str, Any]:
    """The members of a put_file request."""
    fields: Dict[str, Any] = {"session": session, "path": path}
    put_data(fields, "data", data)
    if mode is not None:
        fields["mode"] = mode
    return fields


class Job:
    """A background command (j1, ...) or what a command left running (sN)."""

    def __init__(self, session: Session, name: str) -> None:
        self.session = session
        self.name = name

    def _call(self, action: str, **extra: Any) -> Dict[str, Any]:
        fields = {"session": self.session.name, "job": self.name, "action": action}
        fields.update(extra)
        return self.session.client.call("job", fields)

    def poll(self) -> Dict[str, Any]:
        """The job's state: running, exit_code, timed_out, cancelled, ..."""
        return self._call("poll")

    def output(self, offset: int = 0, stream: str = "stdout") -> JobOutput:
        """The job's output on one stream from offset."""
        return to_job_output(self._call("output", offset=offset, stream=stream))

    def kill(self) -> bool:
        """Stop the job as a deadline would."""
        return bool(self._call("kill").get("killed", True))

    def write(self, data: Data, eof: bool = False) -> int:
        """Type data (text, or bytes) into the job's terminal or open stdin,
        then with eof end its input; the bytes delivered.  What is written
        into a shell or an interpreter is judged like a command first: a
        refused write raises Denied and delivers nothing."""
        fields = dict(write_fields(data, eof), session=self.session.name, job=self.name)
        return int(self.session.client.call("write_stdin", fields).get("written", 0))

    def resize(self, rows: int, cols: int) -> None:
        """Set the window size of the job's terminal (a pty job)."""
        self.session.client.call("resize", {"session": self.session.name, "job": self.name,
                                            "rows": rows, "cols": cols})

    def screen(self, rows: Optional[int] = None, cols: Optional[int] = None) -> Screen:
        """What a terminal shows for the job's output, at rows x cols (default:
        the job's terminal size, else 24x80)."""
        return to_screen(self._call("output", **screen_fields(rows, cols)))

    def wait(self, timeout: Optional[float] = None, interval: float = 0.2) -> Dict[str, Any]:
        """Poll until the job is no longer running; its last poll.  Raises
        Timeout after timeout seconds (the job runs on)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.poll()
            if not state.get("running"):
                return state
            if end is not None and time.monotonic() >= end:
                raise Timeout("job %s still running after %.0f s" % (self.name, timeout or 0))
            time.sleep(interval)
            interval = min(interval * 1.5, 2.0)

    def __repr__(self) -> str:
        return "Job(%r, session=%r)" % (self.name, self.session.name)

