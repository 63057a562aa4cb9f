/* SPDX-License-Identifier: MIT */
/*
 * hsconf-schema.c - the core's configuration keys.  Keep conf/hs.conf and
 * man/hs.conf.5 in step with this table.  Backends declare their own keys
 * (hs_backend_v1.config_keys and config_rules; core/config/hsconf-declare.c).
 */
#include "config.h"

#include <string.h>

#include "hs/backend.h"
#include "core/config/hsconf-schema.h"

static const char *const approval_values[] = { "deny", "ask", "approve", NULL };

const struct hs_conf_schema hs_conf_schema_table[] = {
	{ .name = "backend", .type = HS_CONF_STRING, .def_string = "local",
	  .order = HS_ORDER_FIXED, .checks = HS_CHECK_NONEMPTY,
	  .doc = "backend used when none is given" },
	{ .name = "network", .type = HS_CONF_STRING,
	  .order = HS_ORDER_FIXED, .checks = HS_CHECK_NONEMPTY,
	  .doc = "network of new environments when none is asked for (--network): none, allowlist or a backend's network name; default: none" },
	{ .name = "allow", .type = HS_CONF_STRINGS, .has_default = 1,
	  .order = HS_ORDER_SUBSET,
	  .doc = "egress allow list of network \"allowlist\": host, *.domain, host:port, CIDR ranges" },
	{ .name = "egress_test_hosts", .type = HS_CONF_STRINGS, .has_default = 1,
	  .order = HS_ORDER_FIXED,
	  .doc = "NAME=ADDRESS pairs the egress filter resolves without DNS (tests); honoured only when an admin file sets and locks it" },
	{ .name = "approval", .type = HS_CONF_STRING, .def_string = "ask",
	  .order = HS_ORDER_ENUM, .enums = approval_values,
	  .doc = "approval mode for dangerous commands: deny, ask or approve" },
	{ .name = "timeout", .type = HS_CONF_INT, .def_int = 0, .has_default = 1,
	  .order = HS_ORDER_LESS_ZERO_MAX,
	  .doc = "default deadline of a command in seconds; 0: none" },
	{ .name = "max_timeout", .type = HS_CONF_INT, .def_int = 0, .has_default = 1,
	  .order = HS_ORDER_LESS_ZERO_MAX,
	  .doc = "largest deadline a command may ask for in seconds; 0: no ceiling" },
	{ .name = "session_ttl", .type = HS_CONF_INT, .def_int = 86400, .has_default = 1,
	  .order = HS_ORDER_LESS_ZERO_MAX,
	  .doc = "idle seconds after which a session expires; 0: never" },
	{ .name = "plugin_dirs", .type = HS_CONF_STRINGS, .has_default = 1,
	  .order = HS_ORDER_SUBSET, .checks = HS_CHECK_ABSPATH,
	  .doc = "extra directories searched for backend plugins, before the built-in one" },
	{ .name = "policy_dirs", .type = HS_CONF_STRINGS, .has_default = 1,
	  .order = HS_ORDER_SUPERSET, .checks = HS_CHECK_ABSPATH,
	  .doc = "extra policy directories, read after the shipped policy" },
	{ .name = "workspace", .type = HS_CONF_STRING,
	  .order = HS_ORDER_FIXED, .checks = HS_CHECK_ABSPATH,
	  .doc = "host directory mounted at /workspace (sanctioned host access)" },
	{ .name = "env_passthrough", .type = HS_CONF_STRINGS, .has_default = 1,
	  .order = HS_ORDER_SUBSET, .checks = HS_CHECK_ENVNAME,
	  .doc = "environment variable names let through the credential scrub" },
	{ .name = "noninteractive", .type = HS_CONF_BOOL, .def_int = 1, .has_default = 1,
	  .order = HS_ORDER_BOOL, .strict_bool = 1,
	  .doc = "give every command the non-interactive defaults (hs(1)): failing editors, cat as pager, no prompts" },
	{ .name = "ci", .type = HS_CONF_STRING,
	  .order = HS_ORDER_FIXED,
	  .doc = "value of CI in every command's environment; default: CI not set by hs" },
	{ .name = "output_limit", .type = HS_CONF_INT, .def_int = 1048576, .has_default = 1,
	  .order = HS_ORDER_LESS, .checks = HS_CHECK_POSITIVE,
	  .doc = "bytes kept per stream for --json and serve (head and tail)" },
	{ .name = "output_keep", .type = HS_CONF_INT, .def_int = 67108864, .has_default = 1,
	  .order = HS_ORDER_LESS,
	  .doc = "bytes of whole command output a session's runner keeps to read back (0: none)" },
	{ .name = "audit", .type = HS_CONF_BOOL, .def_int = 1, .has_default = 1,
	  .order = HS_ORDER_BOOL, .strict_bool = 1,
	  .doc = "append every command, verdict and exit to the audit log" },
	{ .name = "audit_log", .type = HS_CONF_STRING,
	  .order = HS_ORDER_FIXED, .checks = HS_CHECK_ABSPATH,
	  .doc = "audit log file; default $XDG_STATE_HOME/hs/audit.log" },
	{ .name = "runner_path", .type = HS_CONF_STRING,
	  .order = HS_ORDER_FIXED, .checks = HS_CHECK_ABSPATH,
	  .doc = "hs-runner binary; default the installed one" },
	{ .name = "runner_idle", .type = HS_CONF_INT, .def_int = 600, .has_default = 1,
	  .order = HS_ORDER_LESS_ZERO_MAX,
	  .doc = "idle seconds after which a session's runner exits; 0: never" },
	{ .name = "kill_grace_ms", .type = HS_CONF_INT, .def_int = 2000, .has_default = 1,
	  .order = HS_ORDER_LESS,
	  .doc = "milliseconds between SIGTERM and SIGKILL when a command is stopped" },
	{ .name = "locked", .type = HS_CONF_STRINGS, .has_default = 1,
	  .order = HS_ORDER_NOT_LOCKABLE,
	  .doc = "keys later layers may tighten but not loosen (admin files only)" },
	{ .name = NULL },
};

const struct hs_conf_schema *
hs_conf_schema_find(const char *key)
{
	for (const struct hs_conf_schema *s = hs_conf_schema_table; s->name; s++)
		if (strcmp(s->name, key) == 0)
			return s;
	return NULL;
}

int
hs_conf_schema_known_section(const char *name)
{
	size_t n = strlen(name);

	for (const struct hs_conf_schema *s = hs_conf_schema_table; s->name; s++)
		if (strncmp(s->name, name, n) == 0 && s->name[n] == '.')
			return 1;
	return 0;
}
