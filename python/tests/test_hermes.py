# SPDX-License-Identifier: MIT
"""HsEnvironment keeps Hermes's execute() conventions."""
import threading

import pytest
from conftest import eventually, running

from hermes_sandbox import Client
from hermes_sandbox.hermes import HsEnvironment, MergedOutput, truncation_notice


@pytest.fixture
def env(hs_env):
    c = Client(hs_env["HS"], env=hs_env)
    e = HsEnvironment("local", timeout=30, client=c)
    try:
        yield e
    finally:
        e.cleanup()
        c.close()


def test_dict_shape_and_merged_output(env):
    r = env.execute("echo a; sleep 0.1; echo b >&2; sleep 0.1; echo c; exit 2")
    assert r == {"output": "a\nb\nc\n", "returncode": 2}
    assert env.execute("cat", stdin_data="in\n") == {"output": "in\n", "returncode": 0}
    assert env.execute("pwd", cwd="/")["output"] == "/\n"
    assert env.execute("printf '\\377x'")["output"] == "\ufffdx"


def test_timeout_is_124_and_kills_the_tree(env):
    r = env.execute("echo before; sleep 61101 & sleep 61102; echo never", timeout=1)
    assert r["returncode"] == 124
    # (bash may add "Terminated" for the job the deadline killed)
    assert r["output"].startswith("before\n") and "never" not in r["output"]
    assert r["output"].endswith("\n\n[Command timed out after 1s]")
    # The deadline killed everything the command started, in the sandbox.
    assert eventually(lambda: not running("[s]leep 6110[12]"))
    # Without output the notice is all there is (bash may first report the
    # background job the deadline killed: "Terminated").
    r = env.execute("sleep 61103", timeout=1)
    assert r["returncode"] == 124 and r["output"] in ("[Command timed out after 1s]", "Terminated\n\n[Command timed out after 1s]")


def test_truncation_notice(env):
    env.max_output_chars = 1000
    r = env.execute("head -c 5000 /dev/zero | tr '\\0' x; echo; echo END")
    out = r["output"]
    assert r["returncode"] == 0 and len(out) <= 1000
    assert "[OUTPUT TRUNCATED - " in out and "out of 5,005 total] ..." in out
    assert out.startswith("xxx") and out.endswith("x\nEND\n")
    env.max_output_chars = 50_000
    assert env.execute("echo short")["output"] == "short\n"


def test_merged_output_window():
    m = MergedOutput(100)
    for i in range(100):
        m.append("%03d\n" % i)
    text = m.render()
    assert len(text) <= 100 and text.startswith("000\n") and text.endswith("099\n")
    assert "[OUTPUT TRUNCATED - " in text and "out of 400 total] ..." in text
    assert truncation_notice(1234, 5678) == "\n\n... [OUTPUT TRUNCATED - 1,234 chars omitted out of 5,678 total] ...\n\n"


def test_interrupt_is_130(env):
    got = {}
    t = threading.Thread(target=lambda: got.update(env.execute("echo go; sleep 61201", timeout=600)))
    t.start()
    assert eventually(lambda: running("[s]leep 61201"))
    env.interrupt()
    t.join(timeout=60)
    assert not t.is_alive()
    # bash itself may say "Terminated" after the output.
    assert got["returncode"] == 130 and got["output"].startswith("go\n")
    assert got["output"].endswith("\n\n[Command interrupted]")
    assert eventually(lambda: not running("[s]leep 61201"))


def test_cleanup_leaves_nothing_running(hs_env, monkeypatch):
    for k, v in hs_env.items():  # the hs serve HsEnvironment starts uses them
        if k.startswith("XDG_") or k == "HS":
            monkeypatch.setenv(k, v)
    e = HsEnvironment("local", timeout=30, env={"PY_T": "1"})
    # A server left running in the session shell by a command that completed.
    r = e.execute("sleep 61301 & echo started $PY_T")
    assert r["returncode"] == 0 and r["output"] == "started 1\n"
    assert running("[s]leep 61301")
    serve = e.client.process
    e.cleanup()
    assert eventually(lambda: not running("[s]leep 61301")), "cleanup left the job running"
    assert serve is not None and serve.poll() is not None, "cleanup left hs serve running"
    e.cleanup()  # twice is fine


def test_denied_is_126(env):
    r = env.execute('psql -h 127.0.0.1 -p 1 -c "DROP TABLE hs_py_t"')
    assert r["returncode"] == 126 and r["output"].startswith("[Command denied: ")


def test_unknown_backend():
    with pytest.raises(ValueError):
        HsEnvironment("vmware")
