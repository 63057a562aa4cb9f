// SPDX-License-Identifier: MIT
// hs mcp driven by the official MCP TypeScript SDK client (StdioClientTransport
// + Client): initialize, tools/list, run, state across runs, check, approval
// denial, sessions, and nothing left running once the client closes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const HS = path.join(process.env.top_builddir, "core", "hs");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hs-mcp."));
fs.mkdirSync(tmp + "/run", { mode: 0o700 });
fs.mkdirSync(tmp + "/work");
const env = { ...process.env, XDG_STATE_HOME: tmp + "/state", XDG_CONFIG_HOME: tmp + "/config",
              XDG_CACHE_HOME: tmp + "/cache", XDG_RUNTIME_DIR: tmp + "/run" };
let fails = 0;

function check(name, cond, detail) {
	console.log((cond ? "ok: " : "FAIL: ") + name + (cond ? "" : " " + JSON.stringify(detail)));
	if (!cond)
		fails++;
}

async function connect(args) {
	const transport = new StdioClientTransport({ command: HS, args: ["mcp", ...args], env,
	                                             stderr: "inherit" });
	const client = new Client({ name: "hs-test", version: "1.0.0" });
	await client.connect(transport);
	return client;
}

// The pids of processes whose command line or environment names our tmp dir.
function ours() {
	const pids = [];
	for (const p of fs.readdirSync("/proc")) {
		if (!/^\d+$/.test(p) || Number(p) === process.pid)
			continue;
		for (const f of ["cmdline", "environ"]) {
			try {
				if (fs.readFileSync(`/proc/${p}/${f}`).includes(tmp)) {
					pids.push(p);
					break;
				}
			} catch { /* gone, or not ours to read */ }
		}
	}
	return pids;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const run = (client, args) => client.callTool({ name: "run", arguments: args });

try {
	const client = await connect([]);
	check("server name", client.getServerVersion()?.name === "hs", client.getServerVersion());
	check("tools capability", client.getServerCapabilities()?.tools !== undefined,
	      client.getServerCapabilities());

	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name).sort();
	check("tools/list names", JSON.stringify(names) ===
	      JSON.stringify(["check", "run", "session_close", "session_list", "session_open"]), names);
	for (const t of tools)
		check(`tool ${t.name} has schemas and annotations`,
		      t.inputSchema?.type === "object" && t.outputSchema?.type === "object" &&
		      typeof t.annotations?.readOnlyHint === "boolean" && t.description.length > 20, t);

	let r = await run(client, { command: "echo hi" });
	check("run echo hi", !r.isError && r.structuredContent?.exit_code === 0 &&
	      r.structuredContent?.stdout === "hi\n", r);
	check("run text content is the JSON", JSON.parse(r.content[0].text).stdout === "hi\n", r);

	r = await run(client, { command: "echo oops >&2; exit 3" });
	check("failing command is a result", !r.isError && r.structuredContent?.exit_code === 3 &&
	      r.structuredContent?.stderr === "oops\n", r);

	r = await run(client, { command: `cd ${tmp}/work` });
	check("cd", !r.isError && r.structuredContent?.exit_code === 0, r);
	r = await run(client, { command: "pwd" });
	check("state kept across runs", r.structuredContent?.stdout === `${tmp}/work\n`, r);

	r = await run(client, { command: "cat", stdin: "from stdin" });
	check("stdin", r.structuredContent?.stdout === "from stdin", r);

	r = await client.callTool({ name: "check", arguments: { command: "rm -rf /" } });
	check("check rm -rf / denies", !r.isError && r.structuredContent?.verdict === "deny" &&
	      r.structuredContent?.rules.length > 0, r);

	r = await run(client, { command: "rm -rf /" });
	check("hardline denied is isError", r.isError === true && !r.structuredContent &&
	      /denied/.test(r.content[0].text), r);

	r = await client.callTool({ name: "session_open", arguments: { session: "mcp-test-b" } });
	check("session_open", !r.isError && r.structuredContent?.session === "mcp-test-b", r);
	r = await run(client, { command: "echo b", session: "mcp-test-b" });
	check("run in a named session", r.structuredContent?.stdout === "b\n", r);
	r = await client.callTool({ name: "session_list", arguments: {} });
	const listed = (r.structuredContent?.sessions ?? []).map((s) => s.session).sort();
	check("session_list", JSON.stringify(listed) === JSON.stringify(["default", "mcp-test-b"]), r);
	r = await client.callTool({ name: "session_close", arguments: { session: "mcp-test-b" } });
	check("session_close", !r.isError && r.structuredContent?.closed === true, r);
	r = await run(client, { command: "true", session: "mcp-test-b" });
	check("closed session is gone", r.isError === true, r);
	r = await client.callTool({ name: "session_close", arguments: { session: "nope" } });
	check("closing an unknown session is isError", r.isError === true, r);

	// Something left running in the default session: it must not outlive the client.
	r = await run(client, { command: `sleep 300 & echo started` });
	check("background left", r.structuredContent?.stdout === "started\n", r);
	check("processes of the test exist while connected", ours().length > 0, ours());
	await client.close();
	let left = ours();
	for (let i = 0; i < 300 && left.length; i++) {
		await sleep(100);
		left = ours();
	}
	check("nothing left running after close", left.length === 0,
	      left.map((p) => { try { return fs.readFileSync(`/proc/${p}/cmdline`, "utf8"); } catch { return p; } }));

	// --approval deny: a command that needs approval is refused (isError).
	const denied = await connect(["--approval", "deny"]);
	r = await run(denied, { command: "chmod -R 777 /etc" });
	check("--approval deny refuses an ask command", r.isError === true &&
	      r.content[0].text.split("\n").length === 1, r);
	r = await denied.callTool({ name: "check", arguments: { command: "chmod -R 777 /etc" } });
	check("check reports the deny mode", r.structuredContent?.verdict === "ask" &&
	      r.structuredContent?.runs === false, r);
	await denied.close();

	// ask with nobody to ask denies too.
	const ask = await connect(["--approval", "ask"]);
	r = await run(ask, { command: "chmod -R 777 /etc" });
	check("ask without elicitation denies", r.isError === true, r);
	await ask.close();
} catch (e) {
	check("no exception", false, String(e && e.stack || e));
}
for (let i = 0; i < 300 && ours().length; i++)
	await sleep(100);
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(fails ? 1 : 0);
