# SPDX-License-Identifier: MIT
"""PTY commands and jobs through `hs serve` (issue 24 items 2 and 3), the
cases shared by tests/core/pty.test (local, --isolate) and
tests/docker/pty.test.  Every wait polls with a generous bound; nothing
asserts a duration."""
import base64, json, os, re, shutil, subprocess, threading, time


class Serve:
    def __init__(self, hs, env=None):
        self.p = subprocess.Popen([hs, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env, text=True, bufsize=1)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(json.loads(line))
                self.cv.notify_all()

    def send(self, obj):
        self.p.stdin.write(json.dumps(obj) + "\n")
        self.p.stdin.flush()

    def wait(self, pred, timeout=60):
        end = time.time() + timeout
        with self.cv:
            while True:
                for i, r in enumerate(self.lines):
                    if pred(r):
                        return self.lines.pop(i)
                left = end - time.time()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def call(self, obj, timeout=120, approve=None):
        """obj's reply; an approval event for it is answered with approve
        ("once") when given, else left to deny by silence."""
        self.send(obj)
        self.asked = None
        end = time.time() + timeout
        while time.time() < end:
            r = self.wait(lambda r: r.get("id") == obj["id"] and
                          (r.get("event") == "approval" or "event" not in r), end - time.time())
            if r is None:
                break
            if r.get("event") == "approval":
                self.asked = r
                if approve:
                    self.send({"id": "ap-%s" % obj["id"], "op": "approve", "request": r["request"],
                               "decision": approve})
                continue
            return r
        return {"ok": False, "error": {"code": "no answer"}}

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        return self.p.wait(timeout=60)


class Cases:
    def __init__(self, s, session, check, python=True, vim=None):
        self.s, self.sess, self.check, self.python = s, session, check, python
        self.vim = (python and shutil.which("vim") is not None) if vim is None else vim
        self.n = 0

    def req(self, op, **kw):
        self.n += 1
        o = {"id": "p%d" % self.n, "op": op, "session": self.sess}
        o.update(kw)
        return o

    def output(self, job):
        r = self.s.call(self.req("job", job=job, action="output"))
        return r.get("data", "") if r.get("ok") else ""

    def wait_output(self, job, pattern, timeout=30):
        """Polls the job's terminal stream until pattern (a regex) matches."""
        end = time.time() + timeout
        out = ""
        while time.time() < end:
            out = self.output(job)
            if re.search(pattern, out):
                return True, out
            time.sleep(0.2)
        return False, out

    def write(self, job, data, approve=None):
        return self.s.call(self.req("write_stdin", job=job, data=data), approve=approve)

    def run(self):
        s, check = self.s, self.check
        r = s.call(self.req("exec", command="mkdir -p /tmp/ptyst && cd /tmp/ptyst; PV=pv1; "
                            "pf() { echo pf-$PV; }"))
        check("the session's state is set", r.get("ok") and r.get("exit_code") == 0, r)

        # A foreground PTY exec: a terminal of 24x80 with the session's state.
        r = s.call(self.req("exec", command="tty; stty size; pwd; pf", pty=True, timeout=60))
        out = r.get("stdout", "")
        check("foreground pty: the result says pty", r.get("pty") is True, r)
        check("foreground pty: tty is /dev/pts/N", re.search(r"^/dev/pts/\d+\r?$", out, re.M), r)
        check("foreground pty: stty size is 24 80", re.search(r"^24 80\r?$", out, re.M), r)
        check("foreground pty: the session's cwd, variable and function are seen",
              re.search(r"^/tmp/ptyst\r?$", out, re.M) and "pf-pv1" in out, r)
        r = s.call(self.req("exec", command="stty size", pty={"rows": 10, "cols": 33}, timeout=60))
        check("pty {rows, cols} sets the size", re.search(r"^10 33\r?$", r.get("stdout", ""), re.M), r)
        r = s.call(self.req("exec", command="true", pty={"rows": 0, "cols": 80}))
        check("pty rows 0 is a bad_request", r.get("error", {}).get("code") == "bad_request", r)
        r = s.call(self.req("exec", command="true", pty={"rows": 24, "cols": 1001}))
        check("pty cols 1001 is a bad_request", r.get("error", {}).get("code") == "bad_request", r)

        # Waiting for input, reported in the result of a command stopped at its deadline.
        req = self.req("exec", command='read -p "name? " x', pty=True, timeout=15)
        r = s.call(req)
        check("a pty read -p is reported waiting_input", r.get("waiting_input") is True and
              r.get("prompt") == "name? ", r)
        ev = s.wait(lambda e: e.get("id") == req["id"] and e.get("event") == "waiting_input", 1)
        check("... and a waiting_input event came while it waited", ev is not None, s.lines[-5:])
        # A password prompt (no echo) is waiting input too, with its prompt.
        req = self.req("exec", command='read -s -p "Password: " pw; echo "len=${#pw}"', pty=True,
                       background=True)
        r = s.call(req)
        job = r.get("job", "j0")
        ev = s.wait(lambda e: e.get("id") == req["id"] and e.get("event") == "waiting_input", 30)
        o, end = {}, time.time() + 30
        while time.time() < end:
            o = s.call(self.req("job", job=job, action="poll"))
            if o.get("waiting_input"):
                break
            time.sleep(0.2)
        check("a password prompt (read -s) is reported waiting_input", o.get("waiting_input") is True, o)
        r = self.write(job, "hunter2\n")
        check("... the answer is written", r.get("ok"), r)
        ok, out = self.wait_output(job, r"len=7")
        check("... and read without echo", ok and "hunter2" not in out, out)

        if self.vim:
            # A full-screen program: the job's screen is what a person would see.
            r = s.call(self.req("exec", command="printf 'first line\\nsecond\\n' > /tmp/ptyst/v.txt && "
                                "TERM=xterm vim -u NONE -N -n /tmp/ptyst/v.txt",
                                pty={"rows": 12, "cols": 50}, background=True))
            check("vim starts as a pty job", r.get("ok") and r.get("job"), r)
            job = r.get("job", "j0")
            shot, end = {}, time.time() + 30
            while time.time() < end:
                o = s.call(self.req("job", job=job, action="output", screen=True))
                shot = o.get("screen") or {}
                rows = shot.get("rows") or []
                if rows and rows[0] == "first line" and any(x.startswith("~") for x in rows):
                    break
                time.sleep(0.3)
            rows = shot.get("rows") or []
            check("vim's screen: the file's lines on top, ~ below, the job's size, alternate screen",
                  rows[:2] == ["first line", "second"] and len(rows) == 12 and
                  rows[2].startswith("~") and shot.get("size") == {"rows": 12, "cols": 50} and
                  shot.get("alternate") is True, shot)
            r = s.call(self.req("resize", job=job, rows=8, cols=40))
            check("resize of the vim job", r.get("ok"), r)
            shot, end = {}, time.time() + 30
            while time.time() < end:
                o = s.call(self.req("job", job=job, action="output", screen=True))
                shot = o.get("screen") or {}
                if shot.get("size") == {"rows": 8, "cols": 40} and (shot.get("rows") or [""])[0] == "first line":
                    break
                time.sleep(0.3)
            check("... the screen is rendered at the new size", shot.get("size") == {"rows": 8, "cols": 40}
                  and len(shot.get("rows") or []) == 8, shot)
            r = self.write(job, ":q!\r")
            check("write_stdin :q! to vim", r.get("ok"), r)
            end = time.time() + 30
            while time.time() < end:
                o = s.call(self.req("job", job=job, action="poll"))
                if o.get("running") is False:
                    break
                time.sleep(0.3)
            check("... and vim quits", o.get("running") is False and o.get("exit_code") == 0, o)

        # The deadline kills the whole tree, setsid included.
        nap = 7000 + (os.getpid() * 7 + self.n) % 2999  # not another run's sleep
        r = s.call(self.req("exec", command="setsid sleep %d & echo started; sleep 300" % nap,
                            pty=True, timeout=10))
        check("a pty command is stopped at its deadline", r.get("timed_out") is True and
              "started" in r.get("stdout", ""), r)
        r = s.call(self.req("exec", command="pgrep -f '[s]leep %d( |$)' || echo none-left" % nap))
        check("... and nothing it started survives (setsid included)",
              "none-left" in r.get("stdout", ""), r)

        if self.python:
            r = s.call(self.req("exec", command="python3 -i -q", pty=True, background=True))
            check("python3 -i starts as a pty job", r.get("ok") and r.get("job"), r)
            job = r.get("job", "j0")
            ok, out = self.wait_output(job, r">>> $")
            check("python3 -i prompts", ok, out)
            # The write is judged first; plain REPL code needs no approval
            # (silence would deny it).
            r = self.write(job, "print(6*7)\n")
            check("write_stdin print(6*7), allowed without asking", r.get("ok"), r)
            r = self.write(job, "import os; os.system('rm -rf /')\n")
            check("write_stdin of os.system('rm -rf /') into python is denied",
                  r.get("error", {}).get("code") == "denied", r)
            ok, out = self.wait_output(job, r"\r?\n42\r?\n")
            check("python3 answers 42", ok, out)
            r = s.call(self.req("job", job=job, action="kill"))
            check("job kill of a pty job", r.get("killed") is True, r)
            end = time.time() + 30
            while time.time() < end and r.get("running", True):
                time.sleep(0.2)
                r = s.call(self.req("job", job=job, action="poll"))
            check("... it ends, cancelled", r.get("running") is False and r.get("cancelled") is True, r)

        r = s.call(self.req("exec", command="bash --norc --noprofile", pty=True, background=True))
        check("bash starts as a pty job", r.get("ok") and r.get("job"), r)
        job = r.get("job", "j0")
        ok, out = self.wait_output(job, r"[$#] $")
        check("bash prompts", ok, out)
        self.write(job, "echo T-$(tty)-; stty size\n")
        ok, out = self.wait_output(job, r"T-/dev/pts/\d+-\r?\n24 80\r?\n")
        check("bash in a pty: tty /dev/pts/N, stty size 24 80", ok, out)
        r = s.call(self.req("resize", job=job, rows=30, cols=100))
        check("resize", r.get("ok"), r)
        self.write(job, "stty size\n")
        ok, out = self.wait_output(job, r"\b30 100\r?\n")
        check("after resize stty size is 30 100", ok, out)
        nap2 = 5000 + (os.getpid() * 11 + self.n) % 1999  # not another run's sleep
        self.write(job, "echo sleep-starts; sleep %d\n" % nap2)
        ok, out = self.wait_output(job, r"sleep-starts\r?\n")
        check("sleep runs", ok, out)
        # ^C only reaches sleep once it runs in the terminal's foreground.
        end = time.time() + 30
        while time.time() < end:
            r = s.call(self.req("exec", command="pgrep -f '[s]leep %d( |$)' >/dev/null && echo up" % nap2))
            if "up" in r.get("stdout", ""):
                break
            time.sleep(0.2)
        r = s.call(self.req("write_stdin", job=job, data_b64=base64.b64encode(b"\x03").decode()))
        check("write_stdin ^C (base64)", r.get("ok"), r)
        self.write(job, "echo after-$?\n")
        ok, out = self.wait_output(job, r"after-130\r?\n")
        check("^C interrupts the sleep in that bash", ok, out)

        # A hardline command typed into the shell is refused and not delivered.
        r = self.write(job, "rm -rf /\n")
        check("write_stdin 'rm -rf /' into a bash pty is denied",
              r.get("error", {}).get("code") == "denied", r)
        self.write(job, "echo after-deny\n")
        ok, out = self.wait_output(job, r"after-deny\r?\n")
        check("... and nothing of it reached the terminal", ok and "rm -rf" not in out, out)

        # One that needs approval: an approval event, and the answer decides.
        r = s.call(self.req("write_stdin", job=job, data="kubectl delete namespace prod\n"),
                   approve="deny")
        check("a write that needs approval asks (approval event with its rules)",
              s.asked is not None and any(x.get("id") == "ctr.kubectl-destructive"
                                          for x in s.asked.get("rules", [])), s.asked)
        check("... and denied, it is refused", r.get("error", {}).get("code") == "denied", r)
        self.write(job, "echo after-deny2\n")
        ok, out = self.wait_output(job, r"after-deny2\r?\n")
        check("... and not delivered", ok and "kubectl" not in out, out)

        r = s.call(self.req("write_stdin", job=job, eof=True))
        check("eof on a pty job (its EOF character)", r.get("ok"), r)
        end, r = time.time() + 30, {}
        while time.time() < end:
            r = s.call(self.req("job", job=job, action="poll"))
            if not r.get("running", True):
                break
            time.sleep(0.2)
        check("bash ends at the EOF character", r.get("running") is False and
              r.get("exit_code") == 0 and r.get("pty") is True, r)

        # A non-PTY job started with stdin_open takes writes into a pipe.
        r = s.call(self.req("exec", command="read a; echo got-$a", background=True, stdin_open=True))
        job = r.get("job", "j0")
        r = self.write(job, "x1\n")
        ok, out = self.wait_output(job, r"got-x1")
        check("stdin_open: write_stdin reaches the job's pipe", ok, out)
        r = s.call(self.req("exec", command="cat; echo cat-ended", background=True, stdin_open=True))
        job = r.get("job", "j0")
        self.write(job, "abc")
        r = s.call(self.req("write_stdin", job=job, eof=True))
        ok, out = self.wait_output(job, r"abccat-ended")
        check("stdin_open: eof closes the pipe", r.get("ok") and ok, (r, out))
        r = s.call(self.req("exec", command="sleep 30", background=True))
        job = r.get("job", "j0")
        r = self.write(job, "x\n")
        check("write_stdin to a job without pty or stdin_open is refused",
              r.get("error", {}).get("code") == "invalid_request", r)
        r = s.call(self.req("resize", job=job, rows=5, cols=5))
        check("resize of a job without a terminal is refused", r.get("ok") is False, r)
        s.call(self.req("job", job=job, action="kill"))
