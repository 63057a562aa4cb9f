/* SPDX-License-Identifier: MIT */
/*
 * test-example.c - drives the example backend through the SDK's fake host,
 * the way any plugin's own tests can, without the hs core.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hs/backend.h>
#include <hs/fakehost.h>

struct buf {
	char data[256];
	size_t len;
};

static int32_t
sink_write(void *ctx, int32_t stream, const void *p, uint64_t n)
{
	struct buf *b = ctx;
	if (stream == 1 && b->len + n < sizeof(b->data)) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
	}
	return HS_OK;
}

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "FAIL: %s (line %d)\n", #cond, __LINE__); return 1; } } while (0)

int
main(int argc, char **argv)
{
	void *dl = dlopen(argc > 1 ? argv[1] : "./example.so", RTLD_NOW | RTLD_LOCAL);
	CHECK(dl != NULL);
	const struct hs_backend_v1 *be = dlsym(dl, "hs_backend_v1");
	CHECK(be != NULL);
	CHECK(be->abi_major == HS_ABI_MAJOR);
	CHECK(strcmp(be->build_sig, HS_BUILD_SIG) == 0);

	struct hs_fakehost *fh = hs_fakehost_new(be->name, NULL);
	CHECK(fh != NULL);
	char err[HS_ERR_MAX] = "";
	void *state = NULL, *env = NULL;
	CHECK(be->init(hs_fakehost_host(fh), &state, err) == HS_OK);

	struct hs_probe_report rep;
	memset(&rep, 0, sizeof(rep));
	CHECK(be->probe(state, 0, &rep, err) == HS_OK && rep.ready);

	struct hs_env_spec spec = { .struct_size = sizeof(spec), .session = "t", .env_name = "t" };
	struct hs_env_props props;
	memset(&props, 0, sizeof(props));
	CHECK(be->open(state, &spec, &env, &props, err) == HS_OK);
	CHECK(props.host_access == 1);

	struct buf out = { .len = 0 };
	const char *av[] = { "/bin/sh", "-c", "echo hello; exit 7", NULL };
	const char *ev[] = { "PATH=/usr/bin:/bin", NULL };
	struct hs_exec_req req = { .struct_size = sizeof(req), .argc = 3, .exec_id = 1, .argv = av,
	                           .envp = ev, .n_env = 1, .sink = { &out, sink_write } };
	struct hs_exec_result res;
	CHECK(be->exec(env, &req, &res, err) == HS_OK);
	CHECK(res.exit_code == 7);
	CHECK(out.len == 6 && memcmp(out.data, "hello\n", 6) == 0);

	const char *slow[] = { "/bin/sh", "-c", "sleep 5", NULL };
	req.argv = slow;
	req.deadline_ms = 200;
	CHECK(be->exec(env, &req, &res, err) == HS_OK);
	CHECK(res.timed_out == 1);

	spec.image = "busybox";
	void *env2 = NULL;
	err[0] = '\0';
	CHECK(be->open(state, &spec, &env2, &props, err) == HS_E_INVALID);
	CHECK(err[0] != '\0');

	CHECK(be->close(env, 0, err) == HS_OK);
	be->fini(state);
	hs_fakehost_free(fh);
	printf("example backend: all checks passed\n");
	return 0;
}
