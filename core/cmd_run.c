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

#include "core/approval.h"
#include "core/guard.h"
#include "core/capture.h"
#include "core/cmds.h"
#include "core/core.h"
#include "core/env.h"
#include "core/exec.h"
#include "core/serve-req.h"
#include "core/hsconf.h"
#include "core/json.h"
#include "core/safety/redact.h"
#include "core/session.h"

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
	struct hs_capture cap[3];
	int write_failed;
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

static long
run_input(void *ctx, void *buf, size_t len)
{
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
	        "      --image IMAGE      container image (backends with images)\n"
	        "  -v, --mount SPEC       mount, docker syntax (repeatable; host paths need approval)\n"
	        "      --network NAME     network (default none, where the backend supports it)\n"
	        "      --memory SIZE      memory limit, e.g. 512m, 2g\n"
	        "      --cpus N           CPU limit, e.g. 1.5\n"
	        "      --isolate          local backend: isolate with namespaces\n"
	        "  -h, --help             show this help\n"
	        "\n"
	        "exit status: the command's (128+N after signal N); 124 timed out; 77 denied by\n"
	        "approval; 130 cancelled with Ctrl-C; 125 hs or backend failure.\n");
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
		{ "image", required_argument, NULL, 'I' },
		{ "mount", required_argument, NULL, 'v' },
		{ "network", required_argument, NULL, 'N' },
		{ "memory", required_argument, NULL, 'M' },
		{ "cpus", required_argument, NULL, 'P' },
		{ "isolate", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sets[64], *mounts[32], *session = NULL, *backend = NULL, *cwd = NULL;
	size_t n_sets = 0, n_mounts = 0;
	struct hs_env_spec spec = { .struct_size = sizeof(spec) };
	int json = 0, o, rc = HS_EXIT_FAIL;
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
		case 'h': usage(stdout); return 0;
		default: return HS_EXIT_USAGE;
		}
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

	const char *mode_s = "ask";
	hs_conf_string(c->conf, "approval", &mode_s);
	int mode = hs_approval_mode_parse(mode_s);
	int64_t timeout = 0, max_timeout = 0, limit = 1 << 20, grace = 2000;
	hs_conf_int(c->conf, "timeout", &timeout);
	hs_conf_int(c->conf, "max_timeout", &max_timeout);
	hs_conf_int(c->conf, "output_limit", &limit);
	hs_conf_int(c->conf, "kill_grace_ms", &grace);
	if (max_timeout > 0 && (timeout == 0 || timeout > max_timeout))
		timeout = max_timeout;

	/* Host access through mounts is approved before any environment exists. */
	const char *conf_backend = "local";
	hs_conf_string(c->conf, "backend", &conf_backend);
	struct hs_grants grants = { 0 };
	struct hs_gate mgate = {
		.session = session,
		.backend = backend ? backend : conf_backend,
		.mode = mode,
		.grants = &grants,
		.asker = mode == HS_APPROVAL_ASK ? hs_approval_tty() : NULL,
	};
	struct hs_approval_out mverdict;
	if (!hs_approval_mounts(c, &mgate, mounts, n_mounts, &mverdict)) {
		hs_die_msg("%s", mverdict.why);
		hs_grants_free(&grants);
		free(command);
		return strcmp(mverdict.decision, "invalid") == 0 ? HS_EXIT_USAGE
		       : strcmp(mverdict.decision, "error") == 0 ? HS_EXIT_FAIL : HS_EXIT_DENIED;
	}

	struct hs_conn cn;
	struct hs_record rec;
	struct hs_session_req req = { .name = session, .backend = backend, .spec = &spec,
	                              .persistent = session != NULL };
	int lockfd = hs_session_begin(c, &req, &cn, &rec, err, sizeof(err));
	if (lockfd == -1) {
		hs_die_msg("%s", err);
		hs_grants_free(&grants);
		free(command);
		/* A backend refuses a risk only it could see (a host-binding volume, say). */
		return cn.open_status == HS_E_DENIED ? HS_EXIT_DENIED : HS_EXIT_FAIL;
	}

	struct hs_envlist env;
	const char *const *pass = NULL;
	size_t n_pass = 0;
	const char *bad = NULL;
	char *gate_cmd = NULL;
	hs_conf_strings(c->conf, "env_passthrough", &pass, &n_pass);
	if (hs_env_build(&env, environ, pass, n_pass, sets, n_sets, cn.merge_env, &bad) < 0) {
		if (bad)
			hs_die_msg("--env: '%s' is not NAME=VALUE (and HS_* names are reserved)", bad);
		else
			hs_die_msg("out of memory");
		goto out;
	}

	/* The safety verdict: a sandbox with host access counts as the host. */
	struct hs_policy *pol = hs_core_policy(c, err, sizeof(err));
	if (!pol) {
		hs_die_msg("%s", err);
		hs_env_free(&env);
		goto out;
	}
	struct hs_redactor *red = NULL;
	if (env.n_secrets)
		hs_redactor_new(&red, (const char *const *)env.secrets, env.n_secrets);
	/* -e variables are judged with the command: BASH_ENV=x runs code too. */
	gate_cmd = hs_env_gate_command(sets, n_sets, command);
	if (!gate_cmd) {
		hs_die_msg("out of memory");
		hs_redactor_free(red);
		hs_env_free(&env);
		goto out;
	}
	struct hs_gate gate = {
		.session = session,
		.backend = cn.be->plugin.name,
		.command = gate_cmd,
		.host = cn.props.host_access,
		.mode = mode,
		.grants = &grants,
		.asker = mgate.asker,
		.redact = red,
	};
	struct hs_analysis an;
	struct hs_approval_out verdict;
	int allowed = hs_approval_gate(c, pol, &gate, &an, &verdict);
	if (!allowed) {
		hs_die_msg("%s", verdict.why);
		hs_redactor_free(red);
		hs_env_free(&env);
		rc = strcmp(verdict.decision, "error") == 0 ? HS_EXIT_FAIL : HS_EXIT_DENIED;
		goto out;
	}

	struct run_sink rs = { .json = json };
	if (json) {
		for (int s = 1; s <= 2; s++)
			hs_capture_init(&rs.cap[s], (size_t)limit);
	}
	if (pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		hs_die_msg("cannot create a pipe: %s", strerror(errno));
		hs_redactor_free(red);
		hs_env_free(&env);
		goto out;
	}
	struct sigaction sa = { .sa_handler = on_sigint };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	char here[4096];
	int local = strcmp(cn.be->plugin.name, "local") == 0;
	const char *start_dir = NULL;
	/* An isolated sandbox sees only its workspace: commands start there, or
	 * where the session's shell state puts them. */
	if (local && strcmp(cn.props.isolation, "namespaces") == 0) {
		if (spec.workdir && realpath(spec.workdir, here))
			start_dir = here;
	} else if (local && getcwd(here, sizeof(here)))
		start_dir = here;
	struct hs_sink_ops sink = {
		.ctx = &rs,
		.output = run_output,
		.input = run_input,
		.input_fd = isatty(0) ? -1 : 0,
		.cancelled = run_cancelled,
		.cancel_fd = cancel_pipe[0],
	};
	struct hs_exec_opts eo = {
		.command = command,
		.cwd = cwd,
		.start_dir = start_dir,
		.envp = env.v,
		.deadline_ms = timeout * 1000,
		.grace_ms = grace,
		.head_bytes = json ? (uint64_t)limit / 2 : 0,
		.tail_bytes = json ? (uint64_t)limit / 2 : 0,
		.stdin_pipe = sink.input_fd >= 0,
		.keep_state = session != NULL,
		.secrets = env.secrets,
		.n_secrets = env.n_secrets,
	};
	struct hs_exec_out res;
	unsigned restored = 0;
	int exec_rc = hs_guard_begin(c, session, gate.backend, cn.snapshot, err, sizeof(err));
	if (exec_rc == 0) {
		exec_rc = hs_conn_exec(&cn, &eo, &sink, &res, err, sizeof(err));
		/* hs wrote the session's snapshot itself unless the command was stopped. */
		int saved = exec_rc == 0 && eo.keep_state && !res.timed_out && !res.cancelled;
		char gerr[1024];
		if (hs_guard_end(c, session, gate.backend, cn.snapshot, saved, &restored, gerr,
		                 sizeof(gerr)) < 0 && exec_rc == 0) {
			snprintf(err, sizeof(err), "%s", gerr);
			exec_rc = -1;
		}
		if (restored)
			hs_warn("the command changed %u of hs's own files; they were put back", restored);
	}
	hs_approval_audit(c, &gate, &an, &verdict, 1,
	                       exec_rc < 0 ? HS_EXIT_FAIL : res.timed_out ? HS_EXIT_TIMEOUT : res.exit_code,
	                       res.duration_ms);
	hs_redactor_free(red);
	hs_env_free(&env);
	if (exec_rc < 0) {
		hs_die_msg("%s", err);
		for (int s = 1; json && s <= 2; s++)
			hs_capture_free(&rs.cap[s]);
		goto out;
	}
	if (json) {
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		hs_capture_json_result(g, &res, rs.cap);
		hs_json_kint(g, "hs_files_restored", restored);
		yajl_gen_map_close(g);
		hs_json_emit(g, 1);
		for (int s = 1; s <= 2; s++)
			hs_capture_free(&rs.cap[s]);
	}
	if (res.timed_out) {
		hs_die_msg("command timed out after %lld s", (long long)timeout);
		rc = HS_EXIT_TIMEOUT;
	} else if (res.cancelled) {
		rc = rs.write_failed ? 141 : 130;
	} else {
		rc = res.exit_code;
	}
out:
	hs_session_end(&cn, lockfd, session == NULL);
	hs_grants_free(&grants);
	free(gate_cmd);
	free(command);
	return rc;
}
