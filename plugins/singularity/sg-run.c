/* SPDX-License-Identifier: MIT */
/*
 * sg-run.c - how the singularity backend runs apptainer: the environment
 * of every apptainer process (ours, minus what would change the instance
 * behind our back, plus scratch dirs and the pass-through variables), and
 * short runs of the executable with a deadline that keep the tail of its
 * output for one-line messages.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hs/hsb.h>

#include "sg.h"

extern char **environ;

void
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

int
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

/*
 * Run the executable with argv, wait up to timeout_ms, and keep the tail of
 * its standard output in out and of its standard error in eout (when eout
 * is NULL, standard error goes to out too).  Returns the exit status
 * (0..255, 128+N for a signal), or -1 with err set.
 */
int
sg_run2(struct sg_state *st, const char *const *argv, int passthrough, int timeout_ms, char *out,
        size_t outlen, char *eout, size_t eoutlen, char *err)
{
	struct sg_envv e;
	struct hsb_run r = {
		.path = st->exe, .argv = argv, .timeout_ms = timeout_ms, .keep_tail = 1,
		.out = out, .out_cap = outlen, .err = eout, .err_cap = eoutlen,
	};

	if (sg_env_build(st, passthrough, &e) < 0) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return -1;
	}
	r.envp = (const char *const *)e.v;
	int rc = hsb_run(&r, err);
	sg_envv_free(&e);
	if (rc < 0)
		return -1;
	if (r.timed_out) {
		snprintf(err, HS_ERR_MAX, "'%s %s %s' did not finish within %ds", st->exe, argv[1],
		         argv[2] ? argv[2] : "", timeout_ms / 1000);
		return -1;
	}
	return r.status;
}

int
sg_run(struct sg_state *st, const char *const *argv, int passthrough, int timeout_ms, char *out,
       size_t outlen, char *err)
{
	return sg_run2(st, argv, passthrough, timeout_ms, out, outlen, NULL, 0, err);
}

/* The last non-empty line of s, in place, for one-line messages. */
const char *
sg_last_line(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	char *nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}
