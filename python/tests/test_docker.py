# SPDX-License-Identifier: MIT
"""The client and the adapter on the docker backend.  Runs when
HS_TEST_DOCKER_IMAGE names an image with bash (tests/python/docker.test
starts a private dockerd and builds one offline); skipped otherwise."""
import os

import pytest
from conftest import eventually

from hermes_sandbox import Client, Denied
from hermes_sandbox.hermes import HsEnvironment

IMAGE = os.environ.get("HS_TEST_DOCKER_IMAGE")
pytestmark = pytest.mark.skipif(not IMAGE, reason="HS_TEST_DOCKER_IMAGE is not set (see tests/python/docker.test)")


def test_docker_session(client):
    with client.open("docker", image=IMAGE) as s:
        r = s.exec("cd /tmp; echo in-container; printf '\\377' >&2; exit 5")
        assert (r.exit_code, r.stdout, r.stderr) == (5, "in-container\n", b"\xff")
        assert s.exec("pwd").stdout == "/tmp\n"
        s.put_file("/tmp/blob", bytes(range(256)))
        assert s.get_file("/tmp/blob") == bytes(range(256))
        assert s.exec("wc -c < /tmp/blob").stdout.strip() == "256"
        job = s.exec("echo j; exit 3", background=True)
        state = job.wait(timeout=60)
        assert state["exit_code"] == 3 and job.output().data == "j\n"
        asked = []
        r = s.exec('touch /tmp/m; psql -h 127.0.0.1 -p 1 -c "DROP TABLE t"',
                   on_approval=lambda req: asked.append(req) or "once")
        assert asked and s.exec("test -e /tmp/m").exit_code == 0
        with pytest.raises(Denied):
            s.exec('touch /tmp/n; psql -h 127.0.0.1 -p 1 -c "DROP TABLE t"')
        assert s.exec("test -e /tmp/n").exit_code == 1


def test_docker_adapter(hs_env):
    c = Client(hs_env["HS"], env=hs_env)
    try:
        env = HsEnvironment("docker", image=IMAGE, timeout=30, client=c)
        assert env.execute("echo a; echo b >&2") == {"output": "a\nb\n", "returncode": 0}
        r = env.execute("sleep 61401 & sleep 61402", timeout=1)
        assert r["returncode"] == 124 and r["output"].endswith("[Command timed out after 1s]")
        # The deadline killed the tree inside the container.
        assert eventually(lambda: env.client.call("exec", {
            "session": env.session.name, "command": "ps | grep -c '[s]leep 6140'"})["stdout"].strip() == "0")
        env.cleanup()
        assert env.session is None
    finally:
        c.close()
