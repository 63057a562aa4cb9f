# SPDX-License-Identifier: MIT
"""The exceptions of hermes_sandbox: everything raised is an HsError."""
from typing import Any, Dict, Optional


class HsError(Exception):
    """Base of every error this package raises."""


class ServerDied(HsError):
    """hs serve exited or closed its output while requests were waiting."""


class Timeout(HsError, TimeoutError):
    """hs serve did not answer in time (it may be hung); the request is abandoned."""


class ServerError(HsError):
    """hs serve answered a request with an error: .code and .message as it sent them."""

    def __init__(self, code: str, message: str, reply: Optional[Dict[str, Any]] = None) -> None:
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
        self.reply = reply or {}


class Denied(ServerError):
    """The command (or file access) was refused by policy or by the approval answer."""


def error_from_reply(reply: Dict[str, Any]) -> ServerError:
    """The exception for a reply whose ok is false."""
    err = reply.get("error") or {}
    code = str(err.get("code", "internal"))
    message = str(err.get("message", "hs serve gave no message"))
    cls = Denied if code == "denied" else ServerError
    return cls(code, message, reply)
