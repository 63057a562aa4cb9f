/* SPDX-License-Identifier: MIT */
/*
 * env.c - the command environment, scrubbed of credentials.
 */
#include "config.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/shell.h"

/* Names that carry credentials.  Matched on the whole name. */
static const char *const secret_patterns[] = {
	"*_API_KEY", "*_APIKEY", "*_TOKEN", "*_TOKEN_*", "*_SECRET", "*_SECRET_*", "*_PASSWORD",
	"*_PASSWD", "*_CREDENTIALS", "*_PRIVATE_KEY", "*_ACCESS_KEY", "*_ACCESS_KEY_ID",
	"MODAL_TOKEN_*", "AWS_*", "DAYTONA_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "OPENAI_*",
	"ANTHROPIC_*", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_*", "SSH_AUTH_SOCK",
	"DOCKER_AUTH_CONFIG", "NPM_TOKEN", "PYPI_TOKEN", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
};

int
hs_env_is_secret_name(const char *name, size_t len)
{
	char buf[256];
	if (len >= sizeof(buf))
		return 1; /* absurdly long names are not passed on */
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (strncmp(buf, "HS_", 3) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(secret_patterns) / sizeof(secret_patterns[0]); i++)
		if (fnmatch(secret_patterns[i], buf, 0) == 0)
			return 1;
	return 0;
}

int
hs_env_valid_name(const char *s, size_t len)
{
	if (len == 0 || isdigit((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

static int
listed(const char *name, size_t len, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(list[i]) == len && memcmp(list[i], name, len) == 0)
			return 1;
	return 0;
}

static int
push(char ***v, size_t *n, size_t *cap, char *s)
{
	if (!s)
		return -1;
	if (*n + 2 > *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		char **nv = realloc(*v, nc * sizeof(char *));
		if (!nv) {
			free(s);
			return -1;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return 0;
}

/* Replaces the variable of kv's name in out, or appends kv (copied). */
static int
put_var(struct hs_envlist *out, size_t *cap, const char *kv)
{
	size_t len = (size_t)(strchr(kv, '=') - kv) + 1;
	size_t k;
	for (k = 0; k < out->n; k++)
		if (strncmp(out->v[k], kv, len) == 0)
			break;
	char *copy = strdup(kv);
	if (!copy)
		return -1;
	if (k < out->n) {
		free(out->v[k]);
		out->v[k] = copy;
		return 0;
	}
	return push(&out->v, &out->n, cap, copy);
}

/* 1 when out holds a variable named like kv's name. */
static int
has_var(const struct hs_envlist *out, const char *kv, size_t len)
{
	for (size_t k = 0; k < out->n; k++)
		if (strncmp(out->v[k], kv, len) == 0 && out->v[k][len] == '=')
			return 1;
	return 0;
}

/*
 * What an editor is in a session: a command that says why it cannot be one
 * and fails, so `git commit` without -m ends at once with that message
 * instead of waiting for a person, or committing an empty message.  Plain
 * sh, so it exists in every image (busybox too).
 */
#define HS_NO_EDITOR "sh -c 'echo \"hs: no interactive editor in this session; pass the text on " \
	"the command line (git commit -m ...)\" >&2; exit 1' hs-editor"

size_t
hs_env_noninteractive(const char *ci, const char **out, char **ci_buf)
{
	static const char *const fixed[] = {
		"GIT_EDITOR=" HS_NO_EDITOR, "EDITOR=" HS_NO_EDITOR, "VISUAL=" HS_NO_EDITOR,
		/* git asks neither on the terminal nor through a helper; Git
		 * Credential Manager does not open its own prompt. */
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "GCM_INTERACTIVE=never",
		/* ssh never runs an askpass program (a GUI one would wait for a
		 * person); without a terminal it cannot ask any other way. */
		"SSH_ASKPASS_REQUIRE=never",
		"PAGER=cat", "GIT_PAGER=cat", "MANPAGER=cat", "SYSTEMD_PAGER=",
		"DEBIAN_FRONTEND=noninteractive", "PIP_NO_INPUT=1", "NPM_CONFIG_YES=true",
	};
	size_t n = 0;
	for (; n < sizeof(fixed) / sizeof(fixed[0]); n++)
		out[n] = fixed[n];
	*ci_buf = NULL;
	if (ci && (*ci_buf = malloc(strlen(ci) + 4))) {
		memcpy(*ci_buf, "CI=", 3);
		strcpy(*ci_buf + 3, ci);
		out[n++] = *ci_buf;
	}
	return n;
}

int
hs_env_build(struct hs_envlist *out, char *const *base, const char *const *passthrough,
             size_t n_pass, const char *const *defaults, size_t n_defaults,
             const char *const *sets, size_t n_sets, int only_listed, const char **bad)
{
	size_t cap = 0, scap = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; base && base[i]; i++) {
		const char *eq = strchr(base[i], '=');
		if (!eq)
			continue;
		size_t len = (size_t)(eq - base[i]);
		int hs = len >= 3 && strncmp(base[i], "HS_", 3) == 0;
		if (hs_env_is_secret_name(base[i], len) &&
		    (hs || !listed(base[i], len, passthrough, n_pass))) {
			/* Remember the value so it can be redacted if it shows up anyway. */
			if (!hs && strlen(eq + 1) >= 6 &&
			    push(&out->secrets, &out->n_secrets, &scap, strdup(eq + 1)) < 0)
				goto nomem;
			continue;
		}
		/* A sandbox keeps its own environment: only what is passed through goes in. */
		if (only_listed && !listed(base[i], len, passthrough, n_pass))
			continue;
		if (push(&out->v, &out->n, &cap, strdup(base[i])) < 0)
			goto nomem;
	}
	size_t from_base = out->n;
	for (size_t i = 0; i < n_defaults; i++) {
		size_t len = (size_t)(strchr(defaults[i], '=') - defaults[i]);
		/* A name the user passes through keeps the user's value. */
		if (listed(defaults[i], len, passthrough, n_pass) && has_var(out, defaults[i], len))
			continue;
		if (put_var(out, &cap, defaults[i]) < 0)
			goto nomem;
	}
	for (size_t i = 0; i < n_sets; i++) {
		const char *eq = strchr(sets[i], '=');
		/* HS_* stay out even when asked for: a command must not reconfigure hs. */
		if (!eq || !hs_env_valid_name(sets[i], (size_t)(eq - sets[i])) || strncmp(sets[i], "HS_", 3) == 0) {
			if (bad)
				*bad = sets[i];
			hs_env_free(out);
			return -1;
		}
		if (put_var(out, &cap, sets[i]) < 0)
			goto nomem;
	}
	/* An empty host environment still finds programs. */
	if (!from_base && !only_listed && !has_var(out, "PATH", 4) &&
	    push(&out->v, &out->n, &cap, strdup("PATH=/usr/local/bin:/usr/bin:/bin")) < 0)
		goto nomem;
	return 0;
nomem:
	if (bad)
		*bad = NULL;
	hs_env_free(out);
	return -1;
}

char *
hs_env_gate_command(const char *const *sets, size_t n_sets, const char *command)
{
	size_t len = strlen(command) + 4;

	for (size_t i = 0; i < n_sets; i++)
		len += strlen(sets[i]) + hs_shell_quote(NULL, sets[i]) + 1;
	char *out = malloc(len), *w = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n_sets; i++) {
		const char *eq = strchr(sets[i], '=');
		if (!eq)
			continue;
		/* NAME='VALUE': the analyser reads the value back exactly. */
		memcpy(w, sets[i], (size_t)(eq - sets[i]) + 1);
		w += eq - sets[i] + 1;
		w += hs_shell_quote(w, eq + 1);
		*w++ = ' ';
	}
	/* The assignments stand alone (":"), then the command as given. */
	if (n_sets) {
		memcpy(w, ":; ", 3);
		w += 3;
	}
	strcpy(w, command);
	return out;
}

int
hs_env_hide_secrets(char **envp)
{
	int rc = 0;

	for (size_t i = 0; envp && envp[i]; i++) {
		char *kv = envp[i], *eq = strchr(kv, '=');
		if (!eq || !eq[1] || !hs_env_is_secret_name(kv, (size_t)(eq - kv)))
			continue;
		char *name = strndup(kv, (size_t)(eq - kv));
		/* setenv() points envp[i] at a heap copy, so getenv() keeps working. */
		if (!name || setenv(name, eq + 1, 1) < 0 || envp[i] == kv) {
			free(name);
			rc = -1;
			continue;
		}
		free(name);
		/* /proc/PID/environ reads the original block: wipe the value there. */
		memset(eq + 1, 0, strlen(eq + 1));
	}
	return rc;
}

void
hs_env_free(struct hs_envlist *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	for (size_t i = 0; i < e->n_secrets; i++)
		free(e->secrets[i]);
	free(e->v);
	free(e->secrets);
	memset(e, 0, sizeof(*e));
}
