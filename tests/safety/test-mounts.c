/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * test-mounts - every mount spec form of DESIGN.md section 5, classified.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/safety/mounts.h"

struct mcase {
	const char *spec;
	int kind;
	int host_access;
	int workspace;
	const char *source;
	const char *target;
	int ro;
	const char *reason_has;
};

static const struct mcase cases[] = {
	{ "/h:/c", HS_MOUNT_HOST, 1, 0, "/h", "/c", 0, "/h" },
	{ "/h:/c:ro", HS_MOUNT_HOST, 1, 0, "/h", "/c", 1, "/h" },
	{ "/h:/c:rw,z", HS_MOUNT_HOST, 1, 0, "/h", "/c", 0, NULL },
	{ "name:/c", HS_MOUNT_VOLUME, 0, 0, "name", "/c", 0, NULL },
	{ "my-vol_1.x:/data:ro", HS_MOUNT_VOLUME, 0, 0, "my-vol_1.x", "/data", 1, NULL },
	{ "/c", HS_MOUNT_ANONYMOUS, 0, 0, "", "/c", 0, NULL },
	{ "~/x:/c", HS_MOUNT_HOST, 1, 0, "/home/u/x", "/c", 0, NULL },
	{ "~:/c", HS_MOUNT_HOST, 1, 0, "/home/u", "/c", 0, "home directory" },
	{ "$HOME/x:/c", HS_MOUNT_HOST, 1, 0, "/home/u/x", "/c", 0, NULL },
	{ "${HOME}/x:/c", HS_MOUNT_HOST, 1, 0, "/home/u/x", "/c", 0, NULL },
	{ "${VAR}/x:/c", HS_MOUNT_HOST, 1, 0, "${VAR}/x", "/c", 0, "variable" },
	{ "$VAR:/c", HS_MOUNT_HOST, 1, 0, "$VAR", "/c", 0, "variable" },
	{ "./x:/c", HS_MOUNT_HOST, 1, 0, "./x", "/c", 0, "relative" },
	{ "../x:/c", HS_MOUNT_HOST, 1, 0, "../x", "/c", 0, "relative" },
	{ ".:/c", HS_MOUNT_HOST, 1, 0, ".", "/c", 0, "relative" },
	{ "C:\\x:/c", HS_MOUNT_HOST, 1, 0, "C:\\x", "/c", 0, NULL },
	{ "c:/x:/c", HS_MOUNT_HOST, 1, 0, "c:/x", "/c", 0, NULL },
	{ "\\\\server\\share:/c", HS_MOUNT_HOST, 1, 0, "\\\\server\\share", "/c", 0, NULL },
	{ "/:/host", HS_MOUNT_HOST, 1, 0, "/", "/host", 0, "host root" },
	{ "/var/run/docker.sock:/var/run/docker.sock", HS_MOUNT_HOST, 1, 0, "/var/run/docker.sock", "/var/run/docker.sock", 0, "docker socket" },
	{ "/work/proj:/workspace", HS_MOUNT_HOST, 1, 1, "/work/proj", "/workspace", 0, "workspace" },
	{ "/work/proj/sub:/x", HS_MOUNT_HOST, 1, 1, "/work/proj/sub", "/x", 0, "workspace" },
	{ "/work/project2:/x", HS_MOUNT_HOST, 1, 0, "/work/project2", "/x", 0, NULL },
	{ "type=bind,src=/h,dst=/c", HS_MOUNT_HOST, 1, 0, "/h", "/c", 0, NULL },
	{ "dst=/c,readonly,source=/h,type=bind", HS_MOUNT_HOST, 1, 0, "/h", "/c", 1, NULL },
	{ "target=/c,type=bind,source=/", HS_MOUNT_HOST, 1, 0, "/", "/c", 0, "host root" },
	{ "type=volume,src=data,destination=/d", HS_MOUNT_VOLUME, 0, 0, "data", "/d", 0, NULL },
	{ "type=volume,dst=/d", HS_MOUNT_ANONYMOUS, 0, 0, "", "/d", 0, NULL },
	{ "src=data,target=/d,ro=true", HS_MOUNT_VOLUME, 0, 0, "data", "/d", 1, NULL },
	{ "type=volume,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/path,dst=/x", HS_MOUNT_HOST, 1, 0, "/path", "/x", 0, "volume bind" },
	{ "type=tmpfs,dst=/x", HS_MOUNT_TMPFS, 0, 0, "", "/x", 0, NULL },
	{ "type=tmpfs,tmpfs-size=64m,target=/run", HS_MOUNT_TMPFS, 0, 0, "", "/run", 0, NULL },
	{ "", HS_MOUNT_INVALID, 0, 0, "", "", 0, "empty" },
	{ "relative:c", HS_MOUNT_INVALID, 0, 0, "", "", 0, "absolute" },
	{ "a:b:c:d", HS_MOUNT_INVALID, 0, 0, "", "", 0, "too many" },
	{ "bad name!:/c", HS_MOUNT_INVALID, 0, 0, "", "", 0, "volume name" },
	{ "type=bind,dst=/c", HS_MOUNT_INVALID, 0, 0, "", "/c", 0, "without a source" },
	{ "type=bind,src=/h", HS_MOUNT_INVALID, 0, 0, "", "", 0, "missing target" },
	{ "type=nfs,src=x,dst=/c", HS_MOUNT_INVALID, 0, 0, "", "/c", 0, "unknown mount type" },
	{ "type=tmpfs,src=/h,dst=/c", HS_MOUNT_INVALID, 0, 0, "", "/c", 0, "tmpfs" },
	{ "type=bind,src=/h,dst=/c,bogus=1", HS_MOUNT_INVALID, 0, 0, "", "", 0, "unknown mount key" },
};

static void
test_mount_forms(void **state)
{
	struct hs_mount m;
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct mcase *c = &cases[k];

		assert_int_equal(hs_mount_assess(c->spec, "/home/u", "/work/proj", &m), 0);
		if (m.kind != c->kind || m.host_access != c->host_access || m.workspace != c->workspace)
			fprintf(stderr, "spec '%s': kind %s host %d ws %d (%s)\n", c->spec, hs_mount_kind_name(m.kind),
				m.host_access, m.workspace, m.reason);
		assert_int_equal(m.kind, c->kind);
		assert_int_equal(m.host_access, c->host_access);
		assert_int_equal(m.workspace, c->workspace);
		if (c->kind != HS_MOUNT_INVALID) {
			assert_string_equal(m.source, c->source);
			assert_string_equal(m.target, c->target);
			assert_int_equal(m.read_only, c->ro);
		}
		if (c->reason_has)
			assert_non_null(strstr(m.reason, c->reason_has));
	}
	assert_int_equal(hs_mount_assess(NULL, NULL, NULL, &m), -1);
	assert_string_equal(hs_mount_kind_name(HS_MOUNT_HOST), "host");
	assert_string_equal(hs_mount_kind_name(HS_MOUNT_VOLUME), "volume");
	assert_string_equal(hs_mount_kind_name(HS_MOUNT_ANONYMOUS), "anonymous");
	assert_string_equal(hs_mount_kind_name(HS_MOUNT_TMPFS), "tmpfs");
	assert_string_equal(hs_mount_kind_name(HS_MOUNT_INVALID), "invalid");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
