/* SPDX-License-Identifier: MIT */
/* Unit tests of the directory-chain check (runner/dirchain.c). */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dirchain.h"

struct fx {
	char dir[64];
	char err[512];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/hs-dirchain-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", f->dir, f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* f->dir/rel as a path. */
static const char *at(struct fx *f, const char *rel)
{
	static char p[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", f->dir, rel);
	return p[i];
}

/* The lowest free descriptor: unchanged across a call that leaks none. */
static int lowest_fd(void)
{
	int fd = dup(0);

	close(fd);
	return fd;
}

/* Opens path, expecting success; checks the descriptor is the directory. */
static void opens(struct fx *f, const char *path, int flags)
{
	struct stat a, b;
	int low = lowest_fd(), fd;

	f->err[0] = '\0';
	fd = hs_dirchain_open(path, flags, NULL, f->err, sizeof(f->err));
	if (fd < 0)
		fail_msg("%s: %s", path, f->err);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	close(fd);
	assert_int_equal(lowest_fd(), low);
}

/* Expects a refusal whose message contains want. */
static void refused(struct fx *f, const char *path, int flags, const char *hint, const char *want)
{
	int low = lowest_fd();

	f->err[0] = '\0';
	assert_int_equal(hs_dirchain_open(path, flags, hint, f->err, sizeof(f->err)), -1);
	assert_int_equal(lowest_fd(), low);
	if (!strstr(f->err, want))
		fail_msg("%s: got [%s], want [%s]", path, f->err, want);
}

static void test_create(void **state)
{
	struct fx *f = *state;
	struct stat st;

	refused(f, at(f, "a/b/c"), 0, NULL, "cannot open directory");
	opens(f, at(f, "a/b/c"), HS_DIRCHAIN_CREATE);
	assert_int_equal(stat(at(f, "a/b"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(at(f, "a/b/c"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, geteuid());
	/* Again, existing; "." and doubled slashes are nothing. */
	opens(f, at(f, "a//./b/c/"), HS_DIRCHAIN_CREATE);
	refused(f, "rel/dir", HS_DIRCHAIN_CREATE, NULL, "not an absolute path");
}

static void test_leaf(void **state)
{
	struct fx *f = *state;

	assert_int_equal(mkdir(at(f, "open"), 0755), 0);
	assert_int_equal(chmod(at(f, "open"), 0755), 0);
	refused(f, at(f, "open"), 0, "set XDG_RUNTIME_DIR",
		"open' has mode 0755, not 0700; chmod 700 it or set XDG_RUNTIME_DIR");
	opens(f, at(f, "open"), HS_DIRCHAIN_NOWRITE);
	opens(f, at(f, "open"), HS_DIRCHAIN_TRUSTED);
	assert_int_equal(chmod(at(f, "open"), 0775), 0);
	refused(f, at(f, "open"), HS_DIRCHAIN_NOWRITE, NULL,
		"open' is writable by its group (mode 0775); chmod go-w it");
	/* A sticky leaf is an ancestor's kind of directory, not a private one. */
	assert_int_equal(chmod(at(f, "open"), 01777), 0);
	opens(f, at(f, "open"), HS_DIRCHAIN_TRUSTED);
	refused(f, at(f, "open"), HS_DIRCHAIN_NOWRITE, NULL, "is writable by others");

	assert_int_equal(mkdir(at(f, "d"), 0700), 0);
	assert_int_equal(symlink(at(f, "d"), at(f, "leaflink")), 0);
	refused(f, at(f, "leaflink"), HS_DIRCHAIN_CREATE, "set X",
		"leaflink' is a symbolic link; remove it or set X");
	FILE *fp = fopen(at(f, "file"), "w");
	assert_non_null(fp);
	fclose(fp);
	refused(f, at(f, "file"), 0, NULL, "file' is not a directory; remove it");
	refused(f, at(f, "file/x"), HS_DIRCHAIN_CREATE, NULL, "file' is not a directory");
}

static void test_ancestors(void **state)
{
	struct fx *f = *state;

	assert_int_equal(mkdir(at(f, "gw"), 0700), 0);
	assert_int_equal(mkdir(at(f, "gw/x"), 0700), 0);
	assert_int_equal(chmod(at(f, "gw"), 0770), 0);
	refused(f, at(f, "gw/x"), 0, "set XDG_RUNTIME_DIR",
		"gw' is writable by its group (mode 0770); chmod go-w it or set XDG_RUNTIME_DIR");
	/* Sticky: others cannot replace what is ours below it. */
	assert_int_equal(chmod(at(f, "gw"), 01777), 0);
	opens(f, at(f, "gw/x"), 0);
	/* A trusted directory we may only search still opens (as root, mode
	 * bits do not stop us: then this is an ordinary open). */
	assert_int_equal(mkdir(at(f, "xonly"), 0711), 0);
	assert_int_equal(chmod(at(f, "xonly"), 0311), 0);
	opens(f, at(f, "xonly"), HS_DIRCHAIN_TRUSTED);
	/* The temporary directory itself sits in sticky /tmp: the usual case. */
	opens(f, f->dir, 0);
}

static void test_links(void **state)
{
	struct fx *f = *state;

	assert_int_equal(mkdir(at(f, "real"), 0700), 0);
	assert_int_equal(mkdir(at(f, "real/in"), 0700), 0);
	/* Ours, absolute and relative (with ".."), followed in an ancestor. */
	assert_int_equal(symlink(at(f, "real"), at(f, "abs")), 0);
	assert_int_equal(symlink("../real", at(f, "real/up")), 0);
	opens(f, at(f, "abs/in"), 0);
	opens(f, at(f, "real/up/in"), 0);
	opens(f, at(f, "real/in/../in"), 0);
	assert_int_equal(symlink("real", at(f, "rel")), 0);
	opens(f, at(f, "rel/in/new"), HS_DIRCHAIN_CREATE);
	/* Checked where it leads: a writable target directory is refused. */
	assert_int_equal(chmod(at(f, "real"), 0777), 0);
	refused(f, at(f, "abs/in"), 0, NULL, "real' is writable by others (mode 0777)");
	assert_int_equal(chmod(at(f, "real"), 0700), 0);
	/* A loop ends. */
	assert_int_equal(symlink("loop2", at(f, "loop1")), 0);
	assert_int_equal(symlink("loop1", at(f, "loop2")), 0);
	refused(f, at(f, "loop1/x"), HS_DIRCHAIN_CREATE, NULL, "too many symbolic links");
}

/* Another user's entries, and root's (needs root to arrange). */
static void test_owners(void **state)
{
	struct fx *f = *state;

	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(at(f, "other"), 0700), 0);
	assert_int_equal(mkdir(at(f, "other/x"), 0700), 0);
	assert_int_equal(chown(at(f, "other"), 65534, 65534), 0);
	refused(f, at(f, "other/x"), 0, "set XDG_RUNTIME_DIR",
		"other' is owned by uid 65534, not you or root; remove it or set XDG_RUNTIME_DIR");
	refused(f, at(f, "other"), HS_DIRCHAIN_CREATE, NULL, "is owned by uid 65534, not you");
	assert_int_equal(mkdir(at(f, "mine"), 0700), 0);
	assert_int_equal(symlink(at(f, "mine"), at(f, "theirs")), 0);
	assert_int_equal(lchown(at(f, "theirs"), 65534, 65534), 0);
	refused(f, at(f, "theirs/y"), HS_DIRCHAIN_CREATE, NULL,
		"theirs' is a symbolic link owned by uid 65534, not you or root");
}

/* Inside a user namespace that maps only root, another owner is unmapped
 * (the overflow uid) and counts as root's: the case of an image's root
 * inside an unprivileged container.  Outside, the same owner is refused. */
static void test_userns(void **state)
{
	struct fx *f = *state;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(at(f, "img"), 0755), 0);
	assert_int_equal(mkdir(at(f, "img/run"), 0700), 0);
	assert_int_equal(mkdir(at(f, "img/open"), 0777), 0);
	assert_int_equal(chmod(at(f, "img/open"), 0777), 0);
	assert_int_equal(mkdir(at(f, "img/open/run"), 0700), 0);
	assert_int_equal(chown(at(f, "img"), 1234, 1234), 0);
	assert_int_equal(chown(at(f, "img/open"), 1234, 1234), 0);
	refused(f, at(f, "img/run"), 0, NULL, "img' is owned by uid 1234, not you or root");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[512];
		int fd, ok;

		if (unshare(CLONE_NEWUSER) < 0)
			_exit(77);
		fd = open("/proc/self/uid_map", O_WRONLY);
		if (fd < 0 || write(fd, "0 0 1\n", 6) != 6)
			_exit(77);
		close(fd);
		fd = hs_dirchain_open(at(f, "img/run"), 0, NULL, err, sizeof(err));
		ok = fd >= 0;
		if (!ok)
			fprintf(stderr, "in the namespace: %s\n", err);
		/* Unmapped is root's, not anyone's: writable is still refused. */
		if (hs_dirchain_open(at(f, "img/open/run"), 0, NULL, err, sizeof(err)) >= 0 ||
		    !strstr(err, "open' is writable by others")) {
			fprintf(stderr, "in the namespace, writable: [%s]\n", err);
			ok = 0;
		}
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leaf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ancestors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owners, setup, teardown),
		cmocka_unit_test_setup_teardown(test_userns, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
