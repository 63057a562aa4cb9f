// SPDX-License-Identifier: MIT
// What every tests/mcp/*.mjs starts with: the hs under test, a private
// state/config/runtime directory tree, and check() counting failures.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export const HS = path.join(process.env.top_builddir, "core", "hs");

// A fresh temporary tree (prefix: its name) and hs's environment pointing into it.
export function scratch(prefix) {
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
	fs.mkdirSync(tmp + "/run", { mode: 0o700 });
	const env = { ...process.env, XDG_STATE_HOME: tmp + "/state", XDG_CONFIG_HOME: tmp + "/config",
	              XDG_CACHE_HOME: tmp + "/cache", XDG_RUNTIME_DIR: tmp + "/run" };
	return { tmp, env };
}

let fails = 0;

export function check(name, cond, detail) {
	console.log((cond ? "ok: " : "FAIL: ") + name + (cond ? "" : " " + JSON.stringify(detail)));
	if (!cond)
		fails++;
}

// The test's exit status: 1 when a check failed.
export const failed = () => (fails ? 1 : 0);

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
