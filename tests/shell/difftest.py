#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential test of the session shell (issue 21 item 8).

Feeds the same command sequences to an hs session (through `hs serve`) and
to one persistent `bash --norc --noprofile` per sequence, and compares, per
command, stdout, stderr, exit code and cwd.  A unified diff is printed for
every command that differs.  Exit 0 when all match, 1 on any mismatch, 77
when the backend cannot open a session here.

Case files (tests/shell/cases/*.txt):

    === sequence-name
    #backends local,isolate      (optional: only on these backends)
    #clients serve               (optional: only through these clients)
    #needs busybox               (optional: skip unless on the host's PATH)
    --- an optional note
    command line(s)
    ---
    #no-ref
    #timeout 2
    #expect-exit 124
    command

Lines before the first `===`, and `#` lines of a sequence before its first
`---`, other than the directives above, are comments.  A command is the
lines of a `---` block, after leading directive lines:
  #timeout N          exec timeout given to hs (none by default)
  #env K=V, #exec-cwd P  exec's per-command env and cwd (hs only: with #no-ref)
  #cancel-on-output   serve's cancel is sent on the command's first output
                      (hs only, through serve: with #no-ref)
  #no-ref             hs only: the reference is not fed this command (one
                      that ends a shell: exit, set -e failure, syntax error,
                      kill $$, a timeout); give explicit expectations
  #expect-exit N      the exit code must be N
  #expect-stdout T    stdout must be these lines (repeatable, one per line)
  #expect-stdout-empty, #expect-stderr T, #expect-stderr-empty
  #expect-stderr-has T  stderr must contain T
  #expect-cwd P       the cwd after the command must be P (@W@ allowed)
  #expect-reply F     the reply has flag F: cancelled, timed_out, shell_restarted
Expectations apply to the hs side (and to the reference on compared
commands).  In commands, @PORT@ is a free loopback port (one per side and
sequence) and @TOKEN@ a number unique to this run.  Before comparing, each
side's start directory, HOME and port read @W@, @HOME@ and @PORT@, and
`bash: line N: ` and `main: line N: ` read `bash: ` (line numbers count the
bookkeeping lines; a bash fed through stdin names errors in functions `main`).

The reference: bash reads its commands from a FIFO named `bash`, given as
its script, so that $0 is `bash` and messages read `bash: line N: ...` as
from stdin, while `exec 0</dev/null` does not cut its own input (bash reads
a stdin pipe unbuffered from fd 0).  The FIFO is unlinked once bash has it
open.  Command i is sent as
    exec 0</dev/null 1>OUT_i 2>ERR_i; { (exit S) guarded; } 2>/dev/null
    COMMAND
    { builtin printf ... "$?" "$PWD" >STATUS; : <ACK; } 2>/dev/null
where S is the previous command's status, put back in $?.  The driver reads
OUT_i and ERR_i before it opens ACK, so the trace of the next `exec` under
`set -x` lands in ERR_i after it was read.  Known limits (the cases avoid
them): an ERR or DEBUG trap fires on the bookkeeping; under `set -e` a
non-zero $? that did not end the shell (`! true`) is not put back; `set -v`
echoes the bookkeeping; $_ and BASH_SOURCE differ from a stdin-fed bash;
functions or aliases named exec, case or `:` would catch the bookkeeping;
output a background job writes after its command returned is racy.

hs side: one `hs serve` (or `hs run -s NAME --json` per command with
--client run), one session per sequence, its workspace and cwd a fresh
directory; with --start-cd DIR, a hidden `mkdir -p DIR/sN && cd DIR/sN`
opens sequence N instead (and a hidden `cd` to its own directory opens the
reference).  The cwd after a command comes from the reply's "cwd" if
present, else from a hidden exec that prints $PWD and puts $? back.  A
command runs on hs only where the reference ran it (same cwd before it), so
that a session that lost its cwd never writes into the host's directories.
"""
import argparse, difflib, errno, json, os, random, re, select, shutil, signal, socket, subprocess, sys, tempfile, time

DIRECTIVES = ("timeout", "env", "exec-cwd", "cancel-on-output", "no-ref", "expect-exit", "expect-stdout",
              "expect-stdout-empty", "expect-stderr", "expect-stderr-empty", "expect-stderr-has", "expect-cwd",
              "expect-reply")
SEQ_DIRECTIVES = ("backends", "clients", "needs")
# The PATH of hs (so of a local session) and, by default, of the reference.
STD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
REF_LIMIT = 60  # seconds a reference command may take before the case is called broken
TOKEN = str(random.randint(100000, 999999))


class CaseError(Exception):
    pass


class Denied(Exception):
    """hs run's approve mode refused a command it cannot read: the sequence
    cannot be run through that client (serve's ask mode runs it)."""


class BrokenCase(Exception):
    """The reference itself failed: the case (or this driver) is wrong."""


def parse_cases(path):
    """Returns [(name, {directive: value}, [(command, {directive: [values]})])]."""
    seqs, seq, block = [], None, None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")

    def end_block():
        if block is not None:
            text = "\n".join(block["lines"]).strip("\n")
            if not text:
                raise CaseError("%s: sequence '%s' has an empty command" % (path, seq[0]))
            seq[2].append((text, block["dirs"]))

    for no, line in enumerate(lines, 1):
        if line.startswith("==="):
            end_block()
            block = None
            seq = (line[3:].strip(), {}, [])
            if not seq[0]:
                raise CaseError("%s:%d: a sequence needs a name" % (path, no))
            seqs.append(seq)
        elif seq is None:
            continue
        elif line.startswith("---"):
            end_block()
            block = {"lines": [], "dirs": {}, "head": True}
        elif block is None:
            m = re.match(r"#(\S+)\s*(.*)$", line)
            if m and m.group(1) in SEQ_DIRECTIVES:
                seq[1][m.group(1)] = m.group(2).strip()
        else:
            m = re.match(r"#(\S+)(?: (.*))?$", line)
            if block["head"] and m and m.group(1) in DIRECTIVES:
                block["dirs"].setdefault(m.group(1), []).append(m.group(2) or "")
            else:
                block["head"] = False
                block["lines"].append(line)
    end_block()
    return seqs


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def subst(cmd, port):
    return cmd.replace("@PORT@", str(port)).replace("@TOKEN@", TOKEN)


def sq(s):
    return "'" + s.replace("'", "'\\''") + "'"


def restore_status(s):
    """Shell text that sets $? to s without ending an errexit shell."""
    if s == 0:
        return ""
    return "{ case $- in *e*) ;; *) (exit %d);; esac; } 2>/dev/null" % s


class Reference:
    """One persistent `bash --norc --noprofile` in directory w."""

    def __init__(self, w, home, path):
        self.w, self.n, self.status = w, 0, 0
        self.io = tempfile.mkdtemp(prefix="io.", dir=os.path.dirname(w))
        self.st, self.ack = self.io + "/status", self.io + "/ack"
        os.mkfifo(self.st, 0o600)
        os.mkfifo(self.ack, 0o600)
        script = os.path.join(w, "bash")
        os.mkfifo(script, 0o600)
        env = {"PATH": path, "HOME": home, "LANG": "C"}
        self.p = subprocess.Popen(["/bin/bash", "--norc", "--noprofile", "bash"], cwd=w, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, umask=0o022, start_new_session=True)
        self.feed = os.fdopen(open_writer(script, self.p), "w")
        os.unlink(script)
        self.stfd = os.open(self.st, os.O_RDWR)

    def run(self, cmd):
        """Returns (stdout, stderr, exit code, cwd)."""
        self.n += 1
        out, err = "%s/out.%d" % (self.io, self.n), "%s/err.%d" % (self.io, self.n)
        self.feed.write("exec 0</dev/null 1>%s 2>%s; %s\n%s\n"
                        "{ builtin printf 'S%%s\\0%%s\\0' \"$?\" \"$PWD\" >%s; : <%s; } 2>/dev/null\n"
                        % (sq(out), sq(err), restore_status(self.status), cmd, sq(self.st), sq(self.ack)))
        self.feed.flush()
        buf, end = b"", time.time() + REF_LIMIT
        while buf.count(b"\0") < 2:
            if self.p.poll() is not None:
                raise CaseError("the reference shell ended (status %d) on: %s\n"
                                "  (a command that ends a shell needs #no-ref)" % (self.p.returncode, cmd))
            if time.time() > end:
                raise CaseError("the reference took over %d s on: %s" % (REF_LIMIT, cmd))
            r, _, _ = select.select([self.stfd], [], [], 0.2)
            if r:
                buf += os.read(self.stfd, 4096)
        code, cwd = buf[1:].split(b"\0")[:2]
        res = (readf(out), readf(err), int(code), cwd.decode("utf-8", "replace"))
        os.close(open_writer(self.ack, self.p))
        self.status = res[2]
        return res

    def close(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()
        try:
            self.feed.close()
        except OSError:
            pass
        os.close(self.stfd)
        shutil.rmtree(self.io, ignore_errors=True)


def open_writer(fifo, proc):
    """Opens fifo for writing once proc has it open for reading (blocking fd)."""
    end = time.time() + REF_LIMIT
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return fd
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
        if proc.poll() is not None:
            raise CaseError("the reference shell ended (status %d) before it read %s" % (proc.returncode, fifo))
        if time.time() > end:
            raise CaseError("the reference shell did not open %s in %d s" % (fifo, REF_LIMIT))
        time.sleep(0.005)


def readf(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def hs_env(base, home):
    """The environment of hs: private state, config and runtime directories."""
    env = {"PATH": STD_PATH, "HOME": home, "LANG": "C",
           "XDG_STATE_HOME": base + "/state", "XDG_CONFIG_HOME": base + "/config",
           "XDG_CACHE_HOME": base + "/cache", "XDG_RUNTIME_DIR": base + "/run"}
    for k in ("DOCKER_HOST", "HS_CONFIG", "HS_RUNNER", "HS_PLUGIN_PATH", "top_builddir", "top_srcdir"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


class Serve:
    """One `hs serve` process; sessions are opened and closed through it."""

    def __init__(self, hs, base, home):
        self.home, self.sessions = home, 0
        os.makedirs(base + "/run", 0o700)
        env = hs_env(base, home)
        self.p = subprocess.Popen([hs, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env, umask=0o022, cwd=base)
        self.id, self.buf = 0, b""

    def send(self, o):
        self.p.stdin.write(json.dumps(o).encode() + b"\n")
        self.p.stdin.flush()

    def line(self, end):
        """The next line of hs serve, None at EOF, "" past end (unbuffered:
        select must see every byte not yet taken)."""
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return ""
            data = os.read(fd, 65536)
            if not data:
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def req(self, o, limit):
        self.id += 1
        o["id"] = self.id
        self.send({k: v for k, v in o.items() if k != "cancel_on_output"})
        end = time.time() + limit
        while True:
            line = self.line(end)
            if line == "":
                return {"ok": False, "error": "no reply in %d s" % limit}
            if line is None:
                return {"ok": False, "error": "hs serve ended"}
            r = json.loads(line)
            if r.get("event") == "output" and o.pop("cancel_on_output", False):
                self.id += 1
                self.send({"id": self.id, "op": "cancel", "session": o["session"]})
            elif r.get("event") == "approval":
                # The session runs in ask mode so that what the analyser
                # cannot read (a syntax error) still runs: every ask is
                # approved once.  Its reply carries an id no request waits on.
                self.id += 1
                self.send({"id": self.id, "op": "approve", "request": r.get("request"), "decision": "once"})
            elif r.get("id") == o["id"] and "event" not in r:
                return r

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


class RunClient:
    """`hs run -s NAME --json` per command, one hs process each, answering
    the same requests as Serve: the session outlives each hs process."""

    def __init__(self, hs, base, home):
        self.hs, self.home, self.sessions, self.opened = hs, home, 0, {}
        os.makedirs(base + "/run", 0o700)
        self.env = hs_env(base, home)

    def req(self, o, limit):
        op, name = o["op"], o["session"]
        if op == "open":
            self.opened[name] = o
            return {"ok": True}
        spec = self.opened[name]
        if op == "close":
            argv = [self.hs, "session", "close", name]
        else:
            argv = [self.hs, "run", "-s", name, "-b", spec["backend"], "--json", "--approval", "approve"]
            argv += ["--isolate"] if spec.get("isolate") else []
            argv += ["--image", spec["image"]] if spec.get("image") else []
            argv += ["-t", str(o["timeout"])] if "timeout" in o else []
            argv += ["-C", o["cwd"]] if o.get("cwd") else []
            for k, v in o.get("env", {}).items():
                argv += ["-e", "%s=%s" % (k, v)]
            argv += ["--", o["command"]]
        # hs run's own directory is where a new local session starts (item 7).
        try:
            p = subprocess.run(argv, cwd=spec.get("workspace") or "/", env=self.env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=limit, umask=0o022)
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": "no reply in %d s" % limit}
        if op == "close":
            return {"ok": p.returncode == 0, "error": p.stderr}
        try:
            r = json.loads(p.stdout)
            r["ok"] = True
            return r
        except ValueError:
            if p.returncode == 77 and "denied" in p.stderr:
                raise Denied(p.stderr.strip())
            return {"ok": False, "error": "exit %d, no JSON: %s" % (p.returncode, (p.stdout + p.stderr)[:300])}

    def close(self):
        pass


def reply_text(r, key):
    if r.get(key + "_b64"):
        import base64
        return base64.b64decode(r[key + "_b64"]).decode("utf-8", "replace")
    return r.get(key) or ""


class HsSession:
    def __init__(self, serve, name, args, w):
        self.s, self.name, self.status = serve, name, 0
        o = {"op": "open", "session": name, "backend": args.backend, "approval": "ask"}
        if args.image:
            o["image"] = args.image
        if not args.start_cd:
            o["workspace"] = w
            o["cwd"] = w
        if args.isolate:
            o["isolate"] = True
        r = serve.req(o, 120)
        if not r.get("ok"):
            raise CaseError("open failed: %s" % json.dumps(r))

    def pwd(self, status):
        """The session's $PWD, through a hidden exec that puts $? back to status."""
        h = self.s.req({"op": "exec", "session": self.name,
                        "command": "builtin printf '%%s\\n' \"$PWD\"\n%s" % restore_status(status)}, 120)
        return reply_text(h, "stdout")[:-1] if h.get("ok") else "(hidden pwd failed: %s)" % h.get("error")

    def run(self, cmd, timeout, env=None, cwd=None, cancel=False):
        o = {"op": "exec", "session": self.name, "command": cmd}
        if cancel:
            o["stream"] = True
            o["cancel_on_output"] = True
        if timeout is not None:
            o["timeout"] = timeout
        if env:
            o["env"] = env
        if cwd:
            o["cwd"] = cwd
        r = self.s.req(o, (timeout or 0) + 120)
        if not r.get("ok"):
            raise CaseError("exec failed: %s" % json.dumps(r))
        code = r.get("exit_code")
        cwd = r.get("cwd")
        if cwd is None:
            cwd = self.pwd(code or 0)
        self.status = code
        notes = []
        if r.get("shell_restarted"):
            notes.append("shell_restarted (%s)" % r.get("shell_restarted_reason"))
        if r.get("cancelled"):
            notes.append("cancelled")
        if r.get("timed_out"):
            notes.append("timed_out")
        return (reply_text(r, "stdout"), reply_text(r, "stderr"), code, cwd, ", ".join(notes))

    def close(self):
        self.s.req({"op": "close", "session": self.name}, 60)


def normalize(res, w, home, port):
    out = []
    for v in res:
        if isinstance(v, str):
            for a, b in ((w, "@W@"), (home, "@HOME@")):
                v = v.replace(a, b)
            v = v.replace(str(port), "@PORT@")
            # A bash fed through stdin names errors in functions "main: line
            # N:" and others "bash:"; the script-fed reference says "bash: line
            # N:" for both.  Line numbers count bookkeeping lines on each side.
            v = re.sub(r"(?m)^(bash|main): line \d+: ", "bash: ", v)
        out.append(v)
    return tuple(out)


def expectation_errors(res, dirs):
    errs = []
    stdout, stderr, code, cwd = res[:4]
    if "expect-exit" in dirs and str(code) != dirs["expect-exit"][0].strip():
        errs.append("exit code %s, expected %s" % (code, dirs["expect-exit"][0]))
    for key, text in (("stdout", stdout), ("stderr", stderr)):
        if "expect-%s-empty" % key in dirs and text != "":
            errs.append("%s not empty: %r" % (key, text))
        if "expect-" + key in dirs:
            want = "".join(x + "\n" for x in dirs["expect-" + key])
            if text != want:
                errs.append("%s %r, expected %r" % (key, text, want))
    for t in dirs.get("expect-stderr-has", []):
        if t not in stderr:
            errs.append("stderr %r lacks %r" % (stderr, t))
    for t in dirs.get("expect-reply", []):
        if not any(n.startswith(t) for n in res[4].split(", ")):
            errs.append("the reply says %r, expected %r" % (res[4], t))
    if "expect-cwd" in dirs and cwd != dirs["expect-cwd"][0]:
        errs.append("cwd %r, expected %r" % (cwd, dirs["expect-cwd"][0]))
    return errs


def show(res):
    stdout, stderr, code, cwd, notes = res
    lines = ["exit: %s" % code, "cwd: %s" % cwd]
    if notes:
        lines.append("reply: " + notes)
    lines.append("stdout:")
    lines += ["  " + x for x in stdout.split("\n")]
    lines += ["stderr:"] + ["  " + x for x in stderr.split("\n")]
    return lines


class Side:
    """Runs one sequence on one side: the reference, or hs."""

    def __init__(self, kind, base, args, serve, label):
        self.kind, self.args, self.serve = kind, args, serve
        self.base = tempfile.mkdtemp(prefix=label + ".", dir=base)
        self.home = os.path.join(base, "home-" + label.split("-")[0])
        os.makedirs(self.home, exist_ok=True)
        self.w = os.path.join(self.base, "w")
        os.mkdir(self.w)
        self.port = free_port()
        if kind == "ref":
            self.sh = Reference(self.w, self.home, args.ref_path)
        else:
            serve.sessions += 1
            self.sh = HsSession(serve, "diff%d" % serve.sessions, args, self.w)
            self.home = serve.home
        if args.start_cd:
            if kind != "ref":
                self.w = os.path.join(args.start_cd, "s%d" % serve.sessions)
            self.raw("mkdir -p %s && cd %s" % (sq(self.w), sq(self.w)), None)

    def start_cwd(self):
        """Where the side is before its first command (normalized)."""
        if self.kind == "ref":
            return "@W@"
        return normalize((self.sh.pwd(0),), self.w, self.home, self.port)[0]

    def raw(self, cmd, timeout):
        if self.kind == "ref":
            return self.sh.run(cmd) + ("",)
        return self.sh.run(cmd, timeout)

    def run(self, cmd, dirs):
        t = dirs.get("timeout")
        if self.kind == "ref":
            res = self.raw(subst(cmd, self.port), None)
        else:
            env = dict(x.split("=", 1) for x in dirs.get("env", []))
            cwd = dirs.get("exec-cwd", [None])[0]
            res = self.sh.run(subst(cmd, self.port), int(t[0]) if t else None, env,
                              cwd and cwd.replace("@W@", self.w), "cancel-on-output" in dirs)
        return normalize(res, self.w, self.home, self.port)

    def close(self):
        try:
            self.sh.close()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def run_sequence(name, cmds, args, base, serve):
    """Returns the number of failures."""
    fails = 0
    a_kind = "ref"
    b_kind = "ref" if args.self_check else "hs"
    steps = [(c, d) for c, d in cmds if not (args.self_check and "no-ref" in d)]
    results = {}
    for kind, label in ((a_kind, "ref"), (b_kind, "ref2" if args.self_check else "hs")):
        side = None
        res = []
        try:
            side = Side(kind, base, args, serve, label)
            cwd = side.start_cwd()
            for i, (c, d) in enumerate(steps):
                if label == "ref" and "no-ref" in d:
                    res.append(None)
                    cwd = None
                    continue
                # Commands run only where the reference ran them: a session
                # that lost its cwd (today's sessions start in /) could
                # otherwise write into the host's directories.
                ref = results.get("ref")
                want = None
                if ref is not None:
                    want = "@W@" if i == 0 else ref[i - 1][3] if ref[i - 1] is not None else None
                if want is not None and cwd != want:
                    raise CaseError("before command #%d the session is in '%s', the reference in '%s': "
                                    "the rest of the sequence is not run" % (i + 1, cwd, want))
                res.append(side.run(c, d))
                cwd = res[-1][3]
        except Denied as e:
            print("skip: %s (%s)" % (name, e))
            return 0
        except CaseError as e:
            print("FAIL: %s [%s]: %s" % (name, label, e))
            if kind == "ref":
                raise BrokenCase(name)
            return 1
        finally:
            if side:
                side.close()
        results[label] = res
    a, b = results["ref"], results["ref2" if args.self_check else "hs"]
    for i, (c, d) in enumerate(steps):
        where = "%s #%d: %s" % (name, i + 1, c.split("\n")[0][:70])
        errs = expectation_errors(b[i], d)
        diff = ""
        if a[i] is not None:
            errs += ["reference: " + e for e in expectation_errors(a[i], d)]
            if a[i] != b[i]:
                errs.append("differs from the reference:")
                diff = "".join(difflib.unified_diff(
                    [x + "\n" for x in show(a[i])], [x + "\n" for x in show(b[i])],
                    "reference", "reference 2" if args.self_check else "hs", n=20))
        if args.show:
            print("== %s\n%s" % (where, "\n".join("    " + x for x in show(a[i] or b[i]))))
        if errs:
            fails += 1
            print("FAIL: %s\n  command: %s\n  %s" % (where, c.replace("\n", "\n           "), "\n  ".join(errs)))
            sys.stdout.write(diff)
            if a[i] is None:
                print("\n".join("    " + x for x in show(b[i])))
    if not fails:
        print("ok: %s (%d commands)" % (name, len(steps)))
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="+", help="case files")
    ap.add_argument("--hs", default=os.environ.get("HS"), help="the hs binary (default $HS)")
    ap.add_argument("--client", default="serve", choices=("serve", "run"),
                    help="drive hs through `hs serve` (default) or one `hs run -s NAME --json` per command "
                         "(approve mode: what the analyser cannot read, a syntax error, is denied)")
    ap.add_argument("--backend", default="local", choices=("local", "docker", "ssh"))
    ap.add_argument("--isolate", action="store_true", help="local backend in its namespaces")
    ap.add_argument("--image", help="image for the docker backend")
    ap.add_argument("--start-cd", metavar="DIR",
                    help="the hs side starts each sequence by a hidden `mkdir -p DIR/sN && cd DIR/sN` "
                         "(for backends without the host's directories)")
    ap.add_argument("--ref-path", default=STD_PATH,
                    help="PATH of the reference shell")
    ap.add_argument("--self-check", action="store_true",
                    help="run the reference against a second reference (every #no-ref command left out)")
    ap.add_argument("--show", action="store_true", help="print every command's result")
    ap.add_argument("--only", help="run only the sequences whose name contains this")
    args = ap.parse_args()
    label = "isolate" if args.isolate else args.backend
    seqs = []
    for f in args.cases:
        for name, sd, cmds in parse_cases(f):
            if args.only and args.only not in name:
                continue
            if sd.get("backends") and label not in sd["backends"].split(","):
                continue
            if sd.get("clients") and args.client not in sd["clients"].split(","):
                continue
            missing = [n for n in sd.get("needs", "").split() if not shutil.which(n, path=args.ref_path)]
            if missing:
                print("skip: %s (needs %s)" % (name, " ".join(missing)))
                continue
            seqs.append((name, cmds))
    base = tempfile.mkdtemp(prefix="hsdiff.", dir="/tmp")
    os.chmod(base, 0o755)
    serve = None
    fails = broken = 0
    try:
        if not args.self_check:
            if not args.hs:
                print("difftest: no hs binary: pass --hs PATH or set HS")
                return 2
            args.hs = os.path.abspath(args.hs)
            home = os.path.join(base, "home-hs")
            os.makedirs(home)
            serve = (RunClient if args.client == "run" else Serve)(args.hs, base, home)
            probe = os.path.join(base, "probe")
            os.mkdir(probe)
            pa = argparse.Namespace(**vars(args))
            try:
                HsSession(serve, "probe", pa, probe).close()
            except CaseError as e:
                print("SKIP: the %s backend cannot open a session here: %s" % (label, e))
                return 77
        for name, cmds in seqs:
            try:
                fails += run_sequence(name, cmds, args, base, serve)
            except BrokenCase:
                broken += 1
    finally:
        if serve:
            serve.close()
        shutil.rmtree(base, ignore_errors=True)
    if args.client == "run":
        label += " (hs run -s)"
    print("%s: %d sequence(s), %d failing command(s)" % (label if not args.self_check else "self-check",
                                                       len(seqs), fails))
    if broken:
        # Exit 99 (a hard error under automake) rather than 1, which the
        # XFAIL entries would take for an expected failure.
        print("ERROR: %d sequence(s) failed on the reference side" % broken)
        return 99
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # a driver bug is an error, never an expected failure
        import traceback
        traceback.print_exc()
        sys.exit(99)
