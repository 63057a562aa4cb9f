# SPDX-License-Identifier: MIT
"""PTY jobs through the Python client: python3 -i driven with Job.write, a
refused write into bash (Denied, nothing delivered), Job.resize seen by
stty size, Job.screen of escape sequences, a pipe closed by eof, and the
asyncio variant of the REPL case; waiting_input while read -p waits."""
import asyncio
import re
import time
from typing import Any, Callable, Optional

import pytest

from hermes_sandbox import AsyncClient, AsyncJob, Cursor, Denied, Job, Screen, ServerError


def wait_output(job: Job, pattern: str, timeout: float = 30.0) -> str:
    """The job's whole stdout once pattern (a regex) matches it; fails the test after timeout."""
    end = time.monotonic() + timeout
    out: Any = ""
    while time.monotonic() < end:
        out = job.output().data
        if isinstance(out, str) and re.search(pattern, out):
            return out
        time.sleep(0.2)
    pytest.fail("no %r in the output of %s: %r" % (pattern, job.name, out))


def eventually_value(f: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 30.0) -> Any:
    end = time.monotonic() + timeout
    v = f()
    while not ok(v) and time.monotonic() < end:
        time.sleep(0.2)
        v = f()
    return v


def test_python_repl(client):
    with client.open("local") as s:
        job = s.exec("python3 -i -q", pty=True, background=True)
        assert isinstance(job, Job)
        wait_output(job, r">>> $")
        assert any(j.get("pty") for j in s.jobs() if j.get("job") == job.name) or job.poll().get("pty")
        assert job.write("print(6*7)\n") == 11
        wait_output(job, r"\r?\n42\r?\n")
        with pytest.raises(Denied):
            job.write("import os; os.system('rm -rf /')\n")
        job.kill()


def test_bash_refused_write_and_resize(client):
    with client.open("local") as s:
        job = s.exec("bash --norc --noprofile", pty=(24, 80), background=True)
        wait_output(job, r"[$#] $")
        with pytest.raises(Denied) as e:
            job.write(b"rm -rf /\n")
        assert e.value.code == "denied" and "fs.rm-root" in e.value.message
        job.write("echo after-deny-$((2*3))\n")
        out = wait_output(job, r"after-deny-6\r?\n")
        assert "rm -rf" not in out
        job.resize(30, 100)
        job.write("stty size\n")
        wait_output(job, r"\b30 100\r?\n")
        with pytest.raises(ServerError):
            job.resize(0, 100)
        job.kill()


def test_screen(client):
    with client.open("local") as s:
        job = s.exec("printf '\\033[2J\\033[3;5Hhello\\033[1;1Htop\\033[5;10H'; sleep 600",
                     pty=(6, 20), background=True)
        wait_output(job, "hello")
        shot = eventually_value(job.screen, lambda v: v.rows[2:3] == ["    hello"] and v.cursor.col == 9)
        assert isinstance(shot, Screen)
        assert shot.rows[0] == "top" and shot.rows[2] == "    hello" and len(shot.rows) == 6
        assert shot.size == (6, 20) and shot.cursor == Cursor(4, 9)
        assert not shot.alternate and not shot.partial
        assert shot.text.startswith("top\n\n    hello\n")
        small = job.screen(rows=3, cols=12)
        assert small.size == (3, 12)
        with pytest.raises(ServerError):
            job.screen(cols=1)
        job.kill()


def test_stdin_open_pipe(client):
    with client.open("local") as s:
        job = s.exec("cat; echo cat-ended", stdin_open=True, background=True)
        assert job.write(b"piped-bytes\n", eof=True) == 12
        state = job.wait(timeout=30)
        assert state["exit_code"] == 0
        assert job.output().data == "piped-bytes\ncat-ended\n"


def test_async_python_repl(hs_env):
    async def main() -> None:
        async with AsyncClient(hs_env["HS"], env=hs_env) as hs:
            async with await hs.open("local") as s:
                job = await s.exec("python3 -i -q", pty=True, background=True)
                assert isinstance(job, AsyncJob)

                async def until(pattern: str) -> Optional[str]:
                    for _ in range(150):
                        out = (await job.output()).data
                        if isinstance(out, str) and re.search(pattern, out):
                            return out
                        await asyncio.sleep(0.2)
                    return None
                assert await until(r">>> $")
                assert await job.write("print(6*7)\n") == 11
                assert await until(r"\r?\n42\r?\n")
                with pytest.raises(Denied):
                    await job.write("import os; os.system('rm -rf /')\n")
                await job.resize(10, 40)
                shot = await job.screen()
                assert shot.size == (10, 40) and any(r == "42" for r in shot.rows)
                await job.kill()
    asyncio.run(main())


def test_waiting_input(client):
    with client.open("local") as s:
        job = s.exec("read -p 'name? ' x; echo got-$x", pty=True, background=True)
        state = eventually_value(job.poll, lambda v: bool(v.get("waiting_input")))
        assert state.get("waiting_input") is True and state.get("running") is True
        job.write("ann\n")
        wait_output(job, r"got-ann\r?\n")
        assert job.wait(timeout=30)["exit_code"] == 0
