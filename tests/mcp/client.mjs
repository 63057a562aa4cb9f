// SPDX-License-Identifier: MIT
// hs mcp driven by the official MCP TypeScript SDK client (StdioClientTransport
// + Client): initialize, tools/list, run, state across runs, check, approval
// denial, sessions, and nothing left running once the client closes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { HS, check, failed, scratch, sleep } from "./lib.mjs";

const { tmp, env } = scratch("hs-mcp.");
fs.mkdirSync(tmp + "/work");

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

// Raw lines to a bare `hs mcp` (what no SDK client sends): the replies, one per line.
async function raw(lines) {
	const p = spawn(HS, ["mcp"], { env, stdio: ["pipe", "pipe", "inherit"] });
	let out = "";
	p.stdout.on("data", (d) => { out += d; });
	// "close" comes once stdout is at EOF: nothing left behind may hold it open.
	let closed = false;
	const done = new Promise((r) => p.on("close", () => { closed = true; r(); }));
	p.stdin.end(lines.join("\n") + "\n");
	await Promise.race([done, sleep(30000)]);
	check("stdout closed when hs mcp ends", closed, out);
	return out.split("\n").filter((l) => l).map((l) => JSON.parse(l));
}

// Poll until no process of the test is left (30 s at most); the ones left.
async function settle() {
	let left = ours();
	for (let i = 0; i < 300 && left.length; i++) {
		await sleep(100);
		left = ours();
	}
	return left.map((p) => { try { return fs.readFileSync(`/proc/${p}/cmdline`, "utf8"); } catch { return p; } });
}

const byIdIn = (rep, id) => rep.find((x) => x.id === id);
const run = (client, args) => client.callTool({ name: "run", arguments: args });

try {
	const client = await connect([]);
	check("server name", client.getServerVersion()?.name === "hs", client.getServerVersion());
	check("tools capability", client.getServerCapabilities()?.tools !== undefined,
	      client.getServerCapabilities());

	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name).sort();
	check("tools/list names", JSON.stringify(names) ===
	      JSON.stringify(["check", "job_kill", "job_list", "job_output", "job_resize", "job_write", "output_read",
	                      "read_file", "run", "session_close", "session_list", "session_open",
	                      "write_file"]), names);
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

	r = await run(client, { command: "sleep 60", timeout: 1 });
	check("timeout", !r.isError && r.structuredContent?.timed_out === true &&
	      r.structuredContent?.exit_code === 124, r);
	r = await run(client, { command: "pwd", cwd: "/" });
	check("cwd", r.structuredContent?.stdout === "/\n", r);
	r = await run(client, { command: "echo x", timeout: -1 });
	check("bad timeout is isError", r.isError === true, r);

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
	let left = await settle();
	check("nothing left running after close", left.length === 0, left);
	const listing = () => spawnSync(HS, ["session", "list"], { env, encoding: "utf8" }).stdout;
	check("hs session list agrees", !/mcp-/.test(listing()), listing());

	// A persistent session outlives the connection (its record stays).
	const keep = await connect([]);
	r = await keep.callTool({ name: "session_open", arguments: { session: "mcp-test-keep", persistent: true } });
	check("persistent session_open", r.structuredContent?.persistent === true, r);
	await keep.close();
	check("persistent session kept", /mcp-test-keep/.test(listing()), listing());
	spawnSync(HS, ["session", "close", "mcp-test-keep"], { env });
	check("persistent session closed by hs session close", !/mcp-test-keep/.test(listing()), listing());

	// SIGTERM while a command runs: it is stopped and the session closed.
	const t = new StdioClientTransport({ command: HS, args: ["mcp"], env, stderr: "inherit" });
	const term = new Client({ name: "hs-test", version: "1.0.0" });
	await term.connect(t);
	const pending = run(term, { command: "sleep 300" }).catch((e) => e);
	const sleeping = () => ours().some((p) => {
		try { return fs.readFileSync(`/proc/${p}/cmdline`, "utf8") === "sleep\u0000300\u0000"; } catch { return false; }
	});
	for (let i = 0; i < 300 && !sleeping(); i++)
		await sleep(100);
	check("the command runs before SIGTERM", sleeping(), ours());
	process.kill(t.pid, "SIGTERM");
	await pending;
	left = await settle();
	check("nothing left running after SIGTERM", left.length === 0, left);
	await term.close();

	// A backend that cannot be loaded: the run is isError with one line, the server goes on.
	const bad = await connect(["--backend", "no-such-backend"]);
	r = await run(bad, { command: "true" });
	check("backend failure is isError", r.isError === true && r.content[0].text.length > 0 &&
	      !r.content[0].text.includes("\n"), r);
	r = await bad.callTool({ name: "check", arguments: { command: "ls" } });
	check("server goes on after a failure", r.structuredContent?.verdict === "allow", r);
	await bad.close();

	// The protocol errors and version negotiation.
	const init = (v) => JSON.stringify({ jsonrpc: "2.0", id: v, method: "initialize",
		params: { protocolVersion: v, capabilities: {}, clientInfo: { name: "t", version: "1" } } });
	const rep = await raw([init("2025-06-18"), init("2025-11-25"), init("1999-01-01"), "{not json",
		JSON.stringify({ jsonrpc: "1.0", id: 5, method: "ping" }), JSON.stringify([1]),
		JSON.stringify({ jsonrpc: "2.0", id: 6, method: "no/such" }),
		JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { arguments: {} } }),
		JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "nope" } }),
		JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
		JSON.stringify({ jsonrpc: "2.0", id: "p", method: "ping" }),
		JSON.stringify({ jsonrpc: "2.0", id: "o", method: "tools/call", params: { name: "session_open",
			arguments: { session: "mcp-test-raw", persistent: true } } }),
		JSON.stringify({ jsonrpc: "2.0", id: "r", method: "tools/call", params: { name: "run",
			arguments: { session: "mcp-test-raw", command: "echo raw" } } })]);
	spawnSync(HS, ["session", "close", "mcp-test-raw"], { env });
	check("raw run in a persistent session", byIdIn(rep, "r")?.result?.structuredContent?.stdout === "raw\n", rep);
	const byId = (id) => byIdIn(rep, id);
	check("negotiates 2025-06-18", byId("2025-06-18")?.result?.protocolVersion === "2025-06-18", rep);
	check("negotiates 2025-11-25", byId("2025-11-25")?.result?.protocolVersion === "2025-11-25", rep);
	check("unknown version gets 2025-06-18", byId("1999-01-01")?.result?.protocolVersion === "2025-06-18", rep);
	const codes = rep.filter((x) => x.id === null).map((x) => x.error?.code);
	check("parse error -32700 and invalid -32600 with id null",
	      JSON.stringify(codes) === JSON.stringify([-32700, -32600]), rep);
	check("wrong jsonrpc version -32600", byId(5)?.error?.code === -32600, rep);
	check("unknown method -32601", byId(6)?.error?.code === -32601, rep);
	check("tools/call without name -32602", byId(7)?.error?.code === -32602, rep);
	check("unknown tool -32602", byId(8)?.error?.code === -32602, rep);
	check("ping after errors, notification unanswered", byId("p")?.result !== undefined &&
	      rep.length === 12, rep);

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
process.exit(failed());
