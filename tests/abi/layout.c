/* SPDX-License-Identifier: MIT */
/*
 * layout.c - pins the layout of every ABI v1 struct.  A plugin built against
 * an older header must find every field where it was: minor versions only
 * append.  A reordered, resized or removed field fails this file at compile
 * time (make check builds it).  When a minor version appends a field, add
 * its line here and update the struct's size; never change an existing line.
 *
 * The figures are those of an LP64 build (x86_64, aarch64, ...); the
 * relations that hold on every target are checked everywhere below.
 */
#include <stddef.h>

#include <hs/backend.h>

#define HS_OFF(s, f, o) _Static_assert(offsetof(struct s, f) == (o), \
	"ABI break: struct " #s " field " #f " moved (minor versions only append)")
#define HS_SIZE(s, n) _Static_assert(sizeof(struct s) == (n), \
	"ABI break: struct " #s " changed size (append fields and update layout.c)")

/* Everywhere: the header every ABI version shares. */
_Static_assert(offsetof(struct hs_backend_v1, abi_major) == 0, "abi_major first");
_Static_assert(offsetof(struct hs_backend_v1, abi_minor) == 4, "abi_minor second");
_Static_assert(offsetof(struct hs_backend_v1, struct_size) == 8, "struct_size third");
_Static_assert(HS_ABI_MAJOR == 1, "this file pins ABI v1");
_Static_assert(HS_ABI_MINOR == 2, "a new minor: pin its fields here, then bump this line");

/* Status codes and flag bits are part of the ABI too. */
_Static_assert(HS_OK == 0 && HS_E_UNSUPPORTED == 1 && HS_E_INVALID == 2 &&
               HS_E_UNAVAILABLE == 3 && HS_DECLINED == 4 && HS_E_NOTFOUND == 5 &&
               HS_E_PERM == 6 && HS_E_TIMEOUT == 7 && HS_E_CANCELLED == 8 && HS_E_IO == 9 &&
               HS_E_NOMEM == 10 && HS_E_PROTOCOL == 11 && HS_E_DENIED == 12 &&
               HS_E_CONFIG == 13 && HS_E_AUTH == 14 && HS_E_HOSTKEY == 15 &&
               HS_E_EXISTS == 16 && HS_E_INTERNAL == 17 && HS_E_BUSY == 18 && HS_E_LOST == 19,
               "ABI break: enum hs_status renumbered");
_Static_assert(HS_SPEC_PERSISTENT == 1 && HS_SPEC_ISOLATE == 2 && HS_SPEC_ATTACH == 4,
               "ABI break: HS_SPEC_* renumbered");
_Static_assert(HS_ENVP_HOST_ENV == 1 && HS_ENVP_CALLER_CWD == 2 &&
               HS_ENVP_EGRESS_CIDRS == 4, "ABI break: HS_ENVP_* renumbered");
_Static_assert(HS_CLOSE_KEEP == 1 && HS_PROBE_DEEP == 1, "ABI break: close/probe flags renumbered");
_Static_assert(HS_CAP_RUNNER == 1 && HS_CAP_EXEC == 2 && HS_CAP_MOUNTS == 4 && HS_CAP_IMAGE == 8 &&
               HS_CAP_NETWORK == 16 && HS_CAP_LIMITS == 32 && HS_CAP_PERSIST == 64 &&
               HS_CAP_FILES == 128 && HS_CAP_ISOLATED == 256, "ABI break: HS_CAP_* renumbered");
_Static_assert(HS_CONF_STRING == 0 && HS_CONF_INT == 1 && HS_CONF_BOOL == 2 &&
               HS_CONF_STRINGS == 3, "ABI break: enum hs_config_type renumbered");
_Static_assert(HS_ERR_MAX == 512, "ABI break: error buffer size changed");
_Static_assert(HS_CORDER_FIXED == 0 && HS_CORDER_ENUM == 1 && HS_CORDER_LESS == 2 &&
               HS_CORDER_LESS_ZERO_MAX == 3 && HS_CORDER_BOOL == 4 && HS_CORDER_SUBSET == 5 &&
               HS_CORDER_SUPERSET == 6, "ABI break: enum hs_config_order renumbered");
_Static_assert(HS_CCHECK_ABSPATH == 1 && HS_CCHECK_ENVNAME == 2 && HS_CCHECK_POSITIVE == 4 &&
               HS_CCHECK_NONEMPTY == 8, "ABI break: HS_CCHECK_* renumbered");

#if __SIZEOF_POINTER__ == 8 && __SIZEOF_LONG__ == 8
HS_SIZE(hs_config_key, 24);
HS_OFF(hs_config_key, name, 0);
HS_OFF(hs_config_key, type, 8);
HS_OFF(hs_config_key, doc, 16);
HS_SIZE(hs_mount, 2320);
HS_OFF(hs_mount, kind, 0);
HS_OFF(hs_mount, host_access, 4);
HS_OFF(hs_mount, read_only, 8);
HS_OFF(hs_mount, workspace, 12);
HS_OFF(hs_mount, source, 16);
HS_OFF(hs_mount, target, 1040);
HS_OFF(hs_mount, reason, 2064);
HS_SIZE(hs_risk, 24);
HS_OFF(hs_risk, rule_id, 0);
HS_OFF(hs_risk, description, 8);
HS_OFF(hs_risk, hardline, 16);
HS_OFF(hs_risk, critical, 20);
HS_SIZE(hs_credentials, 1296);
HS_OFF(hs_credentials, mode, 0);
HS_OFF(hs_credentials, source, 16);
HS_OFF(hs_credentials, id, 272);
HS_OFF(hs_credentials, secret, 528);
HS_OFF(hs_credentials, warning, 1040);
HS_SIZE(hs_host_v1, 128);
HS_OFF(hs_host_v1, abi_major, 0);
HS_OFF(hs_host_v1, abi_minor, 4);
HS_OFF(hs_host_v1, struct_size, 8);
HS_OFF(hs_host_v1, reserved0, 12);
HS_OFF(hs_host_v1, ctx, 16);
HS_OFF(hs_host_v1, log, 24);
HS_OFF(hs_host_v1, config_string, 32);
HS_OFF(hs_host_v1, config_int, 40);
HS_OFF(hs_host_v1, config_bool, 48);
HS_OFF(hs_host_v1, config_strings, 56);
HS_OFF(hs_host_v1, assess_mount, 64);
HS_OFF(hs_host_v1, approve, 72);
HS_OFF(hs_host_v1, resolve_credentials, 80);
HS_OFF(hs_host_v1, state_dir, 88);
HS_OFF(hs_host_v1, cache_dir, 96);
HS_OFF(hs_host_v1, runtime_dir, 104);
HS_OFF(hs_host_v1, runner_path, 112);
HS_OFF(hs_host_v1, now_ms, 120);
HS_SIZE(hs_probe_report, 1544);
HS_OFF(hs_probe_report, ready, 0);
HS_OFF(hs_probe_report, runner, 4);
HS_OFF(hs_probe_report, reason, 8);
HS_OFF(hs_probe_report, detail, 520);
HS_SIZE(hs_env_spec, 96);
HS_OFF(hs_env_spec, struct_size, 0);
HS_OFF(hs_env_spec, flags, 4);
HS_OFF(hs_env_spec, session, 8);
HS_OFF(hs_env_spec, env_name, 16);
HS_OFF(hs_env_spec, image, 24);
HS_OFF(hs_env_spec, mounts, 32);
HS_OFF(hs_env_spec, n_mounts, 40);
HS_OFF(hs_env_spec, reserved0, 44);
HS_OFF(hs_env_spec, network, 48);
HS_OFF(hs_env_spec, memory_bytes, 56);
HS_OFF(hs_env_spec, cpus_milli, 64);
HS_OFF(hs_env_spec, runner_idle_s, 68);
HS_OFF(hs_env_spec, workdir, 72);
/* ABI 1.1: struct hs_env_spec was 80 bytes before the mapped allow list. */
HS_OFF(hs_env_spec, egress_cidrs, 80);
HS_OFF(hs_env_spec, n_egress_cidrs, 88);
HS_OFF(hs_env_spec, reserved1, 92);
HS_SIZE(hs_env_props, 1904);
HS_OFF(hs_env_props, host_access, 0);
HS_OFF(hs_env_props, runner, 4);
HS_OFF(hs_env_props, host_reason, 8);
HS_OFF(hs_env_props, isolation, 264);
HS_OFF(hs_env_props, runner_reason, 296);
HS_OFF(hs_env_props, shell, 552);
HS_OFF(hs_env_props, runtime_dir, 616);
HS_OFF(hs_env_props, note, 1128);
/* ABI 1.1: struct hs_env_props was 1384 bytes in 1.0. */
HS_OFF(hs_env_props, env_flags, 1384);
HS_OFF(hs_env_props, reserved1, 1388);
HS_OFF(hs_env_props, start_dir, 1392);
HS_SIZE(hs_sink, 16);
HS_OFF(hs_sink, ctx, 0);
HS_OFF(hs_sink, write, 8);
HS_SIZE(hs_exec_req, 88);
HS_OFF(hs_exec_req, struct_size, 0);
HS_OFF(hs_exec_req, argc, 4);
HS_OFF(hs_exec_req, exec_id, 8);
HS_OFF(hs_exec_req, argv, 16);
HS_OFF(hs_exec_req, envp, 24);
HS_OFF(hs_exec_req, n_env, 32);
HS_OFF(hs_exec_req, reserved0, 36);
HS_OFF(hs_exec_req, cwd, 40);
HS_OFF(hs_exec_req, stdin_data, 48);
HS_OFF(hs_exec_req, stdin_len, 56);
HS_OFF(hs_exec_req, deadline_ms, 64);
HS_OFF(hs_exec_req, sink, 72);
HS_SIZE(hs_exec_result, 16);
HS_OFF(hs_exec_result, exit_code, 0);
HS_OFF(hs_exec_result, timed_out, 4);
HS_OFF(hs_exec_result, cancelled, 8);
HS_OFF(hs_exec_result, reserved0, 12);
/* ABI 1.1: 136 bytes (config_rules appended); 1.0 ended at 128. */
HS_SIZE(hs_backend_v1, 136);
HS_OFF(hs_backend_v1, abi_major, 0);
HS_OFF(hs_backend_v1, abi_minor, 4);
HS_OFF(hs_backend_v1, struct_size, 8);
HS_OFF(hs_backend_v1, reserved0, 12);
HS_OFF(hs_backend_v1, build_sig, 16);
HS_OFF(hs_backend_v1, name, 24);
HS_OFF(hs_backend_v1, version, 32);
HS_OFF(hs_backend_v1, summary, 40);
HS_OFF(hs_backend_v1, caps, 48);
HS_OFF(hs_backend_v1, config_keys, 56);
HS_OFF(hs_backend_v1, init, 64);
HS_OFF(hs_backend_v1, fini, 72);
HS_OFF(hs_backend_v1, probe, 80);
HS_OFF(hs_backend_v1, open, 88);
HS_OFF(hs_backend_v1, runner_stream, 96);
HS_OFF(hs_backend_v1, exec, 104);
HS_OFF(hs_backend_v1, cancel, 112);
HS_OFF(hs_backend_v1, close, 120);
HS_OFF(hs_backend_v1, config_rules, 128);
/* ABI 1.1: struct hs_config_rule. */
HS_SIZE(hs_config_rule, 32);
HS_OFF(hs_config_rule, name, 0);
HS_OFF(hs_config_rule, order, 8);
HS_OFF(hs_config_rule, strict_bool, 12);
HS_OFF(hs_config_rule, values, 16);
HS_OFF(hs_config_rule, checks, 24);
HS_OFF(hs_config_rule, reserved0, 28);
#endif

int
main(void)
{
	return 0;
}
