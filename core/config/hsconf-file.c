/* SPDX-License-Identifier: MIT */
/*
 * hsconf-file.c - read one configuration file with libconfig and feed its
 * settings into the merged store.  Every file is opened through
 * hs_pathsec_open, so a symlink or a file others can write is refused.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config/hsconf-int.h"
#include "core/pathsec.h"

/* Config files are small; a bigger one is a mistake, not a config. */
#define HS_CONF_MAX_FILE (1024 * 1024)

static int
read_all(int fd, const char *path, char **out, char *err, size_t errlen)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!buf) {
		snprintf(err, errlen, "cannot read '%s': out of memory", path);
		return -1;
	}
	for (;;) {
		if (len + 1 >= cap) {
			char *nb;
			if (cap >= HS_CONF_MAX_FILE) {
				snprintf(err, errlen, "cannot read '%s': larger than %d bytes", path,
				         HS_CONF_MAX_FILE);
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				snprintf(err, errlen, "cannot read '%s': out of memory", path);
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	if (strlen(buf) != len) {
		snprintf(err, errlen, "cannot read '%s': contains a NUL byte", path);
		goto fail;
	}
	*out = buf;
	return 0;
fail:
	free(buf);
	return -1;
}

/*
 * libconfig would open an @include'd file itself, past hs_pathsec_open's
 * checks (1.5 has no include hook), so the directive is refused: conf.d
 * is the way to split a configuration.
 */
static int
refuse_include(const char *text, const char *path, char *err, size_t errlen)
{
	int line = 1;

	for (const char *p = text; *p; line++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "@include", 8) == 0) {
			snprintf(err, errlen, "cannot read '%s': line %d: @include is not allowed "
			         "(use conf.d)", path, line);
			return -1;
		}
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return 0;
}

static int
is_string_list(const config_setting_t *s)
{
	int n = config_setting_length(s);

	for (int i = 0; i < n; i++)
		if (config_setting_type(config_setting_get_elem(s, (unsigned)i)) != CONFIG_TYPE_STRING)
			return 0;
	return 1;
}

/* Convert a scalar or a list of strings; 1 when the setting has another shape. */
static int
to_value(const config_setting_t *s, struct hs_conf_value *v)
{
	char num[64];

	memset(v, 0, sizeof(*v));
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_STRING:
		v->type = HS_CONF_STRING;
		v->s = strdup(config_setting_get_string(s));
		return v->s ? 0 : -1;
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		v->type = HS_CONF_INT;
		v->i = config_setting_get_int64(s);
		return 0;
	case CONFIG_TYPE_BOOL:
		v->type = HS_CONF_BOOL;
		v->i = config_setting_get_bool(s) != 0;
		return 0;
	case CONFIG_TYPE_FLOAT:
		/* The plugin ABI has no float type: keep it as text ("1.5 CPUs"). */
		snprintf(num, sizeof(num), "%g", config_setting_get_float(s));
		v->type = HS_CONF_STRING;
		v->s = strdup(num);
		return v->s ? 0 : -1;
	case CONFIG_TYPE_ARRAY:
	case CONFIG_TYPE_LIST: {
		int n = config_setting_length(s);
		char **list;

		if (!is_string_list(s))
			return 1;
		list = calloc((size_t)n + 1, sizeof(*list));
		if (!list)
			return -1;
		for (int i = 0; i < n; i++) {
			list[i] = strdup(config_setting_get_string_elem(s, i));
			if (!list[i]) {
				for (int j = 0; j < i; j++)
					free(list[j]);
				free(list);
				return -1;
			}
		}
		return hs_conf_value_list(v, list, (size_t)n);
	}
	default:
		return 1;
	}
}

static const char *
type_name(int type)
{
	switch (type) {
	case HS_CONF_STRING: return "a string";
	case HS_CONF_INT: return "an integer";
	case HS_CONF_BOOL: return "a boolean";
	case HS_CONF_STRINGS: return "a list of strings";
	default: return "a group";
	}
}

/* The "locked" list of an admin file, or a warning anywhere else. */
static int
read_locked(struct hs_conf *c, const config_setting_t *s, const struct hs_conf_src *src,
            char *err, size_t errlen)
{
	char where[512];
	int n;

	hs_conf_src_describe(src, where, sizeof(where));
	if (!src->admin) {
		hs_conf_warnf(c, "'locked' is honoured only in admin files; ignored in %s:%d",
		              src->file, src->line);
		return 0;
	}
	if ((config_setting_type(s) != CONFIG_TYPE_ARRAY &&
	     config_setting_type(s) != CONFIG_TYPE_LIST) || !is_string_list(s)) {
		snprintf(err, errlen, "%s: 'locked' must be a list of strings", where);
		return -1;
	}
	n = config_setting_length(s);
	for (int i = 0; i < n; i++) {
		const char *name = config_setting_get_string_elem(s, i);
		const struct hs_conf_schema *sc = hs_conf_schema_find(name);

		if (sc && sc->order == HS_ORDER_NOT_LOCKABLE) {
			hs_conf_warnf(c, "'%s' cannot be locked; ignored in %s:%d", name,
			              src->file, src->line);
			continue;
		}
		if (!sc && (!strchr(name, '.') || hs_conf_schema_known_section(name))) {
			hs_conf_warnf(c, "unknown key '%s' in 'locked' in %s:%d", name,
			              src->file, src->line);
			continue;
		}
		if (hs_conf_add_lock(c, name, src, err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* Walk a group; prefix is "" at the top level or "docker." inside a section. */
static int
walk(struct hs_conf *c, const config_setting_t *group, const char *prefix, int known_section,
     struct hs_conf_src *src, char *err, size_t errlen)
{
	int n = config_setting_length(group);

	for (int i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
		const char *name = config_setting_name(s);
		const struct hs_conf_schema *sc;
		struct hs_conf_value v;
		char key[512], where[512];
		int r;

		if (!name)
			continue;
		if ((size_t)snprintf(key, sizeof(key), "%s%s", prefix, name) >= sizeof(key)) {
			snprintf(err, errlen, "'%s': line %d: key '%s' is too long", src->file,
			         config_setting_source_line(s), name);
			return -1;
		}
		src->line = config_setting_source_line(s);
		hs_conf_src_describe(src, where, sizeof(where));
		sc = hs_conf_schema_find(key);

		if (!*prefix && strcmp(name, "locked") == 0) {
			if (read_locked(c, s, src, err, errlen) < 0)
				return -1;
			continue;
		}
		if (config_setting_type(s) == CONFIG_TYPE_GROUP) {
			if (sc) {
				snprintf(err, errlen, "%s: '%s' must be %s, not a group", where, key,
				         type_name(sc->type));
				return -1;
			}
			if (*prefix && known_section) {
				hs_conf_warnf(c, "unknown key '%s' in %s:%d", key, src->file, src->line);
				continue;
			}
			/* Opaque sections may nest: docker = { labels = { a = "b"; }; } is "docker.labels.a". */
			char sub[sizeof(key) + 1];
			snprintf(sub, sizeof(sub), "%s.", key);
			if (walk(c, s, sub, *prefix ? 0 : hs_conf_schema_known_section(key),
			         src, err, errlen) < 0)
				return -1;
			continue;
		}
		if (!sc && (!*prefix || known_section)) {
			if (!*prefix && hs_conf_schema_known_section(key)) {
				snprintf(err, errlen, "%s: '%s' must be a group", where, key);
				return -1;
			}
			hs_conf_warnf(c, "unknown key '%s' in %s:%d", key, src->file, src->line);
			continue;
		}
		r = to_value(s, &v);
		if (r < 0) {
			snprintf(err, errlen, "cannot read '%s': out of memory", src->file);
			return -1;
		}
		if (r > 0) {
			if (sc) {
				snprintf(err, errlen, "%s: '%s' must be %s", where, key, type_name(sc->type));
				return -1;
			}
			hs_conf_warnf(c, "unsupported value for '%s' in %s:%d (use a scalar or a list "
			              "of strings); ignored", key, src->file, src->line);
			continue;
		}
		if (hs_conf_apply(c, key, &v, src, err, errlen) < 0)
			return -1;
	}
	return 0;
}

int
hs_conf_read_file(struct hs_conf *c, const char *path, int admin, int required,
                  char *err, size_t errlen)
{
	struct hs_conf_src src = { .file = path, .admin = admin };
	char *text = NULL, reason[1024];
	struct stat st;
	config_t cfg;
	int fd, rc = -1;

	/* Absent layers are normal; a dangling or foreign file is not. */
	if (lstat(path, &st) < 0 && errno == ENOENT && !required)
		return 0;
	fd = hs_pathsec_open(path, O_RDONLY, reason, sizeof(reason));
	if (fd < 0) {
		snprintf(err, errlen, "refusing config file '%s': %s", path, reason);
		return -1;
	}
	if (read_all(fd, path, &text, err, errlen) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	if (refuse_include(text, path, err, errlen) < 0) {
		free(text);
		return -1;
	}
	config_init(&cfg);
	if (config_read_string(&cfg, text) != CONFIG_TRUE) {
		snprintf(err, errlen, "cannot read '%s': line %d: %s", path,
		         config_error_line(&cfg), config_error_text(&cfg));
		goto out;
	}
	rc = walk(c, config_root_setting(&cfg), "", 0, &src, err, errlen);
out:
	config_destroy(&cfg);
	free(text);
	return rc;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
conf_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && strcmp(name + n - 5, ".conf") == 0;
}

int
hs_conf_read_dir(struct hs_conf *c, const char *dir, char *err, size_t errlen)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	int rc = -1;
	DIR *dp = opendir(dir);

	if (!dp) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot read '%s': %s", dir, strerror(errno));
		return -1;
	}
	while ((d = readdir(dp))) {
		if (!conf_name(d->d_name))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap ? cap * 2 : 8) * sizeof(*names));
			if (!nn)
				goto nomem;
			names = nn;
			cap = cap ? cap * 2 : 8;
		}
		if (!(names[n] = strdup(d->d_name)))
			goto nomem;
		n++;
	}
	/* strcmp order, not the locale's: 10-x.conf before 20-y.conf everywhere. */
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (hs_conf_read_file(c, path, 1, 1, err, errlen) < 0)
			goto out;
	}
	rc = 0;
	goto out;
nomem:
	snprintf(err, errlen, "cannot read '%s': out of memory", dir);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(dp);
	return rc;
}
