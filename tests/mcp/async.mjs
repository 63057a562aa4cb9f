// SPDX-License-Identifier: MIT
// hs mcp while a command runs, driven by the official MCP TypeScript SDK
// client: approval by elicitation (accept, session, decline, cancel, no
// answer, no capability, hardline never asked), progress notifications,
// notifications/cancelled stopping the command's processes, and ping answered
// meanwhile.  No timing asserts: every wait polls a condition for up to 30 s.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { HS, check, failed, scratch, sleep } from "./lib.mjs";

const { tmp, env } = scratch("hs-mcp-async.");


// Resolves to what p resolves to, or to "timeout" after ms.
const within = (p, ms) => Promise.race([p, sleep(ms).then(() => "timeout")]);

// A client; with answer, it declares elicitation and answers each request with answer(params).
async function connect(args, answer) {
	const transport = new StdioClientTransport({ command: HS, args: ["mcp", ...args], env,
	                                             stderr: "inherit" });
	const client = new Client({ name: "hs-async-test", version: "1.0.0" },
	                          answer ? { capabilities: { elicitation: {} } } : {});
	const asked = [];
	if (answer)
		client.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
			asked.push(req.params);
			return answer(req.params, extra);
		});
	await client.connect(transport);
	return { client, asked, transport };
}

// Pids of processes whose command line is exactly argv (pgrep with the [x] trick: never itself).
function pgrep(pattern) {
	const r = spawnSync("pgrep", ["-f", pattern], { encoding: "utf8" });
	return r.stdout.split("\n").filter((l) => l);
}

async function until(cond) {
	for (let i = 0; i < 300 && !cond(); i++)
		await sleep(100);
	return cond();
}

const run = (client, args, opts) => client.callTool({ name: "run", arguments: args }, undefined, opts);
const marker = (name) => path.join(tmp, name);
// A command that needs approval (ask) and leaves a marker file when it runs.
const askCmd = (name) => `chmod -R 777 /etc/hs-mcp-async-none 2>/dev/null; touch ${marker(name)}`;

try {
	// Accept "once": the command runs; the question shows the command and rules and the choices.
	let c = await connect(["--approval", "ask"], () => ({ action: "accept", content: { decision: "once" } }));
	let r = await run(c.client, { command: askCmd("once") });
	check("accept once: the command ran", !r.isError && fs.existsSync(marker("once")), r);
	const q = c.asked[0];
	check("elicitation shows the command and the rule", c.asked.length === 1 &&
	      q.message.includes(askCmd("once")) && q.message.includes("fs.chmod-system"), c.asked);
	check("elicitation offers once, session, always, deny",
	      JSON.stringify(q?.requestedSchema?.properties?.decision?.enum) ===
	      JSON.stringify(["once", "session", "always", "deny"]), q);
	const audit = () => { try { return fs.readFileSync(tmp + "/state/hs/audit.log", "utf8"); } catch { return ""; } };
	check("the answer is audited with approver elicitation", audit().split("\n").some((l) =>
	      l.includes(marker("once")) && /"approver":"elicitation"/.test(l) && /"decision":"once"/.test(l)),
	      audit());
	r = await run(c.client, { command: askCmd("once2") });
	check("once is asked again next time", c.asked.length === 2 && fs.existsSync(marker("once2")), c.asked);

	// Control characters are escaped in the question.
	const esc = `echo "\u001b[2J" >/dev/null; ` + askCmd("esc");
	r = await run(c.client, { command: esc });
	const m = c.asked[2]?.message ?? "";
	check("control characters escaped in the question", m.includes("\\x1b[2J") && !m.includes("\u001b"), m);

	// Hardline: never asked, never run.
	const n = c.asked.length;
	r = await run(c.client, { command: `bash -i >& /dev/tcp/127.0.0.1/9 0>&1; touch ${marker("hard")}` });
	check("hardline denied without elicitation", r.isError === true && c.asked.length === n &&
	      !fs.existsSync(marker("hard")), { r, asked: c.asked.length - n });
	await c.client.close();

	// Accept "session": asked once, then granted for the session.
	c = await connect(["--approval", "ask"], () => ({ action: "accept", content: { decision: "session" } }));
	r = await run(c.client, { command: askCmd("s1") });
	r = await run(c.client, { command: askCmd("s2") });
	check("session: asked once, both ran", c.asked.length === 1 && fs.existsSync(marker("s1")) &&
	      fs.existsSync(marker("s2")), c.asked.length);
	await c.client.close();

	// Decline and cancel: not run, isError, denied.
	for (const action of ["decline", "cancel"]) {
		c = await connect(["--approval", "ask"], () => ({ action }));
		r = await run(c.client, { command: askCmd(action) });
		check(`${action}: the command did not run`, r.isError === true && /denied/.test(r.content[0].text) &&
		      c.asked.length === 1 && !fs.existsSync(marker(action)), r);
		await c.client.close();
	}

	// Accept with "deny": not run.
	c = await connect(["--approval", "ask"], () => ({ action: "accept", content: { decision: "deny" } }));
	r = await run(c.client, { command: askCmd("acceptdeny") });
	check("accept with deny: not run", r.isError === true && !fs.existsSync(marker("acceptdeny")), r);
	await c.client.close();

	// No answer within --ask-timeout: denied, and the question withdrawn (the handler sees abort).
	let aborted = false;
	c = await connect(["--approval", "ask", "--ask-timeout", "1"], (p, extra) => new Promise((res) => {
		extra.signal.addEventListener("abort", () => { aborted = true; res({ action: "cancel" }); });
	}));
	r = await run(c.client, { command: askCmd("late") });
	check("no answer in time: denied", r.isError === true && !fs.existsSync(marker("late")), r);
	check("the unanswered question is withdrawn", await until(() => aborted), aborted);
	await c.client.close();

	// No elicitation capability: ask denies, nothing asked.
	c = await connect(["--approval", "ask"]);
	r = await run(c.client, { command: askCmd("nocap") });
	check("no capability: ask denies", r.isError === true && !fs.existsSync(marker("nocap")), r);
	await c.client.close();

	// Progress: notifications with the output so far while the command runs.
	c = await connect([]);
	const progress = [];
	r = await run(c.client, { command: "for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.5; done" },
	              { onprogress: (p) => progress.push(p) });
	check("run with a progress token", !r.isError && r.structuredContent?.stdout.includes("tick6"), r);
	check("progress notifications received", progress.length >= 1 &&
	      progress.some((p) => /tick\d/.test(p.message ?? "")), progress);
	check("progress increases", progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress),
	      progress);

	// The runner hs mcp started for the session does not inherit blocked signals (SIGTERM stops it).
	const runners = fs.readdirSync("/proc").filter((q) => /^\d+$/.test(q)).filter((q) => {
		try { const cl = fs.readFileSync(`/proc/${q}/cmdline`, "utf8"); return cl.includes("hs-runner") && cl.includes(tmp); }
		catch { return false; }
	});
	const blocked = runners.map((q) => {
		try { return BigInt("0x" + /SigBlk:\s*([0-9a-f]+)/.exec(fs.readFileSync(`/proc/${q}/status`, "utf8"))[1]); }
		catch { return 0n; }
	});
	check("the session's runner does not have SIGTERM blocked", runners.length > 0 &&
	      blocked.every((b) => (b & (1n << 14n)) === 0n), blocked.map((b) => b.toString(16)));

	// Ping answered while a command runs; notifications/cancelled kills it (its whole tree).
	const ac = new AbortController();
	const pending = run(c.client, { command: "sh -c 'sleep 4242; true' & sleep 4243; wait" },
	                    { signal: ac.signal }).catch((e) => e);
	check("the command runs", await until(() => pgrep("^[s]leep 424[23]$").length === 2),
	      pgrep("[s]leep 424"));
	const pong = await within(c.client.ping(), 30000);
	check("ping answered while a command runs", pong !== "timeout", pong);
	ac.abort("test cancels");
	const e = await pending;
	check("the call is cancelled", e instanceof Error, e);
	check("notifications/cancelled stops the command's tree",
	      await until(() => pgrep("^[s]leep 424[23]$").length === 0), pgrep("[s]leep 424"));
	r = await run(c.client, { command: "echo after" });
	check("the server goes on after a cancel", r.structuredContent?.stdout === "after\n", r);
	await c.client.close();

	// A cancelled call gets no reply at all (raw stream), a ping meanwhile does.
	const p = spawn(HS, ["mcp"], { env, stdio: ["pipe", "pipe", "inherit"] });
	let out = "";
	p.stdout.on("data", (d) => { out += d; });
	const send = (o) => p.stdin.write(JSON.stringify(o) + "\n");
	send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18",
	      capabilities: {}, clientInfo: { name: "t", version: "1" } } });
	send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "run",
	      arguments: { command: "sleep 4244" } } });
	send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "run",
	      arguments: { command: `touch ${marker("queued")}` } } });
	check("raw: the command runs", await until(() => pgrep("^[s]leep 4244$").length === 1), out);
	send({ jsonrpc: "2.0", id: 4, method: "ping" });
	const lines = () => out.split("\n").filter((l) => l).map((l) => JSON.parse(l));
	check("raw: ping answered while a command runs", await until(() => lines().some((x) => x.id === 4)), out);
	send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3 } });
	send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "test" } });
	check("raw: the cancelled command is gone", await until(() => pgrep("^[s]leep 4244$").length === 0), out);
	send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "run", arguments: { command: "echo five" } } });
	check("raw: the next call runs", await until(() => lines().some((x) => x.id === 5)), out);
	p.stdin.end();
	await within(new Promise((res) => p.on("close", res)), 30000);
	check("raw: no reply to the cancelled calls, the queued one not run",
	      !lines().some((x) => x.id === 2 || x.id === 3) && !fs.existsSync(marker("queued")), out);
	check("raw: the call after the cancel ran",
	      lines().find((x) => x.id === 5)?.result?.structuredContent?.stdout === "five\n", out);

	// The client dies (both its pipe ends close) while a command runs: the command is stopped.
	const d = spawn(HS, ["mcp"], { env, stdio: ["pipe", "pipe", "inherit"] });
	const dsend = (o) => d.stdin.write(JSON.stringify(o) + "\n");
	dsend({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "run",
	       arguments: { command: "sleep 4245" } } });
	check("dying client: the command runs", await until(() => pgrep("^[s]leep 4245$").length === 1),
	      pgrep("[s]leep 4245"));
	const exited = new Promise((res) => d.on("exit", res));
	d.stdin.end();
	d.stdout.destroy();
	check("dying client: the command is stopped",
	      await until(() => pgrep("^[s]leep 4245$").length === 0), pgrep("[s]leep 4245"));
	check("dying client: hs mcp exits", await within(exited, 30000) !== "timeout", d.exitCode);

	// --print-config: lines a client takes as they are, naming this hs by its absolute path.
	const self = fs.realpathSync(HS);
	const pc = (...a) => spawnSync(HS, ["mcp", ...a], { env, encoding: "utf8" });
	let o = pc("--backend", "docker", "--print-config", "json");
	let j = null;
	try { j = JSON.parse(o.stdout); } catch { /* checked below */ }
	check("--print-config json", o.status === 0 && j?.mcpServers?.hs?.command === self &&
	      JSON.stringify(j.mcpServers.hs.args) === JSON.stringify(["mcp", "--backend", "docker"]), o);
	o = pc("--print-config", "claude");
	check("--print-config claude", o.status === 0 && o.stdout === `claude mcp add hs -- ${self} mcp\n`, o);
	o = pc("--approval", "ask", "--print-config", "codex");
	check("--print-config codex", o.status === 0 && o.stdout.includes("[mcp_servers.hs]\n") &&
	      o.stdout.includes(`command = ${JSON.stringify(self)}\n`) &&
	      o.stdout.includes('args = ["mcp","--approval","ask"]\n'), o);
	o = pc("--print-config", "hermes");
	let y = null;
	try { y = (await import("yaml")).parse(o.stdout); } catch { /* yaml comes with the Inspector */ }
	check("--print-config hermes", o.status === 0 && (y ? y.mcp_servers?.hs?.command === self &&
	      JSON.stringify(y.mcp_servers.hs.args) === '["mcp"]' : /^mcp_servers:\n {2}hs:\n/m.test(o.stdout)), o);
	o = pc("--print-config", "nope");
	check("--print-config: unknown client is a one-line error", o.status === 125 && o.stdout === "" &&
	      o.stderr.trim().split("\n").length === 1 && /nope/.test(o.stderr), o);
} catch (e) {
	check("no exception", false, String(e && e.stack || e));
}
await until(() => pgrep("^[s]leep 424[2-5]$").length === 0);
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(failed());
