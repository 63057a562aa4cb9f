// SPDX-License-Identifier: MIT
// mcp-bench.mjs - a `true` through `hs mcp` (a tools/call of `run`, one round
// trip of the official MCP SDK client) against the same through `hs serve`
// (one exec round trip over its JSON lines), both on the local backend, in
// the same run and the same session shell.  Target: mcp <= 1.2x serve
// (issue 22 item 8).
//
// Usage: HS=/path/to/hs SDK=/path/to/node_modules node bench/mcp-bench.mjs [N]
// (SDK: the node_modules that `npm ci` in tests/mcp installs.)
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const HS = process.env.HS;
const SDK = process.env.SDK;
const N = Number(process.argv[2] || 300);
if (!HS || !SDK) {
	console.error("mcp-bench: set HS (the hs binary) and SDK (tests/mcp/node_modules)");
	process.exit(2);
}
const sdk = (p) => pathToFileURL(path.join(SDK, "@modelcontextprotocol/sdk/dist/esm", p)).href;
let Client, StdioClientTransport;
try {
	({ Client } = await import(sdk("client/index.js")));
	({ StdioClientTransport } = await import(sdk("client/stdio.js")));
} catch (e) {
	console.log("mcp-bench: skipped: the MCP SDK is not installed (npm ci in tests/mcp): " + e.message);
	process.exit(0);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hs-mcpbench."));
fs.mkdirSync(tmp + "/run", { mode: 0o700 });
const env = { ...process.env, XDG_STATE_HOME: tmp + "/state", XDG_CONFIG_HOME: tmp + "/config",
              XDG_CACHE_HOME: tmp + "/cache", XDG_RUNTIME_DIR: tmp + "/run" };

function stats(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return { median: s[Math.floor(s.length / 2)], p90: s[Math.max(0, Math.ceil(s.length * 0.9) - 1)] };
}

async function benchMcp() {
	const transport = new StdioClientTransport({ command: HS, args: ["mcp", "--backend", "local"], env,
	                                             stderr: "ignore" });
	const client = new Client({ name: "hs-bench", version: "1.0.0" });
	await client.connect(transport);
	const times = [];
	for (let i = 0; i < N + 20; i++) {
		const t0 = process.hrtime.bigint();
		const r = await client.callTool({ name: "run", arguments: { command: "true" } });
		const dt = Number(process.hrtime.bigint() - t0) / 1e6;
		if (r.isError || r.structuredContent?.exit_code !== 0)
			throw new Error("mcp run failed: " + JSON.stringify(r));
		if (i >= 20)
			times.push(dt);
	}
	await client.close();
	return times;
}

// hs serve: one session, N execs of `true`, each timed from request to reply.
async function benchServe() {
	const p = spawn(HS, ["serve"], { env, stdio: ["pipe", "pipe", "ignore"] });
	let buf = "";
	const waiting = new Map();
	p.stdout.on("data", (d) => {
		buf += d;
		let nl;
		while ((nl = buf.indexOf("\n")) >= 0) {
			const line = buf.slice(0, nl);
			buf = buf.slice(nl + 1);
			const o = JSON.parse(line);
			if (o.event === undefined && waiting.has(o.id)) {
				waiting.get(o.id)(o);
				waiting.delete(o.id);
			}
		}
	});
	let id = 0;
	const req = (o) => new Promise((resolve) => {
		o.id = ++id;
		waiting.set(o.id, resolve);
		p.stdin.write(JSON.stringify(o) + "\n");
	});
	const op = await req({ op: "open", session: "b", backend: "local" });
	if (!op.ok)
		throw new Error("serve open failed: " + JSON.stringify(op));
	const times = [];
	for (let i = 0; i < N + 20; i++) {
		const t0 = process.hrtime.bigint();
		const r = await req({ op: "exec", session: "b", command: "true" });
		const dt = Number(process.hrtime.bigint() - t0) / 1e6;
		if (!r.ok || r.exit_code !== 0)
			throw new Error("serve exec failed: " + JSON.stringify(r));
		if (i >= 20)
			times.push(dt);
	}
	await req({ op: "close", session: "b" });
	p.stdin.end();
	await new Promise((r) => p.on("close", r));
	return times;
}

try {
	// Alternated, so that a noisy moment weighs on both.
	const serveA = await benchServe(), mcpA = await benchMcp();
	const serveB = await benchServe(), mcpB = await benchMcp();
	const s = stats([...serveA, ...serveB]), m = stats([...mcpA, ...mcpB]);
	const ratio = m.median / s.median;
	console.log(`hs serve exec true:  median ${s.median.toFixed(2)} ms  p90 ${s.p90.toFixed(2)} ms  (n=${2 * N})`);
	console.log(`hs mcp run true:     median ${m.median.toFixed(2)} ms  p90 ${m.p90.toFixed(2)} ms  (n=${2 * N}, SDK client)`);
	console.log(`mcp / serve: ${ratio.toFixed(2)}x (target <= 1.2x) ${ratio <= 1.2 ? "met" : "MISSED"}`);
	if (process.env.HS_BENCH_TSV)
		fs.appendFileSync(process.env.HS_BENCH_TSV,
		                  `hs mcp run true\t${m.median.toFixed(3)}\ths serve exec true\t${s.median.toFixed(3)}\n`);
} finally {
	fs.rmSync(tmp, { recursive: true, force: true });
}
