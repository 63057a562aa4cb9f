/*
 * singularity.c - the singularity backend: each session runs in a named
 * Apptainer (or Singularity) instance, started contained (--containall
 * --no-home --cleanenv --no-privs), with hs-runner bound in read-only and
 * started once per instance; every stream is one
 * "apptainer exec instance://NAME hs-runner --attach".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include <hs/backend.h>

#include "plugins/common/attach.h"
#include "sifcache.h"

extern char **environ;

#define SG_MAX_ATTACH 16
#define SG_MAX_ARGS 96
#define SG_MAX_ENV 512
/* Where the runner and its runtime directory appear inside the instance. */
#define SG_IN_RUNNER "/.hs/hs-runner"
#define SG_IN_RUNDIR "/.hs/run"
#define SG_NFS_MAGIC 0x6969

struct sg_state {
	const struct hs_host_v1 *host;
	char exe[1024];     /* resolved apptainer/singularity, "" when none */
	char flavour[16];   /* "apptainer" or "singularity": the env prefix */
	char scratch[1024];
	char cache_dir[1024];
	uint64_t cache_max;
	int64_t build_timeout;
	int64_t lock_wait;
};

struct sg_env {
	struct sg_state *st;
	char name[128];      /* the instance name */
	char rundir[1024];   /* host side of SG_IN_RUNDIR */
	char shellfile[1024];
	char logfile[1024];  /* apptainer's messages for the runner streams */
	int64_t idle;
	int started; /* this open started the instance */
	int opened;  /* open succeeded */
	pid_t attach[SG_MAX_ATTACH];
};

static const struct hs_config_key sg_keys[] = {
	{ "executable", HS_CONF_STRING, "apptainer or singularity to use (default: apptainer, then singularity, on PATH)" },
	{ "image", HS_CONF_STRING, "the default image when none is given (a SIF path, a sandbox directory, or docker://...)" },
	{ "scratch", HS_CONF_STRING, "scratch directory (default: /scratch/$USER/hs when /scratch is writable, else the state dir)" },
	{ "cache_dir", HS_CONF_STRING, "where remote images are built into SIF files (default: <scratch>/sif-cache)" },
	{ "cache_max", HS_CONF_STRING, "size cap of the SIF cache, e.g. \"20G\" (default 20G; 0: no cap)" },
	{ "build_timeout", HS_CONF_INT, "seconds one image build may take (default 3600)" },
	{ "lock_wait", HS_CONF_INT, "seconds to wait for another process building the same image (default 3600)" },
	{ "env_passthrough", HS_CONF_STRINGS, "names of host variables handed to the instance (as APPTAINERENV_*)" },
	{ NULL, 0, NULL },
};

/* ---- Helpers. ---- */

static int
sg_find_in_path(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		if (n > 0 && path[0] == '/') {
			int k = snprintf(out, len, "%.*s/%s", (int)n, path, prog);
			if (k > 0 && (size_t)k < len && access(out, X_OK) == 0)
				return 0;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	out[0] = '\0';
	return -1;
}

static int
sg_mkdir_private(const char *dir, char *err)
{
	struct stat sb;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, HS_ERR_MAX, "cannot create '%s': %s", dir, strerror(errno));
		return HS_E_IO;
	}
	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 07777) != 0700) {
		snprintf(err, HS_ERR_MAX, "'%s' is not a private directory of this user (want mode 0700)",
		         dir);
		return HS_E_PERM;
	}
	return HS_OK;
}

/*
 * Scratch: create missing directories (0700) down to dir, then require dir
 * to be this user's and writable by nobody else.
 */
static int
sg_scratch_dir(const char *dir, char *err)
{
	char p[1024];
	struct stat sb;
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			snprintf(err, HS_ERR_MAX, "cannot create scratch directory '%s': %s", p,
			         strerror(errno));
			return HS_E_IO;
		}
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST) {
		snprintf(err, HS_ERR_MAX, "cannot create scratch directory '%s': %s", p, strerror(errno));
		return HS_E_IO;
	}
	if (lstat(p, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 022)) {
		snprintf(err, HS_ERR_MAX, "scratch '%s' must be a directory of this user that others "
		         "cannot write; fix it or set singularity.scratch", p);
		return HS_E_PERM;
	}
	return HS_OK;
}

/* Parse "20G", "512M", "1048576"; returns -1 on nonsense. */
static int
sg_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	uint64_t mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*out = v * mul;
	return 0;
}

/*
 * The environment for every apptainer process: ours, without variables
 * that would change what the instance sees behind our back (binds, home,
 * any *ENV_ value), plus the cache/tmp dirs on scratch and the pass-through
 * variables as <PREFIX>ENV_NAME.  Values never go on a command line.
 */
struct sg_envv {
	char *v[SG_MAX_ENV + 1];
	int n;
};

static void
sg_envv_free(struct sg_envv *e)
{
	for (int i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
	e->v[0] = NULL;
}

/* Concatenate up to three strings into a new string; NULL when out of memory. */
static char *
sg_cat(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	char *s = malloc(la + lb + lc + 1);
	if (!s)
		return NULL;
	memcpy(s, a, la);
	memcpy(s + la, b, lb);
	memcpy(s + la + lb, c, lc + 1);
	return s;
}

static int
sg_envv_add(struct sg_envv *e, const char *a, const char *b, const char *c)
{
	if (e->n >= SG_MAX_ENV)
		return -1;
	char *s = sg_cat(a, b, c);
	if (!s)
		return -1;
	e->v[e->n++] = s;
	e->v[e->n] = NULL;
	return 0;
}

static int
sg_env_hidden(const char *kv)
{
	static const char *const prefixes[] = { "APPTAINERENV_", "SINGULARITYENV_", "APPTAINER_BIND",
	                                        "SINGULARITY_BIND", "APPTAINER_HOME", "SINGULARITY_HOME",
	                                        "APPTAINER_WORKDIR", "SINGULARITY_WORKDIR",
	                                        "APPTAINER_SCRATCH", "SINGULARITY_SCRATCH",
	                                        "APPTAINER_CACHEDIR", "APPTAINER_TMPDIR",
	                                        "SINGULARITY_CACHEDIR", "SINGULARITY_TMPDIR", "HS_" };
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

static int
sg_env_build(struct sg_state *st, int passthrough, struct sg_envv *e)
{
	const struct hs_host_v1 *h = st->host;
	const char *pre = strcmp(st->flavour, "singularity") == 0 ? "SINGULARITY" : "APPTAINER";
	char dir[1200];

	e->n = 0;
	e->v[0] = NULL;
	for (char **p = environ; p && *p; p++)
		if (!sg_env_hidden(*p) && sg_envv_add(e, *p, "", "") < 0)
			goto fail;
	snprintf(dir, sizeof(dir), "%s/apptainer-cache", st->scratch);
	if (sg_envv_add(e, pre, "_CACHEDIR=", dir) < 0)
		goto fail;
	snprintf(dir, sizeof(dir), "%s/tmp", st->scratch);
	if (sg_envv_add(e, pre, "_TMPDIR=", dir) < 0)
		goto fail;
	if (passthrough) {
		const char *const *names = NULL;
		uint32_t n = 0;
		if (h->config_strings(h->ctx, "env_passthrough", &names, &n) == HS_OK) {
			for (uint32_t i = 0; i < n; i++) {
				const char *v = getenv(names[i]);
				if (!v || strncmp(names[i], "HS_", 3) == 0 || strchr(names[i], '='))
					continue;
				char key[300];
				snprintf(key, sizeof(key), "%sENV_%s", pre, names[i]);
				if (sg_envv_add(e, key, "=", v) < 0)
					goto fail;
			}
		}
	}
	return 0;
fail:
	sg_envv_free(e);
	return -1;
}

/* Keep the tail of a stream in buf (messages end there). */
static void
sg_keep_tail(char *buf, size_t cap, size_t *used, const char *data, size_t n)
{
	if (cap < 2)
		return;
	if (n >= cap - 1) {
		memcpy(buf, data + n - (cap - 1), cap - 1);
		*used = cap - 1;
	} else {
		if (*used + n > cap - 1) {
			size_t drop = *used + n - (cap - 1);
			memmove(buf, buf + drop, *used - drop);
			*used -= drop;
		}
		memcpy(buf + *used, data, n);
		*used += n;
	}
	buf[*used] = '\0';
}

/*
 * Run the executable with argv, wait up to timeout_ms, and keep the tail of
 * its standard output in out and of its standard error in eout (when eout
 * is NULL, standard error goes to out too).  Returns the exit status
 * (0..255, 128+N for a signal), or -1 with err set.
 */
static int
sg_run2(struct sg_state *st, const char *const *argv, int passthrough, int timeout_ms, char *out,
        size_t outlen, char *eout, size_t eoutlen, char *err)
{
	struct sg_envv e;
	posix_spawn_file_actions_t fa;
	int po[2], pe[2] = { -1, -1 }, status = 0;
	size_t used[2] = { 0, 0 };
	pid_t pid;

	if (outlen)
		out[0] = '\0';
	if (eout && eoutlen)
		eout[0] = '\0';
	if (sg_env_build(st, passthrough, &e) < 0) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return -1;
	}
	if (pipe2(po, O_CLOEXEC) < 0 || (eout && pipe2(pe, O_CLOEXEC) < 0)) {
		snprintf(err, HS_ERR_MAX, "cannot create a pipe: %s", strerror(errno));
		sg_envv_free(&e);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, eout ? pe[1] : po[1], 2);
	int rc = posix_spawn(&pid, st->exe, &fa, NULL, (char *const *)argv, e.v);
	posix_spawn_file_actions_destroy(&fa);
	sg_envv_free(&e);
	close(po[1]);
	if (eout)
		close(pe[1]);
	if (rc != 0) {
		close(po[0]);
		if (eout)
			close(pe[0]);
		snprintf(err, HS_ERR_MAX, "cannot start '%s': %s", st->exe, strerror(rc));
		return -1;
	}
	struct pollfd p[2] = { { po[0], POLLIN, 0 }, { eout ? pe[0] : -1, POLLIN, 0 } };
	uint64_t start = st->host->now_ms(st->host->ctx);
	int timed_out = 0;
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		int64_t left = timeout_ms - (int64_t)(st->host->now_ms(st->host->ctx) - start);
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		int r = poll(p, 2, (int)(left > 1000 ? 1000 : left));
		if (r < 0 && errno != EINTR)
			break;
		for (int i = 0; r > 0 && i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			char buf[4096];
			ssize_t n = read(p[i].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				continue;
			}
			if (i == 0)
				sg_keep_tail(out, outlen, &used[0], buf, (size_t)n);
			else
				sg_keep_tail(eout, eoutlen, &used[1], buf, (size_t)n);
		}
	}
	for (int i = 0; i < 2; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	if (timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out) {
		snprintf(err, HS_ERR_MAX, "'%s %s %s' did not finish within %ds", st->exe, argv[1],
		         argv[2] ? argv[2] : "", timeout_ms / 1000);
		return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int
sg_run(struct sg_state *st, const char *const *argv, int passthrough, int timeout_ms, char *out,
       size_t outlen, char *err)
{
	return sg_run2(st, argv, passthrough, timeout_ms, out, outlen, NULL, 0, err);
}

/* The last non-empty line of s, in place, for one-line messages. */
static const char *
sg_last_line(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	char *nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}

/* ---- init / probe. ---- */

/* Find the executable (config, else apptainer, else singularity on PATH); "" when none. */
static void
sg_resolve(const struct hs_host_v1 *h, char *exe, size_t len, char *flavour, size_t flen)
{
	const char *v = NULL;

	exe[0] = '\0';
	if (h->config_string(h->ctx, "executable", &v) == HS_OK && v && *v) {
		if (strchr(v, '/'))
			snprintf(exe, len, "%s", access(v, X_OK) == 0 ? v : "");
		else
			sg_find_in_path(v, exe, len);
	} else if (sg_find_in_path("apptainer", exe, len) < 0) {
		sg_find_in_path("singularity", exe, len);
	}
	const char *base = strrchr(exe, '/');
	snprintf(flavour, flen, "%s",
	         base && strstr(base, "singularity") ? "singularity" : "apptainer");
}

static void
sg_scratch(struct sg_state *st)
{
	const struct hs_host_v1 *h = st->host;
	const char *v = NULL;
	struct passwd *pw = getpwuid(geteuid());
	struct stat sb;

	if (h->config_string(h->ctx, "scratch", &v) == HS_OK && v && v[0] == '/') {
		snprintf(st->scratch, sizeof(st->scratch), "%s", v);
	} else if (pw && stat("/scratch", &sb) == 0 && S_ISDIR(sb.st_mode) &&
	           access("/scratch", W_OK) == 0) {
		snprintf(st->scratch, sizeof(st->scratch), "/scratch/%s/hs", pw->pw_name);
	} else {
		snprintf(st->scratch, sizeof(st->scratch), "%s", h->state_dir);
	}
	if (h->config_string(h->ctx, "cache_dir", &v) == HS_OK && v && v[0] == '/')
		snprintf(st->cache_dir, sizeof(st->cache_dir), "%s", v);
	else
		snprintf(st->cache_dir, sizeof(st->cache_dir), "%s/sif-cache", st->scratch);
}

static int32_t
sg_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct sg_state *st = calloc(1, sizeof(*st));
	const char *v = NULL;
	int64_t i;

	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	st->host = host;
	st->cache_max = 20ull << 30;
	st->build_timeout = 3600;
	st->lock_wait = 3600;
	if (host->config_string(host->ctx, "cache_max", &v) == HS_OK && v &&
	    sg_parse_size(v, &st->cache_max) < 0) {
		snprintf(err, HS_ERR_MAX, "singularity.cache_max '%s' is not a size (e.g. \"20G\")", v);
		free(st);
		return HS_E_CONFIG;
	}
	if (host->config_int(host->ctx, "cache_max", &i) == HS_OK && i >= 0)
		st->cache_max = (uint64_t)i;
	if (host->config_int(host->ctx, "build_timeout", &i) == HS_OK && i > 0)
		st->build_timeout = i;
	if (host->config_int(host->ctx, "lock_wait", &i) == HS_OK && i >= 0)
		st->lock_wait = i;
	/* Resolved once: open and the streams of other threads read it. */
	sg_resolve(host, st->exe, sizeof(st->exe), st->flavour, sizeof(st->flavour));
	sg_scratch(st);
	*state = st;
	return HS_OK;
}

static void
sg_fini(void *state)
{
	free(state);
}

static int32_t
sg_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct sg_state *st = state;
	const char *runner = st->host->runner_path;
	char out[512];

	(void)flags;
	r->runner = runner && access(runner, X_OK) == 0;
	if (!st->exe[0]) {
		const char *v = NULL;
		if (st->host->config_string(st->host->ctx, "executable", &v) == HS_OK && v && *v)
			snprintf(r->reason, sizeof(r->reason),
			         "singularity.executable '%s' is not an executable; fix the setting or "
			         "install Apptainer (https://apptainer.org/docs/admin/main/installation.html)",
			         v);
		else
			snprintf(r->reason, sizeof(r->reason),
			         "neither 'apptainer' nor 'singularity' is on PATH; install Apptainer "
			         "(https://apptainer.org/docs/admin/main/installation.html; Debian 12 has no "
			         "package) or set singularity.executable");
		snprintf(r->detail, sizeof(r->detail), "executable=\nscratch=%s\ncache_dir=%s",
		         st->scratch, st->cache_dir);
		return HS_OK;
	}
	const char *argv[] = { st->exe, "version", NULL };
	int rc = sg_run(st, argv, 0, 10000, out, sizeof(out), err);
	if (rc != 0) {
		snprintf(r->reason, sizeof(r->reason), "'%s version' failed: %s", st->exe,
		         rc < 0 ? err : sg_last_line(out));
		err[0] = '\0';
		return HS_OK;
	}
	if (!r->runner) {
		snprintf(r->reason, sizeof(r->reason),
		         "hs-runner not found or not executable (set runner_path or HS_RUNNER)");
	} else {
		r->ready = 1;
	}
	snprintf(r->detail, sizeof(r->detail),
	         "executable=%s\nversion=%s\nscratch=%s\ncache_dir=%s\ncache_max=%llu", st->exe,
	         sg_last_line(out), st->scratch, st->cache_dir, (unsigned long long)st->cache_max);
	return HS_OK;
}

/* ---- Images. ---- */

struct sg_build_ctx {
	const char *exe;
	char *const *envp;
	const char *log;
};

/* Runs in the forked child of the cache: only async-signal-safe calls. */
static int
sg_build_child(void *ctx, const char *source, const char *tmp)
{
	struct sg_build_ctx *b = ctx;
	char *const argv[] = { (char *)b->exe, (char *)"build", (char *)tmp, (char *)source, NULL };
	int fd = open(b->log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || nul < 0)
		return 126;
	dup2(nul, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	execve(b->exe, argv, b->envp);
	return 127;
}

static int
sg_is_remote(const char *img)
{
	const char *s = strstr(img, "://");
	return s && s != img && strncmp(img, "instance://", 11) != 0;
}

/* Turn the image the user named into something instance start can use. */
static int32_t
sg_image(struct sg_state *st, const char *image, char *out, size_t len, char *note, size_t nlen,
         char *err)
{
	struct stat sb;

	if (!sg_is_remote(image)) {
		if (stat(image, &sb) < 0) {
			snprintf(err, HS_ERR_MAX, "image '%s' not found: %s", image, strerror(errno));
			return HS_E_NOTFOUND;
		}
		if (S_ISREG(sb.st_mode) && !hs_sif_check(image)) {
			snprintf(err, HS_ERR_MAX,
			         "image '%s' is not a SIF file; build one with 'apptainer build' or pass a "
			         "sandbox directory", image);
			return HS_E_INVALID;
		}
		snprintf(out, len, "%s", image);
		return HS_OK;
	}
	struct sg_envv e;
	char log[1200];
	int built = 0;
	if (sg_env_build(st, 0, &e) < 0) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	/* Apptainer's own layer cache and temporary files go to scratch too. */
	const char *const sub[] = { "apptainer-cache", "tmp" };
	for (size_t i = 0; i < 2; i++) {
		char d[1200];
		snprintf(d, sizeof(d), "%s/%s", st->scratch, sub[i]);
		mkdir(d, 0700);
	}
	snprintf(log, sizeof(log), "%s/build.log", st->cache_dir);
	struct sg_build_ctx b = { st->exe, e.v, log };
	struct hs_sifcache c = { .max_bytes = st->cache_max, .stale_s = 600,
	                         .wait_s = st->lock_wait, .build_s = st->build_timeout,
	                         .build = sg_build_child, .ctx = &b };
	snprintf(c.dir, sizeof(c.dir), "%s", st->cache_dir);
	int32_t rc = hs_sifcache_get(&c, image, out, len, &built, err);
	sg_envv_free(&e);
	if (rc == HS_E_IO && strncmp(err, "building", 8) == 0) {
		size_t n = strlen(err);
		snprintf(err + n, HS_ERR_MAX - n, "; see '%s'", log);
	}
	if (rc == HS_OK && built)
		snprintf(note, nlen, "built '%s' into the SIF cache", image);
	return rc;
}

/* ---- Instances. ---- */

/* 1 when the instance is running, 0 when not, -1 with err set. */
static int
sg_running(struct sg_state *st, const char *name, char *err)
{
	char out[16384], eout[1024];
	const char *argv[] = { st->exe, "instance", "list", "--json", name, NULL };
	/* Standard error apart: a warning there must not spoil the JSON. */
	int rc = sg_run2(st, argv, 0, 30000, out, sizeof(out), eout, sizeof(eout), err);
	if (rc != 0) {
		if (rc > 0)
			snprintf(err, HS_ERR_MAX, "'%s instance list' failed: %s", st->exe,
			         sg_last_line(eout[0] ? eout : out));
		return -1;
	}
	char ebuf[256];
	yajl_val root = yajl_tree_parse(out, ebuf, sizeof(ebuf));
	const char *path[] = { "instances", NULL };
	yajl_val list = root ? yajl_tree_get(root, path, yajl_t_array) : NULL;
	if (!list) {
		yajl_tree_free(root);
		snprintf(err, HS_ERR_MAX, "'%s instance list --json' printed no instance list", st->exe);
		return -1;
	}
	int found = 0;
	for (size_t i = 0; i < list->u.array.len && !found; i++) {
		const char *ip[] = { "instance", NULL };
		yajl_val v = yajl_tree_get(list->u.array.values[i], ip, yajl_t_string);
		const char *s = v ? YAJL_GET_STRING(v) : NULL;
		found = s && strcmp(s, name) == 0;
	}
	yajl_tree_free(root);
	return found;
}

static int
sg_detect_shell(struct sg_env *env, char *shell, size_t len, char *err)
{
	struct sg_state *st = env->st;
	char inst[160], out[256];
	snprintf(inst, sizeof(inst), "instance://%s", env->name);
	const char *argv[] = { st->exe, "exec", "--cleanenv", "--no-privs", inst, "/bin/sh", "-c",
	                       "test -x /bin/bash", NULL };
	int rc = sg_run(st, argv, 0, 60000, out, sizeof(out), err);
	if (rc < 0)
		return -1;
	if (rc != 0 && rc != 1) {
		snprintf(err, HS_ERR_MAX, "cannot run /bin/sh in instance '%s': %s", env->name,
		         sg_last_line(out));
		return -1;
	}
	snprintf(shell, len, "%s", rc == 0 ? "/bin/bash" : "/bin/sh");
	int fd = open(env->shellfile, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		ssize_t w = write(fd, shell, strlen(shell));
		(void)w;
		close(fd);
	}
	return 0;
}

static int
sg_read_shell(struct sg_env *env, char *shell, size_t len)
{
	char buf[64];
	int fd = open(env->shellfile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (strcmp(buf, "/bin/bash") != 0 && strcmp(buf, "/bin/sh") != 0)
		return -1;
	snprintf(shell, len, "%s", buf);
	return 0;
}

struct sg_argv {
	const char *v[SG_MAX_ARGS + 1];
	char *owned[SG_MAX_ARGS];
	int n, n_owned;
};

static int
sg_arg(struct sg_argv *a, const char *s)
{
	if (a->n >= SG_MAX_ARGS)
		return -1;
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

/* Append "--bind SRC:DST[:ro]". */
static int
sg_bind(struct sg_argv *a, const char *src, const char *dst, int ro)
{
	size_t len = strlen(src) + strlen(dst) + 5;
	char *s = a->n_owned < SG_MAX_ARGS ? malloc(len) : NULL;
	if (!s)
		return -1;
	snprintf(s, len, "%s:%s%s", src, dst, ro ? ":ro" : "");
	a->owned[a->n_owned++] = s;
	return sg_arg(a, "--bind") < 0 ? -1 : sg_arg(a, s);
}

static void
sg_argv_free(struct sg_argv *a)
{
	for (int i = 0; i < a->n_owned; i++)
		free(a->owned[i]);
}

/* A bind path apptainer can parse: absolute, no ':' or ',' (its separators). */
static int
sg_bindable(const char *p)
{
	return p[0] == '/' && !strchr(p, ':') && !strchr(p, ',') && !strchr(p, '\n');
}

/* Add the user's mounts as binds, each assessed by the core. */
static int32_t
sg_mounts(struct sg_state *st, const struct hs_env_spec *spec, struct sg_argv *a,
          struct hs_env_props *props, char *err)
{
	const struct hs_host_v1 *h = st->host;
	for (uint32_t i = 0; i < spec->n_mounts; i++) {
		struct hs_mount m;
		char e[HS_ERR_MAX] = "";
		memset(&m, 0, sizeof(m));
		int32_t rc = h->assess_mount(h->ctx, spec->mounts[i], &m, e);
		if (rc != HS_OK || m.kind == HS_MOUNT_INVALID) {
			snprintf(err, HS_ERR_MAX, "mount '%s': %s", spec->mounts[i],
			         e[0] ? e : m.reason[0] ? m.reason : "invalid");
			return HS_E_INVALID;
		}
		if (m.kind != HS_MOUNT_HOST) {
			snprintf(err, HS_ERR_MAX,
			         "mount '%s': apptainer binds host paths only (no volumes or tmpfs; "
			         "--containall already gives a private /tmp)", spec->mounts[i]);
			return HS_E_INVALID;
		}
		if (!sg_bindable(m.source) || !sg_bindable(m.target) ||
		    strncmp(m.target, "/.hs", 4) == 0) {
			snprintf(err, HS_ERR_MAX,
			         "mount '%s': paths must be absolute without ':' or ',' and not under /.hs",
			         spec->mounts[i]);
			return HS_E_INVALID;
		}
		if (sg_bind(a, m.source, m.target, m.read_only) < 0) {
			snprintf(err, HS_ERR_MAX, "too many mounts");
			return HS_E_INVALID;
		}
		if (m.host_access && !m.workspace && !props->host_access) {
			props->host_access = 1;
			snprintf(props->host_reason, sizeof(props->host_reason), "host path '%s' is bound at '%s'%s",
			         m.source, m.target, m.reason[0] ? "" : "");
		}
	}
	if (spec->workdir && *spec->workdir) {
		if (!sg_bindable(spec->workdir)) {
			snprintf(err, HS_ERR_MAX, "workspace '%s' cannot be bound (needs an absolute path "
			         "without ':' or ',')", spec->workdir);
			return HS_E_INVALID;
		}
		if (sg_bind(a, spec->workdir, "/workspace", 0) < 0) {
			snprintf(err, HS_ERR_MAX, "too many mounts");
			return HS_E_INVALID;
		}
	}
	return HS_OK;
}

static int32_t
sg_start(struct sg_env *env, const struct hs_env_spec *spec, const char *image,
         struct hs_env_props *props, char *err)
{
	struct sg_state *st = env->st;
	struct sg_argv a = { .n = 0 };
	char out[2048], num[32], cpus[32];
	int32_t rc = HS_E_INVALID;

	if (sg_arg(&a, st->exe) || sg_arg(&a, "instance") || sg_arg(&a, "start") ||
	    /* Containment: own PID/IPC namespaces, minimal /dev, private /tmp and home,
	     * no host home, no host environment, no capabilities or setuid. */
	    sg_arg(&a, "--containall") || sg_arg(&a, "--no-home") || sg_arg(&a, "--cleanenv") ||
	    sg_arg(&a, "--no-privs"))
		goto toomany;
	if (!spec->network || !*spec->network || strcmp(spec->network, "none") == 0) {
		if (sg_arg(&a, "--net") || sg_arg(&a, "--network") || sg_arg(&a, "none"))
			goto toomany;
	} else if (strcmp(spec->network, "host") != 0) {
		snprintf(err, HS_ERR_MAX, "network '%s' is not supported: use \"none\" (the default) or "
		         "\"host\"", spec->network);
		goto out;
	}
	if (sg_bind(&a, st->host->runner_path, SG_IN_RUNNER, 1) || sg_bind(&a, env->rundir, SG_IN_RUNDIR, 0))
		goto toomany;
	if (spec->memory_bytes > 0) {
		snprintf(num, sizeof(num), "%lldB", (long long)spec->memory_bytes);
		if (sg_arg(&a, "--memory") || sg_arg(&a, num))
			goto toomany;
	}
	if (spec->cpus_milli > 0) {
		snprintf(cpus, sizeof(cpus), "%d.%03d", spec->cpus_milli / 1000, spec->cpus_milli % 1000);
		if (sg_arg(&a, "--cpus") || sg_arg(&a, cpus))
			goto toomany;
	}
	rc = sg_mounts(st, spec, &a, props, err);
	if (rc != HS_OK)
		goto out;
	if (sg_arg(&a, image) || sg_arg(&a, env->name))
		goto toomany;
	int r = sg_run(st, a.v, 1, 300000, out, sizeof(out), err);
	if (r != 0) {
		if (r > 0)
			snprintf(err, HS_ERR_MAX, "'%s instance start' of '%s' failed (exit %d): %s", st->exe,
			         env->name, r, sg_last_line(out));
		rc = HS_E_UNAVAILABLE;
		goto out;
	}
	rc = HS_OK;
	goto out;
toomany:
	snprintf(err, HS_ERR_MAX, "too many arguments for instance start");
	rc = HS_E_INVALID;
out:
	sg_argv_free(&a);
	return rc;
}

static int
sg_name_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
		      (s[n] >= '0' && s[n] <= '9') || s[n] == '-' || s[n] == '_' || s[n] == '.'))
			return 0;
	return n > 0 && n < 100 && s[0] != '.';
}

static int32_t
sg_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct sg_state *st = state;
	const struct hs_host_v1 *h = st->host;
	struct sg_env *env;
	struct statfs sf;
	const char *image = spec->image;
	char sif[1400], shell[64] = "";
	int32_t rc;

	if (!st->exe[0]) {
		snprintf(err, HS_ERR_MAX, "neither 'apptainer' nor 'singularity' is on PATH; install "
		         "Apptainer or set singularity.executable (see hs backends)");
		return HS_E_UNAVAILABLE;
	}
	if (!h->runner_path) {
		snprintf(err, HS_ERR_MAX, "hs-runner not found (set runner_path or HS_RUNNER)");
		return HS_E_UNAVAILABLE;
	}
	if (!image || !*image)
		h->config_string(h->ctx, "image", &image);
	if (!image || !*image) {
		snprintf(err, HS_ERR_MAX, "no image: pass --image (a SIF file, a sandbox directory or "
		         "docker://...) or set singularity.image");
		return HS_E_INVALID;
	}
	if (!spec->env_name || !sg_name_ok(spec->env_name)) {
		snprintf(err, HS_ERR_MAX, "environment name '%s' is not a valid instance name",
		         spec->env_name ? spec->env_name : "");
		return HS_E_INVALID;
	}
	env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	*envp = env;
	env->st = st;
	env->idle = spec->runner_idle_s > 0 ? spec->runner_idle_s : 600;
	snprintf(env->name, sizeof(env->name), "%s", spec->env_name);
	snprintf(env->rundir, sizeof(env->rundir), "%s/%s", h->runtime_dir, env->name);
	snprintf(env->shellfile, sizeof(env->shellfile), "%s/%s.shell", h->state_dir, env->name);
	snprintf(env->logfile, sizeof(env->logfile), "%s/%s.log", h->state_dir, env->name);
	rc = sg_mkdir_private(env->rundir, err);
	if (rc != HS_OK)
		return rc;
	if (statfs(env->rundir, &sf) == 0 && sf.f_type == SG_NFS_MAGIC) {
		snprintf(err, HS_ERR_MAX, "runtime directory '%s' is on NFS; set XDG_RUNTIME_DIR to a "
		         "node-local directory", env->rundir);
		return HS_E_CONFIG;
	}
	rc = sg_scratch_dir(st->scratch, err);
	if (rc != HS_OK)
		return rc;
	int running = sg_running(st, env->name, err);
	if (running < 0)
		return HS_E_UNAVAILABLE;
	if (running) {
		/* Re-attach: the instance keeps the mounts it was started with; a
		 * validation pass still reports its host access truthfully. */
		struct sg_argv a = { .n = 0 };
		rc = sg_mounts(st, spec, &a, props, err);
		sg_argv_free(&a);
		if (rc != HS_OK)
			return rc;
		snprintf(props->note, sizeof(props->note), "re-attached to running instance '%s'",
		         env->name);
	} else {
		rc = sg_image(st, image, sif, sizeof(sif), props->note, sizeof(props->note), err);
		if (rc != HS_OK)
			return rc;
		unlink(env->shellfile);
		rc = sg_start(env, spec, sif, props, err);
		/* Another session's eviction or a cleaner may have removed the image
		 * between the check and the start: fetch it again, once. */
		if (rc != HS_OK && sg_is_remote(image) && !hs_sif_check(sif)) {
			rc = sg_image(st, image, sif, sizeof(sif), props->note, sizeof(props->note), err);
			if (rc == HS_OK)
				rc = sg_start(env, spec, sif, props, err);
		}
		if (rc != HS_OK)
			return rc;
		env->started = 1;
	}
	if (sg_read_shell(env, shell, sizeof(shell)) < 0 &&
	    sg_detect_shell(env, shell, sizeof(shell), err) < 0)
		return HS_E_UNAVAILABLE;
	snprintf(props->isolation, sizeof(props->isolation), "container");
	props->runner = 1;
	snprintf(props->shell, sizeof(props->shell), "%s", shell);
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", SG_IN_RUNDIR);
	env->opened = 1;
	return HS_OK;
}

/* ---- Streams and teardown. ---- */

static int32_t
sg_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct sg_env *env = envp;
	struct sg_state *st = env->st;
	struct sg_envv e;
	char idle[32], inst[160];
	int slot = hs_attach_slot(env->attach, SG_MAX_ATTACH);
	pid_t pid;

	if (slot < 0) {
		snprintf(err, HS_ERR_MAX, "too many runner streams for instance '%s'", env->name);
		return HS_E_BUSY;
	}
	if (sg_env_build(st, 1, &e) < 0) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(idle, sizeof(idle), "%lld", (long long)env->idle);
	snprintf(inst, sizeof(inst), "instance://%s", env->name);
	/*
	 * The daemon is started by whichever stream finds none, so every exec
	 * carries the pass-through variables (exec builds its own environment;
	 * it does not inherit the instance's).
	 */
	const char *argv[] = { st->exe, "exec", "--cleanenv", "--no-privs", inst, SG_IN_RUNNER,
	                       "--attach", "--start", "--dir", SG_IN_RUNDIR, "--idle", idle, NULL };
	/* Apptainer's own messages must not mix into the command's stderr. */
	struct hs_attach_spawn sp = { .argv = argv, .envp = (const char *const *)e.v,
	                              .stderr_path = env->logfile };
	int rc = hs_attach_start(&sp, &pid, fd, err);
	sg_envv_free(&e);
	if (rc != 0)
		return HS_E_IO;
	env->attach[slot] = pid;
	return HS_OK;
}

static int
sg_rm(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

static int32_t
sg_close(void *envp, uint32_t flags, char *err)
{
	struct sg_env *env = envp;
	int32_t rc = HS_OK;
	if (!env)
		return HS_OK;
	/* The core closed its streams first, so each attach process sees EOF and exits. */
	hs_attach_reap(env->attach, SG_MAX_ATTACH, 5000);
	/*
	 * After a failed open, only an instance this open started is torn down:
	 * a running session whose re-attach failed is left alone.
	 */
	if (!(flags & HS_CLOSE_KEEP) && env->name[0] && (env->opened || env->started)) {
		struct sg_state *st = env->st;
		char out[1024];
		int running = sg_running(st, env->name, err);
		if (running > 0) {
			const char *argv[] = { st->exe, "instance", "stop", env->name, NULL };
			int r = sg_run(st, argv, 0, 60000, out, sizeof(out), err);
			if (r != 0) {
				if (r > 0)
					snprintf(err, HS_ERR_MAX, "'%s instance stop %s' failed: %s", st->exe,
					         env->name, sg_last_line(out));
				rc = HS_E_IO;
			}
		}
		if (rc == HS_OK) {
			err[0] = '\0';
			/* FTW_PHYS: a symlink inside is removed, never followed. */
			if (env->rundir[0] && nftw(env->rundir, sg_rm, 8, FTW_DEPTH | FTW_PHYS) < 0 &&
			    errno != ENOENT)
				st->host->log(st->host->ctx, HS_LOG_WARN, "cannot remove '%s': %s", env->rundir,
				              strerror(errno));
			unlink(env->shellfile);
			unlink(env->logfile);
		}
	}
	free(env);
	return rc;
}

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "singularity",
	.version = PACKAGE_VERSION,
	.summary = "run each session in a contained Apptainer/Singularity instance (HPC)",
	.caps = HS_CAP_RUNNER | HS_CAP_MOUNTS | HS_CAP_IMAGE | HS_CAP_NETWORK | HS_CAP_LIMITS |
	        HS_CAP_PERSIST | HS_CAP_FILES | HS_CAP_ISOLATED,
	.config_keys = sg_keys,
	.init = sg_init,
	.fini = sg_fini,
	.probe = sg_probe,
	.open = sg_open,
	.runner_stream = sg_runner_stream,
	.close = sg_close,
};
