/* SPDX-License-Identifier: MIT */
/*
 * mounts.c - classify mount specs for host access (DESIGN.md section 5).
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/safety/mounts.h"

const char *
hs_mount_kind_name(int kind)
{
	switch (kind) {
	case HS_MOUNT_HOST: return "host";
	case HS_MOUNT_VOLUME: return "volume";
	case HS_MOUNT_ANONYMOUS: return "anonymous";
	case HS_MOUNT_TMPFS: return "tmpfs";
	}
	return "invalid";
}

static int
invalid(struct hs_mount *m, const char *why, const char *spec)
{
	m->kind = HS_MOUNT_INVALID;
	m->host_access = 0;
	snprintf(m->reason, sizeof(m->reason), "%s in '%.200s'", why, spec);
	return 0;
}

static int
is_drive(const char *s)
{
	return isalpha((unsigned char)s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/');
}

static int
is_hostish(const char *s)
{
	return s[0] == '/' || s[0] == '~' || s[0] == '.' || s[0] == '$' || is_drive(s) ||
	       (s[0] == '\\' && s[1] == '\\');
}

static int
is_volume_name(const char *s)
{
	if (!isalnum((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
			return 0;
	return 1;
}

static int
under(const char *path, const char *dir)
{
	size_t l;

	if (!dir || !*dir)
		return 0;
	l = strlen(dir);
	while (l > 1 && dir[l - 1] == '/')
		l--;
	return !strncmp(path, dir, l) && (path[l] == '\0' || path[l] == '/' || (l == 1 && dir[0] == '/'));
}

/* Expand ~ and $HOME; keep other variables (their value is unknown, still the host). */
static void
expand_source(const char *src, const char *home, char *out, size_t outlen)
{
	if (home && src[0] == '~' && (src[1] == '/' || !src[1]))
		snprintf(out, outlen, "%s%s", home, src + 1);
	else if (home && !strncmp(src, "$HOME", 5) && (src[5] == '/' || !src[5]))
		snprintf(out, outlen, "%s%s", home, src + 5);
	else if (home && !strncmp(src, "${HOME}", 7) && (src[7] == '/' || !src[7]))
		snprintf(out, outlen, "%s%s", home, src + 7);
	else
		snprintf(out, outlen, "%s", src);
	/* Trailing slashes do not change what is bound. */
	for (size_t l = strlen(out); l > 1 && out[l - 1] == '/'; l--)
		out[l - 1] = '\0';
}

static void
host_reason(struct hs_mount *m, const char *home, const char *workspace)
{
	const char *s = m->source;

	m->kind = HS_MOUNT_HOST;
	m->host_access = 1;
	if (workspace && *workspace && under(s, workspace)) {
		m->workspace = 1;
		snprintf(m->reason, sizeof(m->reason), "host path '%.200s' is the configured workspace", s);
	} else if (!strcmp(s, "/")) {
		snprintf(m->reason, sizeof(m->reason), "the host root '/' is bound in");
	} else if (strstr(s, "docker.sock")) {
		snprintf(m->reason, sizeof(m->reason), "the docker socket '%.200s' gives control of the host", s);
	} else if (home && !strcmp(s, home)) {
		snprintf(m->reason, sizeof(m->reason), "the home directory '%.200s' is bound in", s);
	} else if (s[0] == '$' || strchr(s, '$')) {
		snprintf(m->reason, sizeof(m->reason), "host path '%.200s' depends on a variable", s);
	} else if (s[0] == '.') {
		snprintf(m->reason, sizeof(m->reason), "relative host path '%.200s' is bound in", s);
	} else {
		snprintf(m->reason, sizeof(m->reason), "host path '%.200s' is bound in", s);
	}
}

static int
valid_target(const char *t)
{
	return t[0] == '/' || is_drive(t);
}

static int
opts_ro(const char *opts)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", opts);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, "ro") || !strcmp(tok, "readonly"))
			return 1;
	return 0;
}

/* --mount type=...,src=...,dst=...: keys in any order. */
static int
assess_mount_kv(const char *spec, const char *home, const char *workspace, struct hs_mount *m)
{
	char buf[1000], *tok, *save = NULL, *eq, *val;
	char type[32] = "volume", src[1024] = "", dev[1024] = "";
	int vo_bind = 0, vo_none = 0;

	if (strlen(spec) >= sizeof(buf))
		return invalid(m, "spec too long", spec);
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		val = eq ? eq + 1 : (char *)"";
		if (eq)
			*eq = '\0';
		if (val[0] == '"' && strlen(val) >= 2 && val[strlen(val) - 1] == '"') {
			val[strlen(val) - 1] = '\0';
			val++;
		}
		if (!strcmp(tok, "type")) {
			snprintf(type, sizeof(type), "%s", val);
		} else if (!strcmp(tok, "src") || !strcmp(tok, "source")) {
			snprintf(src, sizeof(src), "%s", val);
		} else if (!strcmp(tok, "dst") || !strcmp(tok, "target") || !strcmp(tok, "destination")) {
			snprintf(m->target, sizeof(m->target), "%s", val);
		} else if (!strcmp(tok, "readonly") || !strcmp(tok, "ro")) {
			m->read_only = !eq || !strcmp(val, "true") || !strcmp(val, "1");
		} else if (!strcmp(tok, "volume-opt")) {
			/* volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/path binds a host path. */
			if (!strcmp(val, "type=none"))
				vo_none = 1;
			else if (!strncmp(val, "o=", 2) && strstr(val, "bind"))
				vo_bind = 1;
			else if (!strncmp(val, "device=", 7))
				snprintf(dev, sizeof(dev), "%s", val + 7);
		} else if (!strcmp(tok, "bind-propagation") || !strcmp(tok, "consistency") ||
			   !strcmp(tok, "volume-driver") || !strcmp(tok, "volume-nocopy") ||
			   !strcmp(tok, "volume-subpath") || !strncmp(tok, "tmpfs-", 6) ||
			   !strcmp(tok, "bind-recursive") || !strcmp(tok, "bind-nonrecursive") ||
			   !strcmp(tok, "volume-label")) {
			/* Accepted, irrelevant to host access. */
		} else {
			return invalid(m, "unknown mount key", spec);
		}
	}
	if (!m->target[0])
		return invalid(m, "missing target", spec);
	if (!valid_target(m->target))
		return invalid(m, "target is not an absolute path", spec);
	if (!strcmp(type, "tmpfs")) {
		if (src[0])
			return invalid(m, "tmpfs mount with a source", spec);
		m->kind = HS_MOUNT_TMPFS;
		return 0;
	}
	if (!strcmp(type, "bind")) {
		if (!src[0])
			return invalid(m, "bind mount without a source", spec);
		expand_source(src, home, m->source, sizeof(m->source));
		host_reason(m, home, workspace);
		return 0;
	}
	if (strcmp(type, "volume"))
		return invalid(m, "unknown mount type", spec);
	if ((vo_bind || vo_none) && dev[0]) {
		expand_source(dev, home, m->source, sizeof(m->source));
		host_reason(m, home, workspace);
		snprintf(m->reason + strlen(m->reason), sizeof(m->reason) - strlen(m->reason),
			 " (through a volume bind option)");
		return 0;
	}
	if (!src[0]) {
		m->kind = HS_MOUNT_ANONYMOUS;
		return 0;
	}
	if (!is_volume_name(src))
		return invalid(m, "bad volume name", spec);
	snprintf(m->source, sizeof(m->source), "%s", src);
	m->kind = HS_MOUNT_VOLUME;
	return 0;
}

static int
is_kv_form(const char *spec)
{
	static const char *const keys[] = { "type=", "src=", "source=", "dst=", "target=", "destination=",
		"readonly", "ro,", "volume-opt=", "bind-propagation=", NULL };
	int k;

	for (k = 0; keys[k]; k++)
		if (!strncmp(spec, keys[k], strlen(keys[k])))
			return 1;
	return 0;
}

int
hs_mount_assess(const char *spec, const char *home, const char *workspace, struct hs_mount *m)
{
	char buf[1000], *parts[4], *p;
	const char *rest;
	size_t np = 0, drive = 0;

	if (!spec || !m)
		return -1;
	memset(m, 0, sizeof(*m));
	if (!*spec)
		return invalid(m, "empty spec", spec);
	if (is_kv_form(spec))
		return assess_mount_kv(spec, home, workspace, m);
	if (strlen(spec) >= sizeof(buf))
		return invalid(m, "spec too long", spec);
	snprintf(buf, sizeof(buf), "%s", spec);
	/* A Windows drive (C:\x, c:/x) keeps its colon; a UNC path has none. */
	if (is_drive(buf))
		drive = 2;
	parts[np++] = buf;
	for (p = buf + drive; *p && np < 4; p++) {
		if (*p == ':') {
			*p = '\0';
			rest = p + 1;
			parts[np++] = (char *)rest;
			if (is_drive(rest))
				p += 2;
		}
	}
	if (np == 4)
		return invalid(m, "too many ':' fields", spec);
	if (np == 1) {
		if (!valid_target(parts[0]))
			return invalid(m, "target is not an absolute path", spec);
		snprintf(m->target, sizeof(m->target), "%s", parts[0]);
		m->kind = HS_MOUNT_ANONYMOUS;
		return 0;
	}
	if (!*parts[0] || !*parts[1])
		return invalid(m, "empty field", spec);
	if (!valid_target(parts[1]))
		return invalid(m, "target is not an absolute path", spec);
	snprintf(m->target, sizeof(m->target), "%s", parts[1]);
	if (np == 3)
		m->read_only = opts_ro(parts[2]);
	if (is_hostish(parts[0])) {
		expand_source(parts[0], home, m->source, sizeof(m->source));
		host_reason(m, home, workspace);
		return 0;
	}
	if (!is_volume_name(parts[0]))
		return invalid(m, "bad volume name", spec);
	snprintf(m->source, sizeof(m->source), "%s", parts[0]);
	m->kind = HS_MOUNT_VOLUME;
	return 0;
}

int
hs_mount_critical(const struct hs_mount *m)
{
	return m->kind == HS_MOUNT_HOST && !m->workspace &&
	       (!strcmp(m->source, "/") || strstr(m->source, "docker.sock") != NULL);
}
