# SPDX-License-Identifier: MIT
"""Fixtures: the hs under test ($HS, else the build tree's core/hs, else PATH)
run with private XDG directories, so no test touches the user's state."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, Iterator

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from hermes_sandbox import Client  # noqa: E402


def hs_path() -> str:
    built = os.path.join(os.path.dirname(os.path.dirname(HERE)), "core", "hs")
    path = os.environ.get("HS") or (built if os.access(built, os.X_OK) else shutil.which("hs"))
    if not path:
        pytest.skip("no hs to test: set HS or build core/hs")
    return path


@pytest.fixture
def hs_env(tmp_path) -> Iterator[Dict[str, str]]:
    """An environment for hs serve with its own state, config, cache and runtime dirs."""
    env = dict(os.environ)
    for name in ("state", "config", "cache", "run"):
        d = tmp_path / name
        d.mkdir(mode=0o700)
        env["XDG_%s_HOME" % name.upper() if name != "run" else "XDG_RUNTIME_DIR"] = str(d)
    env["HS"] = hs_path()
    yield env


@pytest.fixture
def client(hs_env) -> Iterator[Client]:
    c = Client(hs_env["HS"], env=hs_env)
    try:
        yield c
    finally:
        c.close()


def eventually(cond: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Poll cond until it holds (True) or timeout seconds pass (False)."""
    end = time.monotonic() + timeout
    while True:
        if cond():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.1)


def running(pattern: str) -> bool:
    """Whether a process whose command line matches pattern runs (use the
    [x] trick in pattern so that it never matches pgrep's caller)."""
    return subprocess.run(["pgrep", "-f", pattern], stdout=subprocess.DEVNULL).returncode == 0


@pytest.fixture
def tmpdir_str() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="hs-py.")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
