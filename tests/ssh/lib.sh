# SPDX-License-Identifier: MIT
# tests/ssh/lib.sh - sourced by the ssh tests and bench: a private OpenSSH
# sshd on a free loopback port, with ed25519 keys made now, in a mktemp dir.
#   ssh_start DIR [nosftp]   start sshd for DIR (keys, config, pid, log in DIR)
#   ssh_stop DIR             stop it and every connection it serves
#   ssh_conf DIR PORT FILE [extra]  write an hs config for it
ssh_skip() {
	if [ "${HS_REQUIRE_SERVICES:-0}" = 1 ]; then echo "FAIL: $*"; exit 1; fi
	echo "SKIP: $*"; exit 77
}

ssh_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ssh_start() {
	local d=$1 mode=${2:-sftp}
	[ -x /usr/sbin/sshd ] || ssh_skip "no /usr/sbin/sshd (apt-get install openssh-server)"
	command -v ssh-keygen >/dev/null || ssh_skip "no ssh-keygen (apt-get install openssh-client)"
	mkdir -p "$d" "$d/home"
	[ -f "$d/hostkey" ] || ssh-keygen -q -t ed25519 -N '' -f "$d/hostkey" || return 1
	[ -f "$d/userkey" ] || { ssh-keygen -q -t ed25519 -N '' -f "$d/userkey" &&
		cp "$d/userkey.pub" "$d/authorized_keys" && chmod 600 "$d/authorized_keys"; } || return 1
	[ -f "$d/port" ] || ssh_free_port >"$d/port"
	cat >"$d/sshd_config" <<CFG
Port $(cat "$d/port")
ListenAddress 127.0.0.1
HostKey $d/hostkey
AuthorizedKeysFile $d/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile $d/sshd.pid
SetEnv HOME=$d/home
CFG
	[ "$mode" = nosftp ] || echo "Subsystem sftp internal-sftp" >>"$d/sshd_config"
	[ "$(id -u)" = 0 ] && mkdir -p /run/sshd
	/usr/sbin/sshd -f "$d/sshd_config" -E "$d/sshd.log" || ssh_skip "sshd does not start (see $d/sshd.log)"
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$(cat "$d/port")") 2>/dev/null && break
		sleep 0.1
	done
	echo "[127.0.0.1]:$(cat "$d/port") $(cut -d' ' -f1,2 "$d/hostkey.pub")" >"$d/known_hosts"
}

# Stop the sshd of DIR and the per-connection processes it forked (ours only).
ssh_stop() {
	local d=$1 pid
	[ -f "$d/sshd.pid" ] || return 0
	pid=$(cat "$d/sshd.pid")
	kill "$pid" 2>/dev/null
	for c in $(pgrep -P "$pid" 2>/dev/null); do kill "$c" 2>/dev/null; done
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	rm -f "$d/sshd.pid"
}

ssh_conf() {
	local d=$1 port=$2 file=$3 extra=${4:-}
	cat >"$file" <<CFG
ssh = { host = "127.0.0.1"; port = $port; user = "$(id -un)"; identity_file = "$d/userkey";
        known_hosts = "$d/known_hosts"; connect_timeout = 5; $extra };
CFG
}
