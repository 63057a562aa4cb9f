/* SPDX-License-Identifier: MIT */
/*
 * session.c - session records, names and locks.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "core/core.h"
#include "core/guard.h"
#include "core/json.h"
#include "core/pathsec.h"
#include "core/session.h"

int
hs_session_name_valid(const char *name)
{
	size_t n = 0;
	if (!name || name[0] == '.' || name[0] == '-' || name[0] == '\0')
		return 0;
	for (; name[n]; n++)
		if (!(isalnum((unsigned char)name[n]) || name[n] == '.' || name[n] == '_' ||
		      name[n] == '-'))
			return 0;
	return n <= 64;
}

void
hs_session_env_name(const char *name, char *out, size_t len)
{
	snprintf(out, len, "hs-%u-%s", (unsigned)geteuid(), name);
}

int
hs_session_dir(struct hs_core *c, char *out, size_t len, char *err, size_t errlen)
{
	int n = snprintf(out, len, "%s/sessions", c->paths.state);
	if (n < 0 || (size_t)n >= len) {
		snprintf(err, errlen, "state directory path too long");
		return -1;
	}
	return hs_pathsec_dir_open(out, "set XDG_STATE_HOME", err, errlen);
}

/*
 * The sessions directory's descriptor for a record of a valid name (its
 * path in dir, for messages); every record file is then reached relative
 * to it.  Returns the descriptor or -1 with a reason.
 */
static int
record_dir(struct hs_core *c, const char *name, char *dir, size_t len, char *err, size_t errlen)
{
	if (!hs_session_name_valid(name)) {
		snprintf(err, errlen, "invalid session name '%.80s' (use 1-64 of A-Z a-z 0-9 . _ -, "
		         "not starting with '.' or '-')", name);
		return -1;
	}
	return hs_session_dir(c, dir, len, err, errlen);
}

int
hs_record_load(struct hs_core *c, const char *name, struct hs_record *r, char *err, size_t errlen)
{
	char path[PATH_MAX], buf[16384], perr[256];
	ssize_t n;
	int fd, dfd;

	memset(r, 0, sizeof(*r));
	if ((dfd = record_dir(c, name, path, sizeof(path), err, errlen)) < 0)
		return -1;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
	fd = hs_pathsec_openat(dfd, name, path, O_RDONLY, err, errlen);
	int missing = fd < 0 && errno == ENOENT;
	close(dfd);
	if (fd < 0)
		return missing ? 1 : -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	yajl_val root = yajl_tree_parse(buf, perr, sizeof(perr));
	if (!root || !YAJL_IS_OBJECT(root)) {
		snprintf(err, errlen, "session record '%s' is corrupt; remove it with 'hs session close %s'",
		         path, name);
		yajl_tree_free(root);
		return -1;
	}
	static const char *kb[] = { "backend", NULL }, *ke[] = { "env", NULL },
	                  *ki[] = { "image", NULL }, *kc[] = { "created", NULL },
	                  *ku[] = { "used", NULL }, *kp[] = { "persistent", NULL },
	                  *ka[] = { "allow", NULL };
	yajl_val v;
	snprintf(r->name, sizeof(r->name), "%s", name);
	if ((v = yajl_tree_get(root, kb, yajl_t_string)))
		snprintf(r->backend, sizeof(r->backend), "%s", YAJL_GET_STRING(v));
	if ((v = yajl_tree_get(root, ke, yajl_t_string)))
		snprintf(r->env_name, sizeof(r->env_name), "%s", YAJL_GET_STRING(v));
	if ((v = yajl_tree_get(root, ki, yajl_t_string)))
		snprintf(r->image, sizeof(r->image), "%s", YAJL_GET_STRING(v));
	if ((v = yajl_tree_get(root, kc, yajl_t_number)) && YAJL_IS_INTEGER(v))
		r->created = YAJL_GET_INTEGER(v);
	if ((v = yajl_tree_get(root, ku, yajl_t_number)) && YAJL_IS_INTEGER(v))
		r->used = YAJL_GET_INTEGER(v);
	v = yajl_tree_get(root, kp, yajl_t_any);
	r->persistent = v && YAJL_IS_TRUE(v);
	if ((v = yajl_tree_get(root, ka, yajl_t_string)))
		snprintf(r->allow, sizeof(r->allow), "%s", YAJL_GET_STRING(v));
	yajl_tree_free(root);
	if (!r->backend[0] || !r->env_name[0]) {
		snprintf(err, errlen, "session record '%s' is incomplete", path);
		return -1;
	}
	return 0;
}

int
hs_record_save(struct hs_core *c, const struct hs_record *r, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const unsigned char *buf;
	size_t len;
	int rc, dfd;

	if ((dfd = record_dir(c, r->name, dir, sizeof(dir), err, errlen)) < 0)
		return -1;
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	hs_json_kstr(g, "backend", r->backend);
	hs_json_kstr(g, "env", r->env_name);
	if (r->image[0])
		hs_json_kstr(g, "image", r->image);
	hs_json_kint(g, "created", r->created);
	hs_json_kint(g, "used", r->used);
	hs_json_kbool(g, "persistent", r->persistent);
	if (r->allow[0])
		hs_json_kstr(g, "allow", r->allow);
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &buf, &len);
	rc = hs_pathsec_write_at(dfd, dir, r->name, buf, len, 0600, err, errlen);
	yajl_gen_free(g);
	{
		char path[PATH_MAX + 256];
		snprintf(path, sizeof(path), "%s/%s", dir, r->name);
		hs_guard_rebase(c, path);
	}
	close(dfd);
	return rc;
}

int
hs_record_remove(struct hs_core *c, const char *name)
{
	char dir[PATH_MAX], lock[80], err[256];
	int dfd = record_dir(c, name, dir, sizeof(dir), err, sizeof(err));
	if (dfd < 0)
		return -1;
	char path[PATH_MAX + 256];
	int rc = unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	hs_guard_rebase(c, path);
	snprintf(lock, sizeof(lock), "%s.lock", name);
	unlinkat(dfd, lock, 0);
	snprintf(path, sizeof(path), "%s/%s", dir, lock);
	hs_guard_rebase(c, path);
	close(dfd);
	return rc;
}

int
hs_session_lock(struct hs_core *c, const char *name, int wait_ms, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, dfd;

	if ((dfd = record_dir(c, name, path, sizeof(path), err, errlen)) < 0)
		return -1;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s.lock", name);
	fd = openat(dfd, strrchr(path, '/') + 1, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open lock '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "lock '%s' is not a regular file of this user", path);
		close(fd);
		return -1;
	}
	for (int waited = 0;; waited += 20) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			snprintf(err, errlen, "cannot lock '%s': %s", path, strerror(errno));
			break;
		}
		if (waited >= wait_ms) {
			snprintf(err, errlen, "session '%s' is busy in another hs process", name);
			break;
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	close(fd);
	return -1;
}

#include "core/exec.h"
#include "core/config/hsconf.h"
#include "core/egress/policy.h"
#include "core/egress/relay.h"

int
hs_session_begin(struct hs_core *c, const struct hs_session_req *req, struct hs_conn *cn,
                 struct hs_record *rec, char *err, size_t errlen)
{
	char ename[128], rname[65];
	const char *backend = req->backend;
	int lockfd = -2, have = 0, mapped = 0;
	struct hs_egress_map map = { 0 };

	memset(rec, 0, sizeof(*rec));
	memset(cn, 0, sizeof(*cn));
	if (req->name) {
		lockfd = hs_session_lock(c, req->name, 30000, err, errlen);
		if (lockfd < 0)
			return -1;
		int r = hs_record_load(c, req->name, rec, err, errlen);
		if (r < 0)
			goto fail;
		have = r == 0;
		if (have && backend && strcmp(backend, rec->backend) != 0) {
			snprintf(err, errlen, "session '%s' uses backend '%s', not '%s' (close it first)",
			         req->name, rec->backend, backend);
			goto fail;
		}
		if (have)
			backend = rec->backend;
		snprintf(rname, sizeof(rname), "%s", req->name);
	} else {
		unsigned rnd = 0;
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (read(fd, &rnd, sizeof(rnd)) != sizeof(rnd))
				rnd = (unsigned)time(NULL);
			close(fd);
		}
		snprintf(rname, sizeof(rname), "run-%ld-%08x", (long)getpid(), rnd);
	}
	if (!backend && hs_conf_string(c->conf, "backend", &backend) != 0)
		backend = "local";
	/* A flag or request names a backend, network or image: the admin's lock holds. */
	if (!req->spec->network || !*req->spec->network)
		hs_conf_string(c->conf, "network", &req->spec->network);
	char image_key[96];
	snprintf(image_key, sizeof(image_key), "%s.image", backend);
	/* Is a backend that runs on the host unless isolated isolated here (its flag or config)? */
	const struct hs_builtin *bi = hs_core_builtin(backend);
	const char *iso = "none";
	if (bi && bi->host_isolation_key)
		hs_conf_string(c->conf, bi->host_isolation_key, &iso);
	int isolated = (req->spec->flags & HS_SPEC_ISOLATE) || strcmp(iso, "namespaces") == 0;
	/* Network "allowlist": refused where it cannot be enforced, rules within
	 * the ceiling.  A session keeps its rules: asked for nothing, it has
	 * those of its record. */
	const char *allow_rec[64], *const *allow = req->allow;
	size_t n_allow = req->n_allow;
	char allow_buf[sizeof(rec->allow)];
	if (have && rec->allow[0] && !allow && (!req->spec->network || !*req->spec->network)) {
		snprintf(allow_buf, sizeof(allow_buf), "%s", rec->allow);
		n_allow = 0;
		for (char *sv = NULL, *w = strtok_r(allow_buf, " ", &sv); w && n_allow < 64;
		     w = strtok_r(NULL, " ", &sv))
			if (strcmp(w, "-") != 0) /* "-": allowlist with nothing allowed */
				allow_rec[n_allow++] = w;
		allow = allow_rec;
	}
	mapped = hs_egress_session_check(c->conf, backend, isolated, &req->spec->network, allow,
	                                 n_allow, req->egress, err, errlen);
	if (mapped < 0)
		goto fail;
	if (!hs_conf_allows(c->conf, "backend", backend, err, errlen) ||
	    !hs_conf_allows(c->conf, "network", req->spec->network, err, errlen) ||
	    !hs_conf_allows(c->conf, image_key, req->spec->image, err, errlen))
		goto fail;
	/* A sandbox binds its workdir (-C, serve "workspace") read-write: a locked
	 * workspace holds there.  Plain local only starts in it. */
	int binds = !bi || !bi->host_isolation_key || isolated;
	if (binds && !hs_conf_allows(c->conf, "workspace", req->spec->workdir, err, errlen))
		goto fail;
	struct hs_backend *be = hs_core_backend(c, backend, err, errlen);
	if (!be)
		goto fail;
	hs_session_env_name(rname, ename, sizeof(ename));
	req->spec->session = rname;
	req->spec->env_name = have ? rec->env_name : ename;
	if (req->persistent)
		req->spec->flags |= HS_SPEC_PERSISTENT;
	int64_t idle = 0;
	if (hs_conf_int(c->conf, "runner_idle", &idle) == 0 && idle > 0 && idle < INT32_MAX)
		req->spec->runner_idle_s = (int32_t)idle;
	/* Allowlist: the sandbox gets no network but its loopback, where the
	 * runner's endpoint is the only way out (through the core's filter). */
	int egress = req->spec->network && strcmp(req->spec->network, HS_NETWORK_ALLOWLIST) == 0;
	const char *const *names = NULL;
	size_t n_names = 0;
	/* The test name map counts only when an admin file set and locked it. */
	if (egress && hs_conf_locked(c->conf, "egress_test_hosts"))
		hs_conf_strings(c->conf, "egress_test_hosts", &names, &n_names);
	/* Mapped onto the backend's own address filter: the ranges, decided now. */
	if (egress && mapped &&
	    hs_egress_map_prepare(req->egress, &(struct hs_egress_names){ names, n_names }, mapped,
	                          backend, isolated, have ? rec->allow : NULL, req->spec, &map, err,
	                          errlen) < 0)
		goto fail;
	/* A mapped sandbox keeps its ranges: another network would be a lie. */
	char why[512];
	if (!egress && have && rec->allow[0] &&
	    hs_egress_backend_can(backend, isolated, why, sizeof(why)) > 1) {
		snprintf(err, errlen, "session '%s' keeps the network it was opened with (allow %s); "
		         "run it without --network, or close it first", rname, rec->allow);
		goto fail;
	}
	if (egress)
		req->spec->network = "none";
	int oc = hs_conn_open(cn, be, req->spec, err, errlen);
	req->spec->egress_cidrs = NULL;
	req->spec->n_egress_cidrs = 0;
	if (oc != HS_OK)
		goto fail;
	if (egress && mapped &&
	    hs_egress_map_opened(c, req->name, backend, cn->props.env_flags, &map, req->egress_note,
	                         req->egress_note_len, err, errlen) < 0) {
		hs_conn_close(cn, have, NULL, 0);
		goto fail;
	}
	if (egress && !mapped) {
		req->egress_opts->rules = req->egress;
		req->egress_opts->names = (struct hs_egress_names){ names, n_names };
		if (hs_conn_egress(cn, req->egress_opts, err, errlen) < 0) {
			hs_conn_close(cn, have, NULL, 0);
			goto fail;
		}
	}
	if (req->name) {
		time_t now = time(NULL);
		if (!have) {
			snprintf(rec->name, sizeof(rec->name), "%s", req->name);
			snprintf(rec->backend, sizeof(rec->backend), "%s", backend);
			snprintf(rec->env_name, sizeof(rec->env_name), "%s", ename);
			if (req->spec->image)
				snprintf(rec->image, sizeof(rec->image), "%s", req->spec->image);
			rec->created = now;
			rec->persistent = 1;
		}
		rec->used = now;
		if (egress && hs_egress_rules_text(req->egress, rec->allow, sizeof(rec->allow)) < 0) {
			snprintf(err, errlen, "the allow list is too long to record (at most %zu bytes)",
			         sizeof(rec->allow) - 1);
			hs_conn_close(cn, have, NULL, 0);
			goto fail;
		}
		if (!egress)
			rec->allow[0] = '\0';
		/* The record is written before any command runs, so nothing leaks untracked. */
		if (hs_record_save(c, rec, err, errlen) < 0) {
			/* An environment no record names would leak: tear a new one down. */
			hs_conn_close(cn, have, NULL, 0);
			goto fail;
		}
	}
	hs_egress_map_free(&map);
	return lockfd;
fail:
	hs_egress_map_free(&map);
	if (lockfd >= 0)
		close(lockfd);
	return -1;
}

void
hs_session_end(struct hs_conn *cn, int lockfd, int ephemeral)
{
	/* The record was written (with the time of use) when the session began;
	 * writing it again here would only cost another fsync per command. */
	hs_conn_close(cn, !ephemeral, NULL, 0);
	if (lockfd >= 0)
		close(lockfd);
}
