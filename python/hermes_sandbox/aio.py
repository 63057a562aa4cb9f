# SPDX-License-Identifier: MIT
"""asyncio equivalents of Client, Session and Job.

They share the threaded client's reader: a request is sent at once and its
reply is awaited as a future, so the event loop never blocks and any number
of commands can be awaited together.  Stream callbacks run on the event loop;
an approval handler may be a plain function or a coroutine function.
"""
import asyncio
import inspect
from typing import IO, Any, Awaitable, Callable, Coroutine, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .client import (ApprovalHandler, ApprovalRequest, Client, Data, Job, JobOutput, Pty, Result, Screen, Session,
                     StreamCallback, as_bytes, decoded, open_fields, output_fields, put_fields, screen_fields,
                     to_job_output,
                     to_screen, write_fields)

AsyncApprovalHandler = Callable[[ApprovalRequest], Union[str, Awaitable[str]]]


class AsyncClient:
    """Client for asyncio: same arguments; use `async with` or `await close()`."""

    def __init__(self, hs: Optional[str] = None, *, args: Sequence[str] = (),
                 env: Optional[Mapping[str, str]] = None,
                 pipes: Optional[Tuple[IO[bytes], IO[bytes]]] = None,
                 on_approval: Optional[AsyncApprovalHandler] = None, **kw: Any) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.client = Client(hs, args=args, env=env, pipes=pipes,
                             on_approval=self._handler(on_approval), **kw)

    def _handler(self, handler: Optional[AsyncApprovalHandler]) -> Optional[ApprovalHandler]:
        """A handler the client's approval threads can call: a coroutine
        function is run on the event loop and waited for."""
        if handler is None or not inspect.iscoroutinefunction(handler):
            return handler  # type: ignore[return-value]
        coro_fn: Callable[[ApprovalRequest], Coroutine[Any, Any, str]] = handler

        def run(req: ApprovalRequest) -> str:
            loop = self._loop
            if loop is None:
                return "deny"
            return asyncio.run_coroutine_threadsafe(coro_fn(req), loop).result()
        return run

    async def call(self, op: str, fields: Optional[Mapping[str, Any]] = None, *,
                   timeout: Optional[float] = None) -> Dict[str, Any]:
        """Send a request and await its reply."""
        self._loop = asyncio.get_running_loop()
        c = self.client
        return await c.wait_async(c.send(op, fields, timeout=c.timeout if timeout is None else timeout))

    async def hello(self) -> Dict[str, Any]:
        """The server's version and protocol number."""
        return await self.call("hello")

    async def check(self, command: str, **fields: Any) -> Dict[str, Any]:
        """The policy verdict for a command, without running it."""
        return await self.call("check", dict(fields, command=command))

    async def open(self, backend: str = "local", *, session: Optional[str] = None,
                   on_approval: Optional[AsyncApprovalHandler] = None, **options: Any) -> "AsyncSession":
        """Open a session; see Client.open."""
        self._loop = asyncio.get_running_loop()
        handler = self._handler(on_approval)
        c = self.client
        p = c.send("open", open_fields(backend, session, options), timeout=c.open_timeout, on_approval=handler)
        return AsyncSession(self, Session(c, await c.wait_async(p), handler))

    async def close(self, timeout: float = 30.0) -> Optional[int]:
        """End hs serve (see Client.close), without blocking the loop."""
        return await asyncio.get_running_loop().run_in_executor(None, self.client.close, timeout)

    async def __aenter__(self) -> "AsyncClient":
        self._loop = asyncio.get_running_loop()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncSession:
    """Session for asyncio."""

    def __init__(self, aclient: AsyncClient, session: Session) -> None:
        self.aclient = aclient
        self.session = session
        self.name = session.name
        self.info = session.info

    async def exec(self, command: str, *, timeout: Optional[float] = None, cwd: Optional[str] = None,
                   env: Optional[Mapping[str, str]] = None, stdin: Optional[Data] = None,
                   stream: Optional[StreamCallback] = None, background: bool = False,
                   approval: Optional[str] = None, on_approval: Optional[AsyncApprovalHandler] = None,
                   wait: Optional[float] = None, pty: Optional[Pty] = None,
                   stdin_open: bool = False) -> Union[Result, "AsyncJob"]:
        """Session.exec, awaited; stream callbacks run on the event loop."""
        loop = asyncio.get_running_loop()
        self.aclient._loop = loop
        on_loop: Optional[StreamCallback] = None
        if stream is not None:
            cb = stream

            def on_loop(name: str, data: Data) -> None:
                loop.call_soon_threadsafe(cb, name, data)
        s = self.session
        p = s._send_exec(command, timeout, cwd, env, stdin, on_loop, background, approval,
                         self.aclient._handler(on_approval), wait, pty, stdin_open)
        done = s._finish_exec(await s.client.wait_async(p), background)
        return AsyncJob(self, done) if isinstance(done, Job) else done

    async def _call(self, op: str, fields: Dict[str, Any], timeout: Optional[float] = None) -> Dict[str, Any]:
        return await self.aclient.call(op, dict(fields, session=self.name), timeout=timeout)

    async def cancel(self) -> bool:
        """Cancel the running foreground command."""
        return bool((await self._call("cancel", {})).get("cancelled"))

    async def put_file(self, path: str, data: Data, mode: Optional[int] = None) -> None:
        """Write a file inside the sandbox."""
        await self.aclient.call("put_file", put_fields(self.name, path, data, mode))

    async def get_file(self, path: str) -> bytes:
        """The bytes of a file inside the sandbox."""
        return as_bytes(decoded(await self._call("get_file", {"path": path}), "data"))

    async def read_output(self, output_id: str, stream: str = "stdout", offset: int = 0,
                          length: Optional[int] = None) -> JobOutput:
        """Session.read_output, awaited."""
        fields = output_fields(self.name, output_id, stream, offset, length)
        del fields["session"]
        return to_job_output(await self._call("output", fields))

    async def jobs(self) -> List[Dict[str, Any]]:
        """What the session shell runs in the background."""
        return list((await self._call("job", {"action": "list"})).get("jobs", []))

    async def close(self) -> None:
        """Tear the session's environment down."""
        if not self.session.closed:
            await self._call("close", {}, timeout=self.session.client.open_timeout)
            self.session.closed = True

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncJob:
    """Job for asyncio."""

    def __init__(self, asession: AsyncSession, job: Job) -> None:
        self.asession = asession
        self.name = job.name

    async def _call(self, action: str, **extra: Any) -> Dict[str, Any]:
        return await self.asession._call("job", dict(extra, job=self.name, action=action))

    async def poll(self) -> Dict[str, Any]:
        """The job's state."""
        return await self._call("poll")

    async def output(self, offset: int = 0, stream: str = "stdout") -> JobOutput:
        """The job's output on one stream from offset."""
        return to_job_output(await self._call("output", offset=offset, stream=stream))

    async def kill(self) -> bool:
        """Stop the job as a deadline would."""
        return bool((await self._call("kill")).get("killed", True))

    async def write(self, data: Data, eof: bool = False) -> int:
        """Job.write, awaited (a refused write raises Denied)."""
        fields = dict(write_fields(data, eof), job=self.name)
        return int((await self.asession._call("write_stdin", fields)).get("written", 0))

    async def resize(self, rows: int, cols: int) -> None:
        """Set the window size of the job's terminal."""
        await self.asession._call("resize", {"job": self.name, "rows": rows, "cols": cols})

    async def screen(self, rows: Optional[int] = None, cols: Optional[int] = None) -> Screen:
        """Job.screen, awaited."""
        return to_screen(await self._call("output", **screen_fields(rows, cols)))

    async def wait(self, interval: float = 0.2) -> Dict[str, Any]:
        """Poll until the job is no longer running (bound it with asyncio.wait_for)."""
        while True:
            state = await self.poll()
            if not state.get("running"):
                return state
            await asyncio.sleep(interval)
            interval = min(interval * 1.5, 2.0)
