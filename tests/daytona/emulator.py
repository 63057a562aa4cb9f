#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A loopback stand-in for the parts of the Daytona REST API that the
daytona backend uses, written for the test suite from Daytona's public
OpenAPI description (API: /sandbox...; toolbox, through the API's
/toolbox/{sandboxId}/toolbox/... routes: process sessions and files).

It checks the bearer key, keeps sandboxes in memory, and runs the commands
it is sent on this machine with sh, in a per-sandbox directory, keeping
each command's stdout, stderr and exit code so a poll after a dropped
connection still gets them.  It is not Daytona: no isolation, no images.

Test-only controls live under /_emu/ (no key needed):
  POST /_emu/fault {"create_status": 403, "create_message": "...",
                    "build_failed": "reason", "start_delay": 1.5,
                    "drop": N, "toolbox_status": 503}
  POST /_emu/delete_all        delete every sandbox "from outside"
  POST /_emu/set_state {"state": "archived"}   (e.g. Daytona archived them)
  GET  /_emu/state             sandboxes, last create body
  GET  /_emu/requests          every request seen (method, path, body)

Usage: DAYTONA_EMU_KEY=k emulator.py --port-file F --root DIR
       emulator.py --ctl URL WHAT [JSON]     (call a control endpoint)
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs, unquote

LOCK = threading.Lock()
SANDBOXES = {}
FAULTS = {}
REQUESTS = []
LAST_CREATE = {}
ROOT = "/tmp"
KEY = ""


def now():
    return time.monotonic()


class Command:
    def __init__(self, sandbox_dir, command):
        self.id = str(uuid.uuid4())
        self.command = command
        self.out_path = os.path.join(sandbox_dir, ".emu-" + self.id + ".out")
        self.err_path = os.path.join(sandbox_dir, ".emu-" + self.id + ".err")
        self.exit_code = None
        env = dict(os.environ)
        env.pop("DAYTONA_EMU_KEY", None)
        env["HOME"] = sandbox_dir
        with open(self.out_path, "wb") as o, open(self.err_path, "wb") as e:
            self.proc = subprocess.Popen(["sh", "-c", command], cwd=sandbox_dir, stdin=subprocess.DEVNULL,
                                         stdout=o, stderr=e, env=env, start_new_session=True)
        self.thread = threading.Thread(target=self._wait, daemon=True)
        self.thread.start()

    def _wait(self):
        rc = self.proc.wait()
        self.exit_code = rc if rc >= 0 else 128 - rc

    def logs(self):
        def rd(p):
            try:
                with open(p, "rb") as f:
                    return f.read().decode("utf-8", "replace")
            except OSError:
                return ""
        return rd(self.out_path), rd(self.err_path)

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass


def bad_allow_list(v):
    """networkAllowList: comma-separated CIDR network addresses (the API's
    description); the emulator stores it and refuses anything else."""
    if v is None:
        return None
    if not isinstance(v, str):
        return "networkAllowList must be a string"
    import ipaddress
    for net in v.split(","):
        try:
            if "/" not in net:
                raise ValueError(net)
            ipaddress.IPv4Network(net.strip(), strict=False)
        except ValueError:
            return "networkAllowList must contain valid CIDR network addresses: %r" % net
    return None


class Sandbox:
    def __init__(self, body):
        self.id = str(uuid.uuid4())
        self.name = body.get("name") or self.id
        self.labels = dict(body.get("labels") or {})
        self.body = body
        self.dir = os.path.join(ROOT, "sb-" + self.id)
        os.makedirs(self.dir, mode=0o700)
        self.sessions = {}
        self.fail_reason = FAULTS.pop("build_failed", None)
        self.state = "creating" if not body.get("buildInfo") else "pending_build"
        self.ready_at = now() + float(FAULTS.get("start_delay", 0))
        self.error_reason = None

    def refresh(self):
        if self.state in ("creating", "pending_build", "starting", "restoring") and now() >= self.ready_at:
            if self.fail_reason:
                self.state = "build_failed" if self.body.get("buildInfo") else "error"
                self.error_reason = self.fail_reason
            else:
                self.state = "started"

    def json(self):
        self.refresh()
        b = self.body
        return {
            "id": self.id, "organizationId": "emu", "name": self.name, "user": "daytona",
            "snapshot": b.get("snapshot"), "env": b.get("env") or {}, "labels": self.labels,
            "public": False, "networkBlockAll": bool(b.get("networkBlockAll", False)),
            "networkAllowList": b.get("networkAllowList"),
            "target": b.get("target") or "us", "cpu": b.get("cpu", 1), "gpu": 0,
            "memory": b.get("memory", 1), "disk": b.get("disk", 3), "state": self.state,
            "desiredState": "started", "errorReason": self.error_reason,
            "autoStopInterval": b.get("autoStopInterval", 15),
            "buildInfo": b.get("buildInfo"),
        }

    def destroy(self):
        for s in self.sessions.values():
            for c in s.values():
                c.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def parse_multipart(ctype, data):
    boundary = None
    for part in ctype.split(";"):
        part = part.strip()
        if part.startswith("boundary="):
            boundary = part[9:].strip('"')
    if not boundary:
        return None
    sep = b"--" + boundary.encode()
    for chunk in data.split(sep):
        if b"\r\n\r\n" not in chunk:
            continue
        head, body = chunk.split(b"\r\n\r\n", 1)
        if b'name="file"' in head:
            if body.endswith(b"\r\n"):
                body = body[:-2]
            return body
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        # Answers are written in pieces: without this, delayed ACKs add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send_json(self, status, obj):
        data = json.dumps(obj).encode() if status != 204 else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_error_json(self, status, message):
        self.send_json(status, {"statusCode": status, "message": message, "error": "emulated"})

    def drop(self):
        """Answer half a response, then cut the connection."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b'{"id": "')
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def handle_any(self, method):
        u = urlsplit(self.path)
        path = u.path
        query = parse_qs(u.query)
        data = self.body()
        with LOCK:
            REQUESTS.append({"method": method, "path": self.path,
                             "body": data[:4096].decode("utf-8", "replace"),
                             "auth": self.headers.get("Authorization") == "Bearer " + KEY})
        if path.startswith("/_emu/"):
            return self.control(method, path, data)
        if self.headers.get("Authorization") != "Bearer " + KEY:
            return self.send_error_json(401, "Unauthorized")
        parts = [unquote(p) for p in path.split("/") if p]
        try:
            if parts[:1] == ["sandbox"]:
                return self.sandbox_api(method, parts[1:], query, data)
            if parts[:1] == ["toolbox"] and len(parts) >= 3 and parts[2] == "toolbox":
                return self.toolbox_api(method, parts[1], parts[3:], query, data)
        except (ValueError, KeyError) as e:
            return self.send_error_json(400, "bad request: %s" % e)
        return self.send_error_json(404, "no route " + path)

    def control(self, method, path, data):
        with LOCK:
            if path == "/_emu/fault":
                FAULTS.update(json.loads(data or b"{}"))
                return self.send_json(200, FAULTS)
            if path == "/_emu/delete_all":
                for sb in SANDBOXES.values():
                    sb.destroy()
                SANDBOXES.clear()
                return self.send_json(200, {})
            if path == "/_emu/set_state":
                want = json.loads(data or b"{}").get("state", "archived")
                for sb in SANDBOXES.values():
                    for sess in sb.sessions.values():
                        for c in sess.values():
                            c.kill()
                    sb.sessions.clear()
                    sb.state = want
                return self.send_json(200, {})
            if path == "/_emu/state":
                return self.send_json(200, {"sandboxes": [s.json() for s in SANDBOXES.values()],
                                            "last_create": LAST_CREATE})
            if path == "/_emu/requests":
                return self.send_json(200, REQUESTS)
        return self.send_error_json(404, "no control " + path)

    def sandbox_api(self, method, rest, query, data):
        with LOCK:
            if not rest and method == "POST":
                st = FAULTS.pop("create_status", None)
                if st:
                    return self.send_error_json(int(st), FAULTS.pop("create_message", "quota exceeded"))
                body = json.loads(data)
                bad = bad_allow_list(body.get("networkAllowList"))
                if bad:
                    return self.send_error_json(400, bad)
                LAST_CREATE.clear()
                LAST_CREATE.update(body)
                sb = Sandbox(body)
                SANDBOXES[sb.id] = sb
                return self.send_json(200, sb.json())
            if not rest and method == "GET":
                want = json.loads(query.get("labels", ["{}"])[0])
                out = [s.json() for s in SANDBOXES.values()
                       if all(s.labels.get(k) == v for k, v in want.items())]
                return self.send_json(200, out)
            sb = SANDBOXES.get(rest[0]) if rest else None
            if sb is None:
                sb = next((s for s in SANDBOXES.values() if rest and s.name == rest[0]), None)
            if sb is None:
                return self.send_error_json(404, "Sandbox with ID or name %s not found" % (rest[0] if rest else ""))
            if len(rest) == 1 and method == "GET":
                return self.send_json(200, sb.json())
            if len(rest) == 1 and method == "DELETE":
                sb.destroy()
                del SANDBOXES[sb.id]
                return self.send_json(200, {})
            if len(rest) == 2 and method == "POST" and rest[1] == "start":
                sb.refresh()
                if sb.state in ("stopped", "archived"):
                    sb.state = "starting"
                    sb.ready_at = now() + float(FAULTS.get("start_delay", 0))
                return self.send_json(200, sb.json())
            if len(rest) == 2 and method == "POST" and rest[1] == "stop":
                for s in sb.sessions.values():
                    for c in s.values():
                        c.kill()
                sb.sessions.clear()
                sb.state = "stopped"
                return self.send_json(200, sb.json())
        return self.send_error_json(404, "no route")

    def toolbox_api(self, method, sid, rest, query, data):
        with LOCK:
            sb = SANDBOXES.get(sid)
            if sb is None:
                return self.send_error_json(404, "sandbox %s not found" % sid)
            sb.refresh()
            if sb.state != "started":
                return self.send_error_json(400, "sandbox is not started (state %s)" % sb.state)
            st = FAULTS.get("toolbox_status")
            if st:
                return self.send_error_json(int(st), "toolbox fault")
        if rest == ["files", "upload"] and method == "POST":
            content = parse_multipart(self.headers.get("Content-Type", ""), data)
            if content is None:
                return self.send_error_json(400, "no file part")
            p = query["path"][0]
            p = p if p.startswith("/") else os.path.join(sb.dir, p)
            try:
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(content)
            except OSError as e:
                return self.send_error_json(400, "cannot write %s: %s" % (p, e.strerror))
            return self.send_json(200, {})
        if rest == ["files", "download"] and method == "GET":
            p = query["path"][0]
            p = p if p.startswith("/") else os.path.join(sb.dir, p)
            try:
                with open(p, "rb") as f:
                    content = f.read()
            except OSError:
                return self.send_error_json(404, "file not found")
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)
            return None
        if rest[:2] != ["process", "session"]:
            return self.send_error_json(404, "no toolbox route")
        rest = rest[2:]
        with LOCK:
            if not rest and method == "POST":
                sess = json.loads(data)["sessionId"]
                if sess in sb.sessions:
                    return self.send_error_json(409, "session already exists")
                sb.sessions[sess] = {}
                return self.send_json(201, {})
            session = sb.sessions.get(rest[0]) if rest else None
            if session is None:
                return self.send_error_json(404, "session not found")
            if len(rest) == 1 and method == "DELETE":
                for c in session.values():
                    c.kill()
                del sb.sessions[rest[0]]
                return self.send_json(204, {})
            if len(rest) == 2 and rest[1] == "exec" and method == "POST":
                req = json.loads(data)
                cmd = Command(sb.dir, req["command"])
                session[cmd.id] = cmd
                sync = not (req.get("runAsync") or req.get("async"))
            elif len(rest) >= 3 and rest[1] == "command" and method == "GET":
                cmd = session.get(rest[2])
                if cmd is None:
                    return self.send_error_json(404, "command not found")
                if FAULTS.get("drop", 0) > 0:
                    FAULTS["drop"] -= 1
                    return self.drop()
                if len(rest) == 3:
                    return self.send_json(200, {"id": cmd.id, "command": cmd.command, "exitCode": cmd.exit_code})
                if len(rest) == 4 and rest[3] == "logs":
                    o, e = cmd.logs()
                    return self.send_json(200, {"output": o + e, "stdout": o, "stderr": e})
                return self.send_error_json(404, "no route")
            else:
                return self.send_error_json(404, "no session route")
        if sync:
            cmd.thread.join()
            o, e = cmd.logs()
            return self.send_json(200, {"cmdId": cmd.id, "output": o + e, "stdout": o, "stderr": e,
                                        "exitCode": cmd.exit_code})
        return self.send_json(202, {"cmdId": cmd.id})

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")


def control(url, what, data):
    """Client side of /_emu/ for the tests (no curl needed)."""
    import urllib.request
    req = urllib.request.Request(url + "/_emu/" + what, data=data.encode() if data is not None else None,
                                 method="POST" if data is not None else "GET")
    with urllib.request.urlopen(req, timeout=30) as r:
        sys.stdout.write(r.read().decode())


def main():
    global ROOT, KEY
    if len(sys.argv) >= 4 and sys.argv[1] == "--ctl":
        return control(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    ROOT = a.root
    KEY = os.environ.get("DAYTONA_EMU_KEY", "")
    if not KEY:
        sys.exit("set DAYTONA_EMU_KEY")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, a.port_file)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    with LOCK:
        for sb in SANDBOXES.values():
            sb.destroy()


if __name__ == "__main__":
    main()
