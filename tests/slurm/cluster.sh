# SPDX-License-Identifier: MIT
# Sourced by the slurm tests: a private single-node Slurm cluster.
#
# Everything lives under $SL_DIR (a mktemp dir): slurm.conf with free ports,
# the controller's state, slurmd's spool, pid files and logs, and a private
# munged with its own key and socket (AuthInfo=socket=...), so nothing in
# /etc/slurm, /etc/munge or /run/munge is read or written and nothing a
# concurrent test (or the acceptance cluster) uses is touched.  slurm_stop
# ends exactly the daemons slurm_start started, by pid.

sl_skip() { # sl_skip REASON: skip (77), or fail when services are required
	echo "SKIP: $*" >&2
	[ "${HS_REQUIRE_SERVICES:-0}" = 1 ] && exit 1
	exit 77
}

sl_free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# slurm_start [CPUS]: start the cluster; exports SLURM_CONF, SL_NODE, SL_PART.
slurm_start() {
	local cpus=${1:-2}
	for b in slurmctld slurmd sbatch srun squeue scancel munged mungekey; do
		command -v $b >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin command -v $b >/dev/null 2>&1 ||
			sl_skip "$b not installed (apt-get install slurm-wlm munge)"
	done
	[ "$(id -u)" = 0 ] || sl_skip "a private slurmd must run as root"
	export PATH=$PATH:/usr/sbin:/sbin
	SL_DIR=$(mktemp -d /tmp/hs-slurm-test.XXXXXX)
	chmod 755 "$SL_DIR"
	mkdir -p "$SL_DIR/state" "$SL_DIR/spool" "$SL_DIR/munge"
	chmod 700 "$SL_DIR/munge"
	# A private munged: own key, socket, pid, seed and log.
	mungekey -c -k "$SL_DIR/munge/key" >/dev/null 2>&1 || sl_skip "mungekey failed"
	munged -f --socket="$SL_DIR/munge/sock" --key-file="$SL_DIR/munge/key" \
		--pid-file="$SL_DIR/munge/pid" --seed-file="$SL_DIR/munge/seed" \
		--log-file="$SL_DIR/munge/log" >/dev/null 2>&1 || sl_skip "munged did not start: $(tail -1 "$SL_DIR/munge/log" 2>/dev/null)"
	SL_MUNGED=$(cat "$SL_DIR/munge/pid" 2>/dev/null)
	SL_NODE=$(hostname -s)
	SL_PART=hstest
	local cport dport
	cport=$(sl_free_port); dport=$(sl_free_port)
	while [ "$dport" = "$cport" ]; do dport=$(sl_free_port); done
	: > "$SL_DIR/plugstack.conf"
	cat > "$SL_DIR/slurm.conf" <<CFG
ClusterName=hstest$$
SlurmctldHost=$SL_NODE(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
AuthType=auth/munge
AuthInfo=socket=$SL_DIR/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SL_DIR/state
SlurmdSpoolDir=$SL_DIR/spool
SlurmctldPidFile=$SL_DIR/slurmctld.pid
SlurmdPidFile=$SL_DIR/slurmd.pid
SlurmctldLogFile=$SL_DIR/slurmctld.log
SlurmdLogFile=$SL_DIR/slurmd.log
PlugStackConfig=$SL_DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerParameters=sched_interval=1
MessageTimeout=10
KillWait=2
InactiveLimit=0
NodeName=$SL_NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=2000 State=UNKNOWN
PartitionName=$SL_PART Nodes=$SL_NODE Default=YES MaxTime=INFINITE State=UP
CFG
	export SLURM_CONF=$SL_DIR/slurm.conf
	slurmctld -D -f "$SLURM_CONF" >"$SL_DIR/slurmctld.out" 2>&1 &
	SL_CTLD=$!
	slurmd -D -f "$SLURM_CONF" -N "$SL_NODE" >"$SL_DIR/slurmd.out" 2>&1 &
	SL_SLURMD=$!
	local i
	for i in $(seq 60); do
		sinfo -h -p $SL_PART -o %T 2>/dev/null | grep -qE '^(idle|mix|alloc)' && return 0
		kill -0 $SL_CTLD 2>/dev/null || break
		sleep 0.5
	done
	echo "--- slurmctld.log" >&2; tail -20 "$SL_DIR/slurmctld.log" >&2
	echo "--- slurmd.log" >&2; tail -20 "$SL_DIR/slurmd.log" >&2
	slurm_stop
	sl_skip "the private Slurm cluster did not come up"
}

# The pids of p and all its descendants.
sl_tree() {
	local c
	echo "$1"
	for c in $(pgrep -P "$1" 2>/dev/null); do sl_tree "$c"; done
}

slurm_stop() {
	local p i
	[ -n "${SL_DIR:-}" ] || return 0
	if [ -n "${SL_CTLD:-}" ] && kill -0 "$SL_CTLD" 2>/dev/null; then
		scancel --full -p "${SL_PART:-hstest}" >/dev/null 2>&1
		for i in $(seq 50); do
			[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
	for p in ${SL_SLURMD:-} ${SL_CTLD:-}; do
		kill "$p" 2>/dev/null
	done
	for p in ${SL_SLURMD:-} ${SL_CTLD:-}; do
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	# A slurmstepd of this cluster that outlived slurmd (it holds our
	# slurmd.log open) goes too, with whatever it started.
	for p in $(pgrep -x slurmstepd 2>/dev/null); do
		ls -l /proc/$p/fd 2>/dev/null | grep -qF "$SL_DIR/" || continue
		kill -9 $(sl_tree "$p") 2>/dev/null
	done
	if [ -n "${SL_MUNGED:-}" ]; then
		kill "$SL_MUNGED" 2>/dev/null
		for i in $(seq 50); do kill -0 "$SL_MUNGED" 2>/dev/null || break; sleep 0.1; done
	fi
	SL_CTLD= SL_SLURMD= SL_MUNGED=
	[ "${HS_KEEP_TEST_DIRS:-0}" = 1 ] || rm -rf "$SL_DIR"
}
