// SPDX-License-Identifier: MIT
// hs mcp's terminal tools driven by the official MCP TypeScript SDK client:
// a pty job of `python3 -i -q` answering 42 to job_write, `rm -rf /` typed
// into a bash pty refused by the safety policy (and not delivered),
// job_resize seen by `stty size`, and job_output's screen of a job that
// prints escape sequences; a write that needs approval asked by elicitation
// (declined: not delivered; accepted: delivered).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import fs from "node:fs";
import { HS, check, failed, scratch, sleep } from "./lib.mjs";

const { tmp, env: base } = scratch("hs-mcppty.");
fs.mkdirSync(tmp + "/home");
const env = { ...base, HOME: tmp + "/home" };
delete env.HS_CONFIG;

const call = (client, name, args) => client.callTool({ name, arguments: args });

// Poll f (async) until it returns a truthy value, 30 s at most; the last value.
async function poll(f) {
	let v = await f();
	for (let i = 0; i < 150 && !v; i++) {
		await sleep(200);
		v = await f();
	}
	return v;
}

// The job's whole terminal stream so far.
async function stream(client, job) {
	const r = await call(client, "job_output", { job });
	return r.structuredContent?.data ?? "";
}
// Poll the stream until re matches; the stream (matched or not).
async function waitOut(client, job, re) {
	let last = "";
	const ok = await poll(async () => re.test(last = await stream(client, job)));
	return { ok, out: last };
}

let client, asker;
try {
	const transport = new StdioClientTransport({ command: HS, args: ["mcp", "--backend", "local"],
	                                             env, stderr: "inherit" });
	client = new Client({ name: "hs-test", version: "1.0.0" });
	await client.connect(transport);
	const { tools } = await client.listTools();
	for (const n of ["job_write", "job_resize"]) {
		const t = tools.find((x) => x.name === n);
		check(`tool ${n} listed with schemas`, t && t.inputSchema?.properties?.job &&
		      t.outputSchema?.type === "object", t);
	}
	const run = tools.find((x) => x.name === "run");
	check("run takes pty (boolean or object) and stdin_open",
	      JSON.stringify(run?.inputSchema?.properties?.pty?.type) === '["boolean","object"]' &&
	      run?.inputSchema?.properties?.stdin_open?.type === "boolean", run?.inputSchema);

	// python3 -i on a terminal: typed code runs.
	let r = await call(client, "run", { command: "python3 -i -q", pty: true });
	const py = r.structuredContent?.job;
	check("run with pty starts a job", !r.isError && /^j\d+$/.test(py ?? "") &&
	      r.structuredContent?.running === true, r);
	let w = await waitOut(client, py, />>> $/);
	check("python3 -i prompts", w.ok, w.out);
	r = await call(client, "job_list", {});
	const listed = r.structuredContent?.jobs?.find((x) => x.job === py);
	check("job_list shows it on a pty", listed?.pty === true && listed?.running === true, r);
	r = await call(client, "job_write", { job: py, text: "print(6*7)\n" });
	check("job_write print(6*7)", !r.isError && r.structuredContent?.written === 11, r);
	w = await waitOut(client, py, /\r?\n42\r?\n/);
	check("job_output shows 42", w.ok, w.out);
	r = await call(client, "job_kill", { job: py });
	check("the python job is killed", r.structuredContent?.killed === true, r);
	r = await poll(async () => {
		const o = await call(client, "job_output", { job: py });
		return o.structuredContent?.running === false ? o : null;
	});
	check("... it ends, cancelled", r?.structuredContent?.cancelled === true, r);

	// bash on a terminal: a hardline command typed in is refused, not delivered.
	r = await call(client, "run", { command: "bash --norc --noprofile", pty: { rows: 24, cols: 80 } });
	const sh = r.structuredContent?.job;
	check("bash starts as a pty job", !r.isError && /^j\d+$/.test(sh ?? ""), r);
	w = await waitOut(client, sh, /[$#] $/);
	check("bash prompts", w.ok, { out: w.out, list: (await call(client, "job_list", {})).structuredContent });
	r = await call(client, "job_write", { job: sh, text: "rm -rf /\n" });
	const why = r.content?.[0]?.text ?? "";
	check("job_write 'rm -rf /' into bash is a tool error naming the rules",
	      r.isError === true && /^job_write refused: .*fs\.rm-root/.test(why), r);
	await call(client, "job_write", { job: sh, text: "echo after-deny-$((2*3))\n" });
	w = await waitOut(client, sh, /after-deny-6\r?\n/);
	check("... and nothing of it reached the terminal", w.ok && !w.out.includes("rm -rf"), w.out);

	// job_resize, seen by stty size.
	r = await call(client, "job_resize", { job: sh, rows: 30, cols: 100 });
	check("job_resize", !r.isError && r.structuredContent?.rows === 30 &&
	      r.structuredContent?.cols === 100, r);
	await call(client, "job_write", { job: sh, text: "stty size\n" });
	w = await waitOut(client, sh, /\b30 100\r?\n/);
	check("after job_resize stty size is 30 100", w.ok, w.out);
	r = await call(client, "job_resize", { job: sh, rows: 0, cols: 100 });
	check("job_resize refuses a size out of range", r.isError === true, r);
	await call(client, "job_kill", { job: sh });

	// A job printing escape sequences: the screen shows where they put the text.
	r = await call(client, "run", { command: "printf '\\033[2J\\033[3;5Hhello\\033[1;1Htop\\033[5;10H'; sleep 600",
	                                pty: { rows: 6, cols: 20 } });
	const esc = r.structuredContent?.job;
	await waitOut(client, esc, /hello/);
	const shot = await poll(async () => {
		const o = await call(client, "job_output", { job: esc, screen: true });
		const sc = o.structuredContent?.screen;
		return sc?.rows?.[2] === "    hello" && sc?.cursor?.col === 9 ? o : null;
	});
	const sc = shot?.structuredContent?.screen;
	check("job_output screen: rows rendered at the job's size with the cursor",
	      sc?.rows?.[0] === "top" && sc?.rows?.[2] === "    hello" && sc?.rows?.length === 6 &&
	      sc?.size?.rows === 6 && sc?.size?.cols === 20 && sc?.cursor?.row === 4 &&
	      sc?.alternate === false, shot);
	check("... and the rows as text content", shot?.content?.some((c) => c.type === "text" &&
	      c.text.startsWith("top\n\n    hello\n")), shot?.content);
	r = await call(client, "job_output", { job: esc, screen: true, rows: 3, cols: 12 });
	check("job_output screen at an asked size", r.structuredContent?.screen?.size?.rows === 3 &&
	      r.structuredContent?.screen?.size?.cols === 12, r);
	r = await call(client, "job_output", { job: esc, screen: true, cols: 1 });
	check("job_output screen refuses cols 1", r.isError === true, r);
	await call(client, "job_kill", { job: esc });

	// A prompt: job_list says the job waits for input.
	r = await call(client, "run", { command: "read -p 'name? ' x; echo got-$x", pty: true });
	const rd = r.structuredContent?.job;
	const waiting = await poll(async () => {
		const l = await call(client, "job_list", {});
		return l.structuredContent?.jobs?.find((x) => x.job === rd && x.waiting_input === true);
	});
	check("job_list shows waiting_input while read -p waits", waiting?.running === true, waiting);
	await call(client, "job_write", { job: rd, text: "ann\n" });
	w = await waitOut(client, rd, /got-ann\r?\n/);
	check("... and the answer is read", w.ok, w.out);

	// stdin_open without a terminal: a pipe, closed by eof.
	r = await call(client, "run", { command: "cat; echo cat-ended", stdin_open: true });
	const cat = r.structuredContent?.job;
	r = await call(client, "job_write", { job: cat, text: "piped-line\n", eof: true });
	check("job_write with eof to a stdin_open job", !r.isError, r);
	w = await waitOut(client, cat, /piped-line\ncat-ended\n/);
	check("... cat echoes it and ends", w.ok, w.out);

	// Recoverable output: a run cut to head and tail names its whole output,
	// and output_read reads its middle back exactly.
	const N = 300000;
	let text = "";
	for (let i = 1; i <= N; i++)
		text += i + "\n";
	r = await call(client, "run", { command: `seq 1 ${N}` });
	const o = r.structuredContent;
	check("run of a long output: truncated, with stdout_bytes and output_id",
	      o?.truncated === true && o?.stdout_bytes === text.length && typeof o?.output_id === "string", o);
	const mid = Math.floor(text.length / 2);
	r = await call(client, "output_read", { output_id: o?.output_id, offset: mid, length: 5000 });
	check("output_read returns the middle byte-exact", !r.isError &&
	      r.structuredContent?.data === text.slice(mid, mid + 5000) &&
	      r.structuredContent?.next_offset === mid + 5000, r.structuredContent ?? r);
	r = await call(client, "output_read", { output_id: "12345", offset: 0 });
	check("output_read of an unknown output is a tool error", r.isError === true, r);

	// Ask mode: a line that needs approval is asked by elicitation, like a run.
	const answers = ["deny", "once"], asked = [];
	asker = new Client({ name: "hs-test-ask", version: "1.0.0" }, { capabilities: { elicitation: {} } });
	asker.setRequestHandler(ElicitRequestSchema, async (req) => {
		asked.push(req.params);
		return { action: "accept", content: { decision: answers.shift() ?? "deny" } };
	});
	await asker.connect(new StdioClientTransport({ command: HS, env, stderr: "inherit",
	                                               args: ["mcp", "--backend", "local", "--approval", "ask"] }));
	r = await call(asker, "run", { command: "bash --norc --noprofile", pty: true });
	const ab = r.structuredContent?.job;
	w = await waitOut(asker, ab, /[$#] $/);
	check("ask mode: bash prompts", w.ok, w.out);
	const mark = (n) => `${tmp}/asked-${n}`;
	const line = (n) => `chmod -R 777 /etc/hs-mcp-pty-none 2>/dev/null; touch ${mark(n)}\n`;
	r = await call(asker, "job_write", { job: ab, text: line("declined") });
	check("a write that needs approval is asked by elicitation, naming the rule",
	      asked.length === 1 && asked[0].message.includes("fs.chmod-system"), asked);
	check("... declined, it is a tool error", r.isError === true && /refused/.test(r.content?.[0]?.text), r);
	r = await call(asker, "job_write", { job: ab, text: line("accepted") });
	check("... accepted once, it is delivered", !r.isError && asked.length === 2, r);
	await call(asker, "job_write", { job: ab, text: "echo after-$((40+2))\n" });
	w = await waitOut(asker, ab, /after-42\r?\n/);
	check("... the accepted line ran and the declined one did not",
	      w.ok && fs.existsSync(mark("accepted")) && !fs.existsSync(mark("declined")), w.out);
	await call(asker, "job_kill", { job: ab });
} catch (e) {
	check("no exception", false, String(e?.stack ?? e));
} finally {
	await client?.close().catch(() => {});
	await asker?.close().catch(() => {});
	fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed());
