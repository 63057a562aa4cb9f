# SPDX-License-Identifier: MIT
# The snapshot shell of exec-mode backends (no runner: modal, daytona),
# compared with what one persistent `bash --norc --noprofile` would do.
# Sourced by tests/modal/shell.test and tests/daytona/shell.test, which
# define ok and bad (report one check).  Session names are made unique by
# $$ (the emulators' sandboxes share this machine's /tmp).
# Usage: snapshot_shell_checks BACKEND TAG HS-COMMAND...
#   (HS-COMMAND: hs with the backend's environment, e.g. env X=1 core/hs)
snapshot_shell_checks() {
	local BACKEND=$1 s=ss$$-$2 out want
	shift 2
	eval "hsb() { $(printf '%q ' "$@") \"\$@\"; }"
	# hs run: per command
	r() { hsb run -b "$BACKEND" -s "$s" "$@" </dev/null 2>&1; }
	is() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got [$2], want [$3]"; fi; }

	# A new session given -C on its first command starts there.  First: the
	# daytona emulator's sandboxes share one scratch dir, so one snapshot.
	out=$(hsb run -b "$BACKEND" -s "$s-c" -C /etc -- 'export KEEP_B=2' </dev/null 2>&1)
	is "a new session starts in the first -C" \
		"$(hsb run -b "$BACKEND" -s "$s-c" -- 'pwd; echo $KEEP_B' </dev/null 2>&1)" "/etc
2"
	hsb session close "$s-c" >/dev/null 2>&1

	# The umask: 022 when the session starts, and it persists.
	is "umask 022 to start" "$(r -- 'umask; : >f$$; stat -c %a f$$; rm -f f$$')" "0022
644"
	r -- 'umask 027' >/dev/null
	is "umask persists" "$(r -- umask)" 0027
	r -- 'umask 022' >/dev/null

	# -C: for that command only; the session's cwd stays where it was.
	r -- 'cd /usr && export KEEP_A=1' >/dev/null
	is "-C runs the command there" "$(r -C /bin -- pwd)" /bin
	is "-C is not the session's cwd afterwards" "$(r -- pwd)" /usr
	is "-C with a cd inside: the session's cwd stays" "$(r -C /bin -- 'cd /etc; pwd')" /etc
	is "... still /usr" "$(r -- 'pwd; echo $KEEP_A')" "/usr
1"

	# -e: for that command only, over the session's own value.
	is "-e reaches the command" "$(r -e PC_NEW=x -- 'echo $PC_NEW')" x
	is "-e of a new name is gone after" "$(r -- 'echo ${PC_NEW-unset}')" unset
	r -- 'export PC_OLD=session' >/dev/null
	is "-e over a session variable" "$(r -e PC_OLD=cmd -- 'echo $PC_OLD')" cmd
	is "the session's value comes back" "$(r -- 'echo $PC_OLD')" session
	is "-e with quotes and \$ over a session variable" "$(r -e "PC_OLD=a'b \$c \"d" -- 'echo "$PC_OLD"')" "a'b \$c \"d"
	is "... the session's value comes back" "$(r -- 'echo $PC_OLD')" session
	# A command that sets the variable itself keeps what it set, as a shell would.
	r -e PC_OLD=cmd -- 'export PC_OLD=mine' >/dev/null
	is "a value the command set is kept" "$(r -- 'echo $PC_OLD')" mine
	want=$(r -- 'echo $PATH')
	is "-e PATH for that command" "$(r -e PATH=/bin:/usr/bin:/sbin -- 'echo $PATH')" /bin:/usr/bin:/sbin
	is "PATH is the session's again" "$(r -- 'echo $PATH')" "$want"

	# No descriptor of hs's in the command: what bash -c would show.
	is "fds: 0 1 2 and ls's own" "$(r -- 'ls /proc/self/fd' | tr '\n' ' ')" "0 1 2 3 "
	out=$(r -- 'echo x >&3' 2>&1)
	case $out in *"Bad file descriptor"*) ok "fd 3 is not open" ;; *) bad "fd 3 is not open: [$out]" ;; esac

	# hs serve: exec{env} and exec{cwd} for that exec only.
	python3 - "${top_srcdir:-${srcdir:-.}}/tests" "$BACKEND" "$s-v" "$@" <<'PY' || bad "serve exec env/cwd"
import sys
sys.path.insert(0, sys.argv[1])
from hsserve import Serve
backend, sess = sys.argv[2], sys.argv[3]
srv = Serve(sys.argv[4:])
call = srv.call
fails = 0
def check(name, got, want):
    global fails
    print(("ok: " if got == want else "FAIL: ") + name + ("" if got == want else " got %r want %r" % (got, want)))
    fails += got != want
def out(i, **kw):
    r = call(dict(id=i, op="exec", session=sess, timeout=60, **kw))
    return r.get("stdout", r)
call({"id": 1, "op": "open", "backend": backend, "session": sess})
out(2, command="cd /usr; export SV=own")
check("serve: env for that exec", out(3, command="echo $SV $SV2", env={"SV": "e", "SV2": "f"}), "e f\n")
check("serve: env not kept", out(4, command="echo $SV ${SV2-unset}"), "own unset\n")
check("serve: cwd for that exec", out(5, command="pwd", cwd="/etc"), "/etc\n")
check("serve: cwd not kept", out(6, command="pwd"), "/usr\n")
call({"id": 7, "op": "close", "session": sess})
srv.close()
sys.exit(1 if fails else 0)
PY
	hsb session close "$s" >/dev/null 2>&1
	unset -f r is hsb
}
