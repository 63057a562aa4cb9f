// SPDX-License-Identifier: MIT
// hs mcp's job and file tools driven by the official MCP TypeScript SDK client:
// run background + job_list/job_output/job_kill, a job the session shell was
// left with (sleep &), write_file/read_file with binary and UTF-8 data, the
// read bound, a write the approval gate denies, and the hand-off of a long
// run (--handoff-after) to a job.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { HS, check, failed, scratch, sleep } from "./lib.mjs";

const { tmp, env: base } = scratch("hs-mcpjobs.");
fs.mkdirSync(tmp + "/home");
const env = { ...base, HOME: tmp + "/home" };
// Numbers no other test uses (pids differ): the processes of this test are found by them.
const tag = 7000000 + process.pid * 3;

const clients = [];
async function connect(args, extra = {}) {
	const transport = new StdioClientTransport({ command: HS, args: ["mcp", ...args],
	                                             env: { ...env, ...extra }, stderr: "inherit" });
	const client = new Client({ name: "hs-test", version: "1.0.0" });
	await client.connect(transport);
	clients.push(client);
	return client;
}

const call = (client, name, args) => client.callTool({ name, arguments: args });
// Processes whose command line has "sleep N" (pattern with the [x] trick, so
// it matches no shell that merely names the pattern).
const running = (n) => spawnSync("pgrep", ["-f", `[s]leep ${n}`]).status === 0;

// Poll f (async) until it returns a truthy value, 30 s at most; the last value.
async function poll(f) {
	let v = await f();
	for (let i = 0; i < 300 && !v; i++) {
		await sleep(100);
		v = await f();
	}
	return v;
}

try {
	const client = await connect([]);
	const { tools } = await client.listTools();
	for (const n of ["job_list", "job_output", "job_kill", "read_file", "write_file"]) {
		const t = tools.find((x) => x.name === n);
		check(`tool ${n} listed with schemas and annotations`, t &&
		      t.inputSchema?.type === "object" && t.outputSchema?.type === "object" &&
		      typeof t.annotations?.destructiveHint === "boolean" && t.description.length > 40, t);
	}

	// A background run: its id at once, its output by offset, killed for real.
	let r = await call(client, "run", { command: `echo 0123456789; echo abcdefghij >&2; echo second; sleep ${tag}`,
	                                    background: true });
	const job = r.structuredContent?.job;
	check("background run returns a job", !r.isError && /^j\d+$/.test(job ?? "") &&
	      r.structuredContent?.running === true, r);
	const out = (args) => call(client, "job_output", { job, ...args });
	r = await poll(async () => {
		const o = await out({});
		return o.structuredContent?.total_bytes >= 18 ? o : null;
	});
	check("job_output reaches all output", r?.structuredContent?.data === "0123456789\nsecond\n" &&
	      r.structuredContent.running === true && r.structuredContent.encoding === "utf8", r);
	r = await out({ offset: 3, max_bytes: 4 });
	check("job_output by offset, bounded", r.structuredContent?.data === "3456" &&
	      r.structuredContent?.offset === 3 && r.structuredContent?.next_offset === 7 &&
	      r.structuredContent?.total_bytes === 18, r);
	r = await out({ offset: 7 });
	check("job_output from next_offset", r.structuredContent?.data === "789\nsecond\n" &&
	      r.structuredContent?.next_offset === 18, r);
	r = await out({ stream: "stderr" });
	check("job_output stderr", r.structuredContent?.data === "abcdefghij\n", r);
	r = await call(client, "job_list", {});
	const listed = r.structuredContent?.jobs?.find((j) => j.job === job);
	check("job_list shows the background job", listed?.kind === "background" && listed.running === true &&
	      listed.command.includes(`sleep ${tag}`), r);
	check("the job's process runs", await poll(() => running(tag)), tag);
	r = await call(client, "job_kill", { job });
	check("job_kill", !r.isError && r.structuredContent?.killed === true, r);
	check("the job's process is gone", await poll(() => !running(tag)), tag);
	r = await poll(async () => {
		const o = await out({});
		return o.structuredContent?.running === false ? o : null;
	});
	check("killed job ends", r?.structuredContent?.exit_code !== 0, r);
	r = await call(client, "job_output", { job: "j999" });
	check("unknown job is isError", r.isError === true && /j999/.test(r.content[0].text), r);

	// What a command left running in the session shell: an "s" job.
	r = await call(client, "run", { command: `sleep ${tag + 1} & echo started` });
	check("run leaves a job", r.structuredContent?.stdout === "started\n" &&
	      r.structuredContent?.jobs_left === 1, r);
	const left = r.structuredContent?.job;
	r = await call(client, "job_list", {});
	const sj = r.structuredContent?.jobs?.find((j) => j.kind === "shell" && j.running);
	check("job_list shows the shell job", /^s\d+$/.test(sj?.job ?? "") && sj.job === left &&
	      sj.command.includes(`sleep ${tag + 1}`), r);
	check("the shell job's process runs", await poll(() => running(tag + 1)), tag + 1);
	r = await call(client, "job_output", { job: sj?.job });
	check("job_output of a shell job", !r.isError && r.structuredContent?.total_bytes === 0, r);
	r = await call(client, "job_kill", { job: sj?.job });
	check("job_kill of the shell job", !r.isError && r.structuredContent?.killed === true, r);
	check("the shell job's process is gone", await poll(() => !running(tag + 1)), tag + 1);

	// Files: every byte value, and UTF-8 text, through the runner.
	const bin = Buffer.from([...Array(256).keys()]);
	r = await call(client, "write_file", { path: `${tmp}/bin`, content: bin.toString("base64"),
	                                       encoding: "base64" });
	check("write_file binary", !r.isError && r.structuredContent?.size === 256, r);
	check("the bytes on disk", fs.readFileSync(`${tmp}/bin`).equals(bin), fs.readFileSync(`${tmp}/bin`));
	r = await call(client, "read_file", { path: `${tmp}/bin` });
	check("read_file binary is base64", r.structuredContent?.encoding === "base64" &&
	      Buffer.from(r.structuredContent.content, "base64").equals(bin), r);
	const text = "héllo wörld ✓ — ok\nline 2\n";
	r = await call(client, "write_file", { path: `${tmp}/text`, content: text, mode: 0o600 });
	check("write_file text", !r.isError && r.structuredContent?.size === Buffer.byteLength(text), r);
	check("the text on disk, mode 0600", fs.readFileSync(`${tmp}/text`, "utf8") === text &&
	      (fs.statSync(`${tmp}/text`).mode & 0o777) === 0o600, fs.statSync(`${tmp}/text`).mode);
	r = await call(client, "read_file", { path: `${tmp}/text` });
	check("read_file text is utf8", r.structuredContent?.encoding === "utf8" &&
	      r.structuredContent?.content === text, r);
	fs.writeFileSync(`${tmp}/big`, Buffer.alloc(2 << 20, 120));
	r = await call(client, "read_file", { path: `${tmp}/big` });
	check("a read over the bound is isError", r.isError === true &&
	      /larger than 1048576/.test(r.content[0].text) && !r.content[0].text.includes("\n"), r);
	r = await call(client, "read_file", { path: "relative" });
	check("a relative path is isError", r.isError === true, r);
	await client.close();

	// The approval gate decides writes like serve's put_file: deny mode refuses
	// a write to a shell startup file; approve mode lets the same write through.
	const rc = `${tmp}/home/.bashrc`;
	const denied = await connect(["--approval", "deny"]);
	r = await call(denied, "write_file", { path: rc, content: "echo pwned\n" });
	check("write_file denied by the gate", r.isError === true && /deny|denied|approv/i.test(r.content[0].text) &&
	      !fs.existsSync(rc), r);
	r = await call(denied, "write_file", { path: `${tmp}/plain`, content: "x" });
	check("an ordinary write goes through in deny mode", !r.isError && fs.existsSync(`${tmp}/plain`), r);
	await denied.close();
	const approve = await connect(["--approval", "approve"]);
	r = await call(approve, "write_file", { path: rc, content: "# ok\n" });
	check("the same write in approve mode", !r.isError && fs.readFileSync(rc, "utf8") === "# ok\n", r);
	// hs's own files are refused even in approve mode, like serve's put_file.
	const allow = `${tmp}/config/hs/allow.list`;
	fs.mkdirSync(`${tmp}/config/hs`, { recursive: true });
	r = await call(approve, "write_file", { path: allow, content: "x\ttouch /x\n" });
	check("write_file onto hs's allow list is refused", r.isError === true &&
	      /policy/.test(r.content[0].text) && !fs.existsSync(allow), r);
	await approve.close();

	// Hand-off: a run still going after 2 s comes back as a job; the command goes on.
	// It waits for a file made only after the hand-off, so it cannot end before.
	const h = await connect(["--handoff-after", "2"]);
	const ended = `${tmp}/ended`, go = `${tmp}/go`;
	const wait = (f) => `while [ ! -e ${f} ]; do sleep 0.1; done`;
	r = await call(h, "run", { command: `echo begin; ${wait(go)}; touch ${ended}; echo end; exit 7` });
	const hj = r.structuredContent?.job;
	check("a long run is handed off", !r.isError && r.structuredContent?.running === true &&
	      /^j\d+$/.test(hj ?? "") && r.structuredContent?.exit_code === undefined, r);
	check("handed off before the command ended", !fs.existsSync(ended), r);
	r = await call(h, "run", { command: "echo busy" });
	check("the session refuses another run while it goes on", r.isError === true &&
	      r.content[0].text.includes(hj) && /busy/.test(r.content[0].text), r);
	fs.writeFileSync(go, "");
	r = await poll(async () => {
		const o = await call(h, "job_output", { job: hj });
		return o.structuredContent?.running === false ? o : null;
	});
	check("job_output shows the end of the handed-off run", r?.structuredContent?.data === "begin\nend\n" &&
	      r.structuredContent.exit_code === 7 && fs.existsSync(ended), r);
	r = await call(h, "run", { command: "echo after" });
	check("the session runs again afterwards", !r.isError && r.structuredContent?.stdout === "after\n", r);
	r = await call(h, "run", { command: `sleep ${tag + 2}` });
	const hk = r.structuredContent?.job;
	check("a second hand-off", r.structuredContent?.running === true && hk && hk !== hj, r);
	r = await call(h, "job_list", {});
	check("job_list shows the handed-off run", r.structuredContent?.jobs?.some((j) => j.job === hk &&
	      j.kind === "handed_off" && j.running), r);
	r = await call(h, "job_kill", { job: hk });
	check("job_kill of a handed-off run", r.structuredContent?.killed === true, r);
	check("its process is gone", await poll(() => !running(tag + 2)), tag + 2);
	r = await poll(async () => {
		const o = await call(h, "run", { command: "echo again" });
		return o.isError ? null : o;
	});
	check("the session runs again after the kill", r?.structuredContent?.stdout === "again\n", r);
	// A handed-off run still going when the client leaves is stopped with the session.
	r = await call(h, "run", { command: `sleep ${tag + 3}` });
	check("a third hand-off", r.structuredContent?.running === true &&
	      await poll(() => running(tag + 3)), r);
	await h.close();
	check("closing the client stops a handed-off run", await poll(() => !running(tag + 3)), tag + 3);

	// A handed-off run in a persistent session outlives its connection; the next
	// connection that opens the session takes it over as a job and can stop it.
	const keep = `mcpjobs-keep-${process.pid}`;
	const k1 = await connect(["--handoff-after", "2"]);
	r = await call(k1, "session_open", { session: keep, persistent: true });
	check("persistent session_open", !r.isError, r);
	r = await call(k1, "run", { session: keep, command: `sleep ${tag + 4}` });
	check("handed off in the persistent session", r.structuredContent?.running === true, r);
	await k1.close();
	check("it goes on after the client left", await poll(() => running(tag + 4)), tag + 4);
	const k2 = await connect([]);
	r = await call(k2, "session_open", { session: keep, persistent: true });
	const adopted = r.structuredContent?.adopted ?? [];
	check("the next connection adopts it", adopted.length === 1, r);
	r = await call(k2, "job_list", { session: keep });
	check("job_list shows the adopted job running", r.structuredContent?.jobs?.some((j) =>
	      j.job === adopted[0] && j.running), r);
	r = await call(k2, "job_kill", { session: keep, job: adopted[0] });
	check("job_kill of the adopted job", r.structuredContent?.killed === true, r);
	check("the adopted job's process is gone", await poll(() => !running(tag + 4)), tag + 4);
	r = await call(k2, "run", { session: keep, command: "echo kept" });
	check("the kept session runs again", r.structuredContent?.stdout === "kept\n", r);
	r = await call(k2, "session_close", { session: keep });
	await k2.close();
	spawnSync(HS, ["session", "close", keep], { env });

	// A secret of hs's environment stays redacted in what a handed-off run prints later.
	const sec = await connect(["--handoff-after", "2"], { FOO_API_TOKEN: "sekrit-value-4711-xyz" });
	const say = "printf 'sek%s\\n' rit-value-4711-xyz";
	r = await call(sec, "run", { command: `${say}; ${wait(go + "2")}; ${say}` });
	const sjob = r.structuredContent?.job;
	check("the secret run is handed off", r.structuredContent?.running === true && sjob, r);
	fs.writeFileSync(go + "2", "");
	r = await poll(async () => {
		const o = await call(sec, "job_output", { job: sjob });
		return o.structuredContent?.running === false ? o : null;
	});
	check("the secret is redacted before and after the hand-off",
	      r?.structuredContent?.data === "[REDACTED]\n[REDACTED]\n", r);
	await sec.close();

	// --handoff-after 0: never handed off.
	const never = await connect(["--handoff-after", "0"]);
	r = await call(never, "run", { command: "sleep 3; echo done" });
	check("--handoff-after 0 waits for the end", r.structuredContent?.stdout === "done\n" &&
	      r.structuredContent?.running === false, r);
	await never.close();
} catch (e) {
	check("no exception", false, String(e && e.stack || e));
}
for (const c of clients)
	await c.close().catch(() => {});
for (const n of [tag, tag + 1, tag + 2, tag + 3, tag + 4])
	await poll(() => !running(n));
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(failed());
