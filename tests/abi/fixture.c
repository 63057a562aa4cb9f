/*
 * fixture.c - one source for every bad-plugin fixture of the loader tests;
 * each variant is selected with -D when tests/abi/loader.test compiles it.
 */
#include <stdlib.h>

#include <hs/backend.h>

#ifndef FIX_NAME
#define FIX_NAME "fixgood"
#endif
#ifndef FIX_MAJOR
#define FIX_MAJOR HS_ABI_MAJOR
#endif
#ifndef FIX_MINOR
#define FIX_MINOR HS_ABI_MINOR
#endif
#ifndef FIX_SIZE
#define FIX_SIZE sizeof(struct hs_backend_v1)
#endif
#ifndef FIX_SIG
#define FIX_SIG HS_BUILD_SIG
#endif

#ifdef FIX_CRASH
__attribute__((constructor)) static void
crash(void)
{
	abort();
}
#endif

static int32_t
fx_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
#ifdef FIX_UNAVAILABLE
	r->ready = 0;
	return HS_OK; /* deliberately gives no reason: plugin-check must flag it */
#else
	r->ready = 1;
	return HS_OK;
#endif
}

static int32_t
fx_open(void *state, const struct hs_env_spec *spec, void **env, struct hs_env_props *props,
        char *err)
{
	return HS_E_UNSUPPORTED;
}

static int32_t
fx_exec(void *env, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	return HS_E_UNSUPPORTED;
}

static int32_t
fx_close(void *env, uint32_t flags, char *err)
{
	return HS_OK;
}

#ifndef FIX_NO_SYMBOL
HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	.abi_major = FIX_MAJOR,
	.abi_minor = FIX_MINOR,
	.struct_size = FIX_SIZE,
	.build_sig = FIX_SIG,
	.name = FIX_NAME,
	.version = "0",
	.summary = "loader test fixture",
	.caps = HS_CAP_EXEC,
	.probe = fx_probe,
#ifndef FIX_NO_OPEN
	.open = fx_open,
#endif
	.exec = fx_exec,
	.close = fx_close,
};
#else
HS_BACKEND_EXPORT int hs_backend_v0 = 1;
#endif
