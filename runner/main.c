/* SPDX-License-Identifier: MIT */
/* hs-runner: the in-sandbox command runner (see hs-runner(7)). */
#include "runner.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hs-runner --daemon [--dir DIR] [--idle SECONDS] [--foreground]\n"
		"       hs-runner --attach [--dir DIR] [--start] [--handoff] [--idle SECONDS]\n"
		"       hs-runner --stop [--dir DIR] [--grace MS]\n"
		"       hs-runner --exec [--deadline-ms MS] [--grace-ms MS] -- ARGV...\n"
		"\n"
		"Runs commands for hs inside a sandbox.  The daemon owns the commands and\n"
		"listens on DIR/sock; every stream is an --attach that proxies its\n"
		"stdin/stdout to that socket.\n"
		"\n"
		"  --daemon         start the daemon (it detaches once it listens)\n"
		"  --attach         proxy stdin/stdout to the daemon's socket; stdin starts\n"
		"                   with the session key (a KEY frame), which a daemon\n"
		"                   started here inherits\n"
		"  --stop           shut the daemon down: cancel every command (TERM, grace,\n"
		"                   KILL), wait until all are gone, remove the socket and\n"
		"                   lock; exit 0 also when no daemon listens\n"
		"  --exec           run ARGV once as a child of this subreaper, stdin, stdout\n"
		"                   and stderr passed through; at the deadline or on TERM,\n"
		"                   INT or HUP kill its whole tree (TERM, grace, KILL, setsid\n"
		"                   children included); exit with its status, 124 at the\n"
		"                   deadline, 128+N after signal N\n"
		"  --deadline-ms MS with --exec: relative deadline (default: none)\n"
		"  --grace-ms MS    with --exec: TERM-to-KILL time (default %d)\n"
		"  --start          with --attach: start the daemon if none listens\n"
		"  --handoff        with --attach: pass the daemon's connection to the\n"
		"                   caller (stdout a unix socket) instead of proxying\n"
		"  --dir DIR        runtime directory, created 0700 if missing (default:\n"
		"                   $XDG_RUNTIME_DIR/hs-runner, else /tmp/hs-runner-UID)\n"
		"  --idle SECONDS   exit after this long without streams or commands\n"
		"                   (default %d; 0 never)\n"
		"  --grace MS       with --stop: TERM-to-KILL time for every command\n"
		"                   (default: each command's own)\n"
		"  --foreground     with --daemon: do not detach\n"
		"  --help           show this help and exit\n"
		"  --version        show the version and protocol range and exit\n"
		"\n"
		"See hs-runner(7).\n", HSR_DEFAULT_GRACE_MS, HSR_DEFAULT_IDLE_S);
}

/* Parses milliseconds below 2^32 for --grace, --grace-ms, --deadline-ms. */
static int parse_ms(const char *opt, const char *s, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (!*s || *end || v < 0 || v >= 0xffffffffLL) {
		hsr_warn("invalid %s '%s': expected milliseconds", opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* `--exec`: the one-shot runner, for exec-mode backends. */
static int exec_main(char **argv, int64_t deadline_ms, int64_t grace_ms)
{
	struct hsr_shim_spec s = {
		.argv = argv,
		.envp = environ,
		.cwd = ".",
		.fd_in = 0, .fd_out = 1, .fd_err = 2, .fd_state = -1,
		.ctl_fd = -1, .status_fd = -1,
		.deadline = deadline_ms > 0 ? hsr_now_ms() + deadline_ms : 0,
		.grace_ms = grace_ms >= 0 ? grace_ms : HSR_DEFAULT_GRACE_MS,
	};

	return hsr_shim_oneshot(&s);
}

static int parse_idle(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < 0 || v > INT_MAX / 1000)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_DAEMON = 256, OPT_ATTACH, OPT_STOP, OPT_START, OPT_DIR, OPT_IDLE, OPT_GRACE,
	       OPT_FG, OPT_HELP, OPT_VERSION, OPT_EXEC, OPT_DEADLINE_MS, OPT_GRACE_MS, OPT_HANDOFF };
	static const struct option opts[] = {
		{ "daemon", no_argument, NULL, OPT_DAEMON },
		{ "attach", no_argument, NULL, OPT_ATTACH },
		{ "stop", no_argument, NULL, OPT_STOP },
		{ "grace", required_argument, NULL, OPT_GRACE },
		{ "exec", no_argument, NULL, OPT_EXEC },
		{ "deadline-ms", required_argument, NULL, OPT_DEADLINE_MS },
		{ "grace-ms", required_argument, NULL, OPT_GRACE_MS },
		{ "start", no_argument, NULL, OPT_START },
		{ "handoff", no_argument, NULL, OPT_HANDOFF },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "idle", required_argument, NULL, OPT_IDLE },
		{ "foreground", no_argument, NULL, OPT_FG },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int mode = 0, start = 0, handoff = 0, fg = 0, idle = HSR_DEFAULT_IDLE_S, opt;
	int64_t grace = -1, deadline = 0;
	char defdir[256];
	const char *dir = NULL;

	/* "+": the options end at the first word of --exec's ARGV. */
	while ((opt = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_DAEMON:
		case OPT_ATTACH:
		case OPT_STOP:
		case OPT_EXEC:
			if (mode && mode != opt) {
				hsr_warn("--daemon, --attach, --stop and --exec are exclusive");
				return 2;
			}
			mode = opt;
			break;
		case OPT_START:
			start = 1;
			break;
		case OPT_HANDOFF:
			handoff = 1;
			break;
		case OPT_DIR:
			dir = optarg;
			break;
		case OPT_IDLE:
			if (parse_idle(optarg, &idle) < 0) {
				hsr_warn("invalid --idle '%s': expected whole seconds", optarg);
				return 2;
			}
			break;
		case OPT_GRACE:
		case OPT_GRACE_MS:
			if (parse_ms(opt == OPT_GRACE ? "--grace" : "--grace-ms", optarg, &grace) < 0)
				return 2;
			break;
		case OPT_DEADLINE_MS:
			if (parse_ms("--deadline-ms", optarg, &deadline) < 0)
				return 2;
			break;
		case OPT_FG:
			fg = 1;
			break;
		case OPT_HELP:
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("hs-runner %s (protocol %d..%d)\n", HSR_VERSION, HSR_PROTO_MIN,
			       HSR_PROTO_MAX);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (mode == OPT_EXEC) {
		if (optind >= argc) {
			hsr_warn("--exec needs a command: hs-runner --exec -- ARGV...");
			return 2;
		}
		return exec_main(argv + optind, deadline, grace);
	}
	if (optind < argc || !mode) {
		usage(stderr);
		return 2;
	}
	if (!dir) {
		const char *xdg = getenv("XDG_RUNTIME_DIR");

		if (xdg && *xdg)
			snprintf(defdir, sizeof(defdir), "%s/hs-runner", xdg);
		else
			snprintf(defdir, sizeof(defdir), "/tmp/hs-runner-%u", (unsigned)geteuid());
		dir = defdir;
	}
	if (mode == OPT_ATTACH)
		return hsr_attach_main(dir, start, idle, handoff);
	if (mode == OPT_STOP)
		return hsr_stop_main(dir, grace);
	{
		struct hsr_daemon_opts o = { .dir = dir, .idle_s = idle, .foreground = fg };
		struct hsr_rundir rd;
		char err[600];
		int lockfd;

		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		if (hsr_rundir_open(&rd, dir, err, sizeof(err)) < 0) {
			hsr_warn("%s", err);
			return 1;
		}
		lockfd = hsr_rundir_lock(&rd, err, sizeof(err));
		if (lockfd < 0 || hsr_daemon_start(&o, &rd, lockfd, err, sizeof(err)) < 0) {
			hsr_warn("%s", err);
			return 1;
		}
		return 0;
	}
}
