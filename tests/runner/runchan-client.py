#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-alone hs-runner client for tests/runner/runchan.test: connects
straight to a daemon's socket and tries to start `touch MARKER`, speaking
whichever protocol the daemon answers (version 1 had no authentication;
version 2 needs the session key, see hs-runner(7)).

usage: runchan-client.py SOCK KEY MARKER
KEY is a key file (a missing one counts as "none"), "none" (skip
authentication), "wrong" (a random key) or "rekey" (try to give the
daemon a new key, then prove it).
Prints one line: "started" when the daemon took the EXEC without an
error, else "refused: REASON".  Exits 0 either way, 2 on usage errors."""
import hashlib
import hmac
import os
import socket
import struct
import sys

HELLO, ERROR, EXEC, OK, EXIT, KEY, CHALLENGE, AUTH = 1, 2, 3, 14, 9, 21, 22, 23


def frame(t, payload=b""):
    return struct.pack("<IB", len(payload) + 1, t) + payload


def sstr(b):
    return struct.pack("<I", len(b)) + b


def read_frame(s):
    hdr = b""
    while len(hdr) < 4:
        c = s.recv(4 - len(hdr))
        if not c:
            return None, None
        hdr += c
    (n,) = struct.unpack("<I", hdr)
    body = b""
    while len(body) < n:
        c = s.recv(n - len(body))
        if not c:
            return None, None
        body += c
    return body[0], body[1:]


def proof(key, label, a, b):
    return hmac.new(key, label + b"\0" + a + b, hashlib.sha256).digest()


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, keyarg, marker = sys.argv[1:]
    if keyarg == "none":
        key = None
    elif keyarg in ("wrong", "rekey"):
        key = os.urandom(32)
    else:
        try:
            with open(keyarg, "rb") as f:
                key = f.read()
        except FileNotFoundError:
            key = None  # a runner without keys needs none
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    try:
        s.connect(path)
        nonce_c = os.urandom(32)
        s.sendall(frame(HELLO, struct.pack("<II", 3, 3) + sstr(b"runchan-test")))
        t, p = read_frame(s)
        if t is None:
            print("refused: closed before HELLO")
            return 0
        if t == ERROR:
            print("refused: " + p[12 + 4:].decode(errors="replace"))
            return 0
        version = struct.unpack("<I", p[:4])[0]
        if version >= 2:
            s.sendall(frame(CHALLENGE, nonce_c))
            if keyarg == "rekey":
                s.sendall(frame(KEY, key))
        if version >= 2 and key is not None:
            t, p = read_frame(s)
            if t != AUTH:
                print("refused: no AUTH (%s)" % t)
                return 0
            nonce_d = p[1:33]
            s.sendall(frame(AUTH, proof(key, b"hs-runner client", nonce_d, nonce_c)))
        argv = [b"/bin/sh", b"-c", b"touch '%s'" % marker.encode()]
        env = [b"PATH=/usr/bin:/bin"]
        body = struct.pack("<QIqqQQQQ", 1000 + os.getpid(), 0, 20000, 2000, 0, 0, 2**64 - 1, 0) + sstr(b"/")
        body += struct.pack("<I", len(argv)) + b"".join(sstr(a) for a in argv)
        body += struct.pack("<I", len(env)) + b"".join(sstr(e) for e in env)
        try:
            s.sendall(frame(EXEC, body))
        except OSError:
            pass  # refused already: the reason is in the stream
        while True:
            t, p = read_frame(s)
            if t is None:
                print("refused: closed")
                return 0
            if t == ERROR:
                print("refused: " + p[12 + 4:].decode(errors="replace"))
                return 0
            if t == EXIT:
                print("started")
                return 0
    except OSError as e:
        print("refused: %s" % e)
        return 0


sys.exit(main())
