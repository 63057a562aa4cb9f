# SPDX-License-Identifier: MIT
"""HsEnvironment: an hs session in the shape of Hermes's execution environments.

A runtime built on Hermes's environments (tools/environments: LocalEnvironment,
DockerEnvironment, SSHEnvironment, ...) swaps one class: execute(command,
cwd="", *, timeout=None, stdin_data=None) returns {"output": str,
"returncode": int} with stdout and stderr merged in the order they were
written, 124 and "[Command timed out after Ns]" at the deadline, 130 and
"[Command interrupted]" after interrupt(), and Hermes's head/tail truncation
notice; cleanup() tears the sandbox down.
"""
import codecs
import threading
from typing import Any, Dict, List, Mapping, Optional

from .client import ApprovalHandler, Client, Data, Session
from .errors import Denied, ServerDied, ServerError

BACKENDS = ("local", "docker", "ssh", "singularity", "modal", "daytona", "slurm")
# Hermes's default bound on what one command returns (tool_output.max_bytes).
DEFAULT_MAX_OUTPUT = 50_000
# Exit status of a command hs refused (policy or a denied approval): like a
# shell's "cannot execute".
DENIED_EXIT = 126


def truncation_notice(omitted: int, total: int) -> str:
    """Hermes's notice for output whose middle was left out."""
    return "\n\n... [OUTPUT TRUNCATED - %s chars omitted out of %s total] ...\n\n" % (
        format(omitted, ","), format(total, ","))


def fit(head: str, tail: str, total: int, limit: int, suffix: str = "") -> str:
    """head + tail (all of the output when total fits) within limit chars,
    Hermes's way: 40% head, 60% tail around the notice, a status suffix kept."""
    if len(suffix) >= limit:
        return suffix[-limit:]
    room = limit - len(suffix)
    if total <= room:
        return head + tail + suffix
    notice = ""
    for _ in range(4):  # the notice's length depends on the count it gives
        new = truncation_notice(max(0, total - max(0, room - len(notice))), total)
        if new == notice:
            break
        notice = new
    budget = max(0, room - len(notice))
    keep_head = int(budget * 0.4)
    keep_tail = budget - keep_head
    return head[:keep_head] + notice[:room] + (tail[-keep_tail:] if keep_tail else "") + suffix


class MergedOutput:
    """stdout and stderr as one text in arrival order, holding at most the
    first 40% and last 60% of limit chars however much comes."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.head_limit = int(self.limit * 0.4)
        self.head: List[str] = []
        self.head_len = 0
        self.tail = ""
        self.total = 0
        self.lock = threading.Lock()
        self.decoders = {name: codecs.getincrementaldecoder("utf-8")(errors="replace")
                         for name in ("stdout", "stderr")}

    def add(self, stream: str, data: Data) -> None:
        """A stream callback: one output event's data."""
        dec = self.decoders.get(stream) or self.decoders["stdout"]
        self.append(dec.decode(data if isinstance(data, bytes) else data.encode("utf-8")))

    def flush(self) -> None:
        """Add what the decoders still hold (a cut-off UTF-8 sequence)."""
        for dec in self.decoders.values():
            self.append(dec.decode(b"", final=True))

    def append(self, text: str) -> None:
        if not text:
            return
        with self.lock:
            self.total += len(text)
            take = min(len(text), self.head_limit - self.head_len)
            if take > 0:
                self.head.append(text[:take])
                self.head_len += take
                text = text[take:]
            if text:
                self.tail = (self.tail + text)[-(self.limit - self.head_limit):]

    def render(self, suffix: str = "") -> str:
        with self.lock:
            return fit("".join(self.head), self.tail, self.total, self.limit, suffix)


def as_text(value: Data) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", errors="replace")


def open_options(backend: str, image: Optional[str], options: Dict[str, Any]) -> Dict[str, Any]:
    """The open request's members from Hermes-style constructor arguments:
    cpu -> cpus, memory in MB (an int, as Hermes takes it) -> "Nm", volumes ->
    mounts, persistent_filesystem -> persistent; the rest as hs names them."""
    if backend not in BACKENDS:
        raise ValueError("unknown backend %r: use one of %s" % (backend, ", ".join(BACKENDS)))
    out: Dict[str, Any] = {}
    if image is not None:
        out["image"] = image
    for hermes_name, hs_name in (("cpu", "cpus"), ("volumes", "mounts"),
                                 ("persistent_filesystem", "persistent")):
        if hermes_name in options:
            out[hs_name] = options.pop(hermes_name)
    memory = options.pop("memory", None)
    if isinstance(memory, int) and not isinstance(memory, bool):
        out["memory"] = "%dm" % memory
    elif memory is not None:
        out["memory"] = memory
    out.update((k, v) for k, v in options.items() if v is not None)
    return out


class HsEnvironment:
    """An execution environment of Hermes's shape on one hs session.

    backend: local, docker, ssh, singularity, modal, daytona or slurm;
    image: the container image (docker, singularity, modal, daytona); cwd:
    where commands run unless execute() names another (an absolute path);
    timeout: the default deadline in seconds; env: variables given to every
    command; task_id: names the session (hermes-TASK_ID); on_approval: the
    answer to a command that needs approval (default: deny); client: an
    existing Client to share (else one hs serve is started, from hs, $HS or
    PATH); max_output_chars: Hermes's tool_output.max_bytes.  Other keyword
    arguments are the open request's members (network, memory, cpus, mounts,
    isolate, workspace, persistent, approval), with Hermes's names accepted
    (cpu, memory in MB, volumes, persistent_filesystem).
    """

    def __init__(self, backend: str = "local", image: Optional[str] = None, cwd: str = "",
                 timeout: int = 60, env: Optional[Mapping[str, str]] = None, *,
                 task_id: Optional[str] = None, on_approval: Optional[ApprovalHandler] = None,
                 client: Optional[Client] = None, hs: Optional[str] = None,
                 max_output_chars: int = DEFAULT_MAX_OUTPUT, **options: Any) -> None:
        self.backend = backend
        self.cwd = cwd
        self.timeout = timeout
        self.env = dict(env or {})
        self.max_output_chars = max_output_chars
        opts = open_options(backend, image, dict(options))
        if cwd.startswith("/") and "cwd" not in opts:
            opts["cwd"] = cwd
        self._own_client = client is None
        self.client = client or Client(hs)
        self._lock = threading.Lock()
        self._interrupted = False
        try:
            self.session: Optional[Session] = self.client.open(
                backend, session="hermes-" + task_id if task_id else None, on_approval=on_approval, **opts)
        except BaseException:
            if self._own_client:
                self.client.close()
            raise
        # The first command starts in cwd even where the sandbox's workspace
        # took precedence at open; later ones start where the last one left.
        self._first_cwd: Optional[str] = cwd or None

    def execute(self, command: str, cwd: str = "", *, timeout: Optional[int] = None,
                stdin_data: Optional[str] = None, **_hermes_only: Any) -> Dict[str, Any]:
        """Run command; {"output": merged stdout+stderr, "returncode": int}.
        Keyword arguments only Hermes's own environments use are accepted and
        ignored."""
        session = self.session
        if session is None:
            raise ServerDied("the environment was cleaned up; make a new one")
        deadline = timeout or self.timeout
        run_cwd = cwd or self._first_cwd or None
        self._first_cwd = None
        out = MergedOutput(self.max_output_chars)
        with self._lock:
            self._interrupted = False
        try:
            r = session.exec(command, timeout=deadline, cwd=run_cwd, env=self.env or None,
                             stdin=stdin_data, stream=out.add)
        except Denied as e:
            return {"output": "[Command denied: %s]" % e.message, "returncode": DENIED_EXIT}
        except ServerError as e:
            if e.code in ("invalid_request", "backend_error", "audit_failed"):
                return {"output": "[Command could not run: %s]" % e.message, "returncode": 1}
            raise
        except KeyboardInterrupt:
            self._cancel()
            raise
        out.flush()
        if r.raw.get("stream_dropped"):
            # The client fell behind and hs dropped output events: what the
            # reply kept (each stream's head and tail) is the output.
            out = MergedOutput(self.max_output_chars)
            out.append(as_text(r.stdout))
            out.append(as_text(r.stderr))
        if r.timed_out:
            text, code = out.render("\n[Command timed out after %ss]" % deadline), 124
        elif r.cancelled and self._interrupted:
            text, code = out.render("\n[Command interrupted]"), 130
        else:
            text, code = out.render(), r.exit_code
        if out.total == 0:
            text = text.lstrip("\n")
        return {"output": text, "returncode": code}

    def interrupt(self) -> None:
        """Stop the command execute() is running (from another thread): it
        and everything it started are killed; execute() returns 130."""
        with self._lock:
            self._interrupted = True
        self._cancel()

    def _cancel(self) -> None:
        session = self.session
        if session is not None:
            try:
                session.cancel()
            except (ServerError, ServerDied):
                pass

    def cleanup(self) -> None:
        """Close the session: its sandbox is torn down and whatever its
        commands left running is stopped.  Safe to call more than once."""
        session, self.session = self.session, None
        try:
            if session is not None:
                session.close()
        except ServerDied:
            pass
        finally:
            if self._own_client and session is not None:
                self.client.close()

    def __enter__(self) -> "HsEnvironment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()

    def __del__(self) -> None:
        try:
            if getattr(self, "session", None) is not None:
                self.cleanup()
        except Exception:
            pass
