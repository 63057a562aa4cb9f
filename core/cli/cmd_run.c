/* SPDX-License-Identifier: MIT */
/*
 * cmd_run.c - `hs run`: one command, output streamed straight through.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/safety/approval.h"
#include "core/guard.h"
#include "core/capture.h"
#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/env.h"
#include "core/exec.h"
#include "core/serve/serve-req.h"
#include "core/config/hsconf.h"
#include "core/json.h"
#include "core/safety/redact.h"
#include "core/pipeline.h"
#include "core/session.h"
#include "core/cli/run-pty.h"

extern char **environ;

static int cancel_pipe[2] = { -1, -1 };

static void
on_sigint(int sig)
{
	int saved = errno;
	char c = (char)sig;
	if (write(cancel_pipe[1], &c, 1) < 0) {
		/* Nothing to do: the pipe is full, a cancel is already pending. */
	}
	errno = saved;
}

struct run_sink {
	int json;
	int spill;      /* --spill: the whole output as files in the sandbox */
	int named;      /* -s: the session (and its kept output) outlives this run */
	struct hs_capture cap[3];
	int write_failed;
	struct hs_run_pty *pty; /* --pty: input and resize through run-pty.c */
};

static int
write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int
run_output(void *ctx, int stream, const void *buf, size_t len)
{
	struct run_sink *s = ctx;
	if (s->json) {
		hs_capture_add(&s->cap[stream], buf, len);
		return 0;
	}
	if (write_all(stream, buf, len) < 0) {
		/* The reader went away: stop the command rather than run it blind. */
		s->write_failed = 1;
		return -1;
	}
	return 0;
}

static int
run_resize(void *ctx, uint16_t *rows, uint16_t *cols)
{
	struct run_sink *s = ctx;
	return hs_run_pty_resize(s->pty, rows, cols);
}

static long
run_input(void *ctx, void *buf, size_t len)
{
	struct run_sink *s = ctx;
	if (s->pty)
		return hs_run_pty_input(s->pty, buf, len);
	ssize_t n;
	do
		n = read(0, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -1 : 0;
	return (long)n;
}

static int
run_cancelled(void *ctx)
{
	char buf[16];
	return read(cancel_pipe[0], buf, sizeof(buf)) > 0;
}

/* A word the shell reads as itself, needing no quotes. */
static int
plain_word(const char *w)
{
	if (!*w)
		return 0;
	for (const char *p = w; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,:@%+=", *p))
			return 0;
	return w[0] != '=' ;
}

/* One word is a shell string; several are quoted (where needed) and joined. */
static char *
join_command(int argc, char **argv)
{
	size_t len = 1;
	if (argc == 1)
		return strdup(argv[0]);
	for (int i = 0; i < argc; i++)
		len += 4 * strlen(argv[i]) + 3;
	char *out = malloc(len), *o = out;
	if (!out)
		return NULL;
	for (int i = 0; i < argc; i++) {
		if (i)
			*o++ = ' ';
		if (plain_word(argv[i])) {
			size_t n = strlen(argv[i]);
			memcpy(o, argv[i], n);
			o += n;
			continue;
		}
		*o++ = '\'';
		for (const char *p = argv[i]; *p; p++) {
			if (*p == '\'') {
				memcpy(o, "'\\''", 4);
				o += 4;
			} else {
				*o++ = *p;
			}
		}
		*o++ = '\'';
	}
	*o = '\0';
	return out;
}

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: hs run [OPTIONS] -- COMMAND...\n"
	        "\n"
	        "Run COMMAND in the session shell of a backend.  One word is a shell string;\n"
	        "several words are quoted and joined.  stdout and stderr stream through\n"
	        "unmodified; the exit status is the command's.\n"
	        "\n"
	        "  -b, --backend NAME     backend (default: config 'backend', else local)\n"
	        "  -s, --session NAME     run in a named session that keeps cwd, exported\n"
	        "                         variables, functions and aliases (bash) across runs\n"
	        "  -t, --timeout SECONDS  kill every process of the command after SECONDS (exit 124)\n"
	        "  -C, --cwd DIR          run in DIR\n"
	        "  -e, --env K=V          set a variable for this command (repeatable)\n"
	        "      --approval MODE    ask, deny or approve (dangerous commands)\n"
	        "      --json             print {exit_code, stdout, stderr, ...} with bounded output\n"
	        "                         and the whole output's size (with -s: an output_id to\n"
	        "                         read the rest through hs serve's output op)\n"
	        "      --spill            with --json and -s: write the whole stdout and stderr to\n"
	        "                         files in the sandbox (stdout_file, stderr_file)\n"
	        "      --image IMAGE      container image (backends with images)\n"
	        "  -v, --mount SPEC       mount, docker syntax (repeatable; host paths need approval)\n"
	        "      --network NAME     network (default none, where the backend supports it);\n"
	        "                         allowlist: only the hosts of --allow-host or config 'allow'\n"
	        "      --allow-host H     allow egress to H (host, *.domain, host:port, CIDR range;\n"
	        "                         repeatable; implies --network allowlist)\n"
	        "      --memory SIZE      memory limit, e.g. 512m, 2g\n"
	        "      --cpus N           CPU limit, e.g. 1.5\n"
	        "      --isolate          local backend: isolate with namespaces\n"
	        "      --pty              run on a terminal in the sandbox, this terminal passed\n"
	        "                         through (raw; keystrokes judged like commands before\n"
	        "                         they are sent; window size followed); needs a tty\n"
	        "  -h, --help             show this help\n"
	        "\n"
	        "exit status: the command's (128+N after signal N); 124 timed out; 77 denied by\n"
	        "approval; 130 cancelled with Ctrl-C; 125 hs or backend failure.\n");
}

/* What one `hs run` carries through the pipeline. */
struct hs_run_io {
	struct hs_cmd_req cmd;
	struct run_sink rs;
	const char *const *allow; /* --allow-host entries; NULL: none given */
	size_t n_allow;
};

/* Ctrl-C, TERM and HUP cancel the command once it runs (not while a prompt waits). */
static void
run_signals(void *ctx, int on)
{
	struct sigaction sa = { .sa_handler = on ? on_sigint : SIG_DFL };
	if (!on)
		return;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* The exit status of an open or exec outcome that is not OK. */
static int
outcome_exit(int oc)
{
	return oc == HS_OUTCOME_DENIED ? HS_EXIT_DENIED : HS_EXIT_FAIL;
}

/* Print the --json result: with a named session, how to read the whole output. */
static void
run_json(struct hs_session *s, const struct hs_cmd_result *res, struct run_sink *rs)
{
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	hs_capture_json_result(g, &res->out, rs->cap, res->restored);
	hs_output_json(g, &s->cn, s->lim.output_keep, &res->out, rs->named, rs->spill);
	yajl_gen_map_close(g);
	hs_json_emit(g, 1);
}

/* Run io->cmd in an open session; the exit status. */
static int
run_exec(struct hs_session *s, struct hs_run_io *io)
{
	struct hs_cmd_result res;
	struct hs_sink_ops sink = {
		.ctx = &io->rs,
		.output = run_output,
		.input = run_input,
		.input_fd = isatty(0) ? -1 : 0,
		.cancelled = run_cancelled,
		.cancel_fd = cancel_pipe[0],
	};
	io->cmd.stdin_pipe = sink.input_fd >= 0;
	io->cmd.running = run_signals;
	if (io->rs.pty) {
		if (s->cn.exec_mode) {
			char why[512];
			hs_conn_pty_unsupported(&s->cn, why, sizeof(why));
			hs_die_msg("%s", why);
			return HS_EXIT_FAIL;
		}
		io->rs.pty->s = s;
		sink.input_fd = 0;
		sink.resize = run_resize;
		sink.resize_fd = hs_run_pty_winch_fd();
		io->cmd.stdin_pipe = 1;
		io->cmd.running = hs_run_pty_running;
		io->cmd.running_ctx = io->rs.pty;
	}
	int oc = hs_session_exec(s, &io->cmd, &sink, &res);
	if (res.restored)
		hs_warn("the command changed %u of hs's own files; they were put back", res.restored);
	if (oc != HS_OUTCOME_OK) {
		hs_die_msg("%s%s", oc == HS_OUTCOME_INVALID ? "--env: " : "", res.why);
		return outcome_exit(oc);
	}
	if (io->rs.json)
		run_json(s, &res, &io->rs);
	if (res.out.stdin_refused[0]) {
		hs_die_msg("stdin refused, the command was stopped: %s", res.out.stdin_refused);
		return HS_EXIT_DENIED;
	}
	if (res.out.timed_out) {
		/* A question is not a hang: say so, and what it asked (control
		 * characters shown as '?', so the line is only text). */
		if (res.out.waiting_input) {
			for (char *p = res.out.prompt; *p; p++)
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					*p = '?';
			hs_die_msg("command timed out after %lld s waiting for input (its last output line: "
			           "'%s'); give it stdin or the answer on the command line",
			           (long long)res.timeout_s, res.out.prompt);
		} else {
			hs_die_msg("command timed out after %lld s", (long long)res.timeout_s);
		}
		return HS_EXIT_TIMEOUT;
	}
	if (res.out.cancelled)
		return io->rs.write_failed ? 141 : 130;
	return res.out.exit_code;
}

/* Open the session (ephemeral when name is NULL), run the command, close. */
static int
run_in_session(struct hs_core *c, const char *name, const char *backend, struct hs_env_spec *spec,
               struct hs_run_io *io)
{
	struct hs_session s;
	char err[1024];
	int mode = hs_approval_mode_resolve(c, NULL, -1), rc;

	hs_session_init(&s, c, name, name != NULL, mode,
	                mode == HS_APPROVAL_ASK ? hs_approval_tty() : NULL);
	s.caller_cwd = 1;
	s.allow = io->allow;
	s.n_allow = io->n_allow;
	int oc = hs_session_open(&s, backend, spec, err, sizeof(err));
	if (oc != HS_OUTCOME_OK) {
		hs_die_msg("%s", err);
		hs_session_free(&s);
		return oc == HS_OUTCOME_INVALID ? HS_EXIT_USAGE : outcome_exit(oc);
	}
	if (s.egress_note[0])
		hs_warn("%s", s.egress_note);
	io->rs.json = io->cmd.bounded;
	for (int i = 1; io->rs.json && i <= 2; i++)
		hs_capture_init(&io->rs.cap[i], (size_t)s.lim.output_limit);
	if (cancel_pipe[0] < 0 && pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		hs_die_msg("cannot create a pipe: %s", strerror(errno));
		rc = HS_EXIT_FAIL;
	} else {
		rc = run_exec(&s, io);
	}
	for (int i = 1; io->rs.json && i <= 2; i++)
		hs_capture_free(&io->rs.cap[i]);
	hs_session_close(&s, name != NULL, NULL, 0);
	hs_session_free(&s);
	return rc;
}


int
hs_cmd_run(struct hs_core *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "session", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "cwd", required_argument, NULL, 'C' },
		{ "env", required_argument, NULL, 'e' },
		{ "approval", required_argument, NULL, 'A' },
		{ "json", no_argument, NULL, 'j' },
		{ "spill", no_argument, NULL, 'S' },
		{ "image", required_argument, NULL, 'I' },
		{ "mount", required_argument, NULL, 'v' },
		{ "network", required_argument, NULL, 'N' },
		{ "memory", required_argument, NULL, 'M' },
		{ "cpus", required_argument, NULL, 'P' },
		{ "isolate", no_argument, NULL, 'i' },
		{ "allow-host", required_argument, NULL, 'H' },
		{ "pty", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sets[64], *mounts[32], *allow[64], *session = NULL, *backend = NULL, *cwd = NULL;
	size_t n_sets = 0, n_mounts = 0, n_allow = 0;
	struct hs_env_spec spec = { .struct_size = sizeof(spec) };
	int json = 0, pty = 0, spill = 0, o, rc = HS_EXIT_FAIL;
	char err[1024];

	optind = 1;
	while ((o = getopt_long(argc, argv, "+b:s:t:C:e:v:h", opts, NULL)) != -1) {
		switch (o) {
		case 'b': backend = optarg; break;
		case 's': session = optarg; break;
		case 't':
			if (hs_conf_set_cli(c->conf, "timeout", optarg, err, sizeof(err)) < 0) {
				hs_die_msg("--timeout: %s", err);
				return HS_EXIT_USAGE;
			}
			break;
		case 'C': cwd = optarg; break;
		case 'e':
			if (n_sets == 64) {
				hs_die_msg("too many --env options (at most 64)");
				return HS_EXIT_USAGE;
			}
			sets[n_sets++] = optarg;
			break;
		case 'A':
			if (hs_conf_set_cli(c->conf, "approval", optarg, err, sizeof(err)) < 0) {
				hs_die_msg("--approval: %s", err);
				return HS_EXIT_USAGE;
			}
			break;
		case 'j': json = 1; break;
		case 'S': spill = 1; break;
		case 'I': spec.image = optarg; break;
		case 'v':
			if (n_mounts == 32) {
				hs_die_msg("too many --mount options (at most 32)");
				return HS_EXIT_USAGE;
			}
			mounts[n_mounts++] = optarg;
			break;
		case 'N': spec.network = optarg; break;
		case 'M':
			if ((spec.memory_bytes = hs_parse_size(optarg)) <= 0) {
				hs_die_msg("--memory: invalid size '%s' (e.g. 512m, 2g)", optarg);
				return HS_EXIT_USAGE;
			}
			break;
		case 'P': {
			char *end;
			double v = strtod(optarg, &end);
			if (*end || v <= 0 || v > 4096) {
				hs_die_msg("--cpus: invalid number '%s'", optarg);
				return HS_EXIT_USAGE;
			}
			spec.cpus_milli = (int32_t)(v * 1000);
			break;
		}
		case 'i': spec.flags |= HS_SPEC_ISOLATE; break;
		case 'H': {
			struct hs_egress_rule rule;
			if (n_allow == 64) {
				hs_die_msg("too many --allow-host options (at most 64)");
				return HS_EXIT_USAGE;
			}
			if (hs_egress_rule_parse(optarg, &rule, err, sizeof(err)) < 0) {
				hs_die_msg("--allow-host: %s", err);
				return HS_EXIT_USAGE;
			}
			allow[n_allow++] = optarg;
			break;
		}
		case 'T': pty = 1; break;
		case 'h': usage(stdout); return 0;
		default: return HS_EXIT_USAGE;
		}
	}
	if (spill && (!json || !session)) {
		hs_die_msg("--spill needs --json and -s SESSION: the files live in the session's sandbox");
		return HS_EXIT_USAGE;
	}
	if (optind >= argc) {
		hs_die_msg("run needs a COMMAND (see hs run --help)");
		return HS_EXIT_USAGE;
	}
	char *command = join_command(argc - optind, argv + optind);
	if (!command) {
		hs_die_msg("out of memory");
		return HS_EXIT_FAIL;
	}
	spec.mounts = mounts;
	spec.n_mounts = (uint32_t)n_mounts;
	/* The workspace an environment is built around (the local backend's isolated
	 * mode binds only it): -C DIR, absolute, else the configured workspace. */
	char cwd_abs[PATH_MAX];
	if (cwd && cwd[0] != '/' && realpath(cwd, cwd_abs))
		cwd = cwd_abs;
	spec.workdir = cwd;
	if (!spec.workdir)
		hs_conf_string(c->conf, "workspace", &spec.workdir);

	struct hs_run_io io = { .cmd = { .command = command, .sets = sets, .n_sets = n_sets,
	                                 .cwd = cwd, .timeout_s = -1, .bounded = json,
	                                 .keep_state = session != NULL },
	                         .rs = { .spill = spill, .named = session != NULL } };
	io.allow = n_allow ? allow : NULL;
	io.n_allow = n_allow;
	struct hs_run_pty tp;
	if (pty) {
		if (json) {
			hs_die_msg("--pty passes a terminal through; it cannot be combined with --json");
			free(command);
			return HS_EXIT_USAGE;
		}
		if (pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
		    hs_run_pty_begin(&tp, cancel_pipe[1], &io.cmd.pty_rows, &io.cmd.pty_cols) < 0) {
			free(command);
			return HS_EXIT_FAIL;
		}
		io.rs.pty = &tp;
	}
	rc = run_in_session(c, session, backend, &spec, &io);
	if (pty)
		hs_run_pty_end(&tp);
	free(command);
	return rc;
}
