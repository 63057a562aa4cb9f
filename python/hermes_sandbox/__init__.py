# SPDX-License-Identifier: MIT
"""hermes_sandbox: run shell commands in hs sandboxes from Python.

    from hermes_sandbox import Client
    with Client() as hs, hs.open("local") as s:
        print(s.exec("echo hi").stdout)

Client and Session talk to `hs serve`; AsyncClient is their asyncio twin;
hermes_sandbox.hermes.HsEnvironment has the shape of Hermes's environments.
"""
from .aio import AsyncClient, AsyncJob, AsyncSession
from .client import DECISIONS, ApprovalRequest, Client, Cursor, Job, JobOutput, Result, Screen, Session, deny_all
from .errors import Denied, HsError, ServerDied, ServerError, Timeout

__version__ = "0.1.0"
__all__ = ["AsyncClient", "AsyncJob", "AsyncSession", "ApprovalRequest", "Client", "Cursor", "DECISIONS",
           "Denied", "HsError", "Job", "JobOutput", "Result", "Screen", "ServerDied", "ServerError", "Session",
           "Timeout", "deny_all"]
