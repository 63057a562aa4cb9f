// SPDX-License-Identifier: MIT
// hs mcp --backend docker driven by the official MCP SDK client: a run is in
// the container (not on the host), the session shell keeps its state across
// runs, and closing the client leaves no container behind.  DOCKER_HOST (a
// private dockerd) and HS_MCP_IMAGE come from tests/mcp/docker.test.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { HS, check, failed, scratch, sleep } from "./lib.mjs";

const IMAGE = process.env.HS_MCP_IMAGE;
const { tmp, env } = scratch("hs-mcpd.");
const containers = () => spawnSync("docker", ["ps", "-aq"], { env, encoding: "utf8" }).stdout.trim();

try {
	check("no container before", containers() === "", containers());
	const transport = new StdioClientTransport({ command: HS,
		args: ["mcp", "--backend", "docker", "--image", IMAGE], env, stderr: "inherit" });
	const client = new Client({ name: "hs-test-docker", version: "1.0.0" });
	await client.connect(transport);
	const run = (args) => client.callTool({ name: "run", arguments: args });

	// A file only the host has, and one only a container has.
	const marker = `${tmp}/host-only`;
	fs.writeFileSync(marker, "x");
	let r = await run({ command: `test -e /.dockerenv && echo container; test -e ${marker} || echo no-host-file` });
	check("run is inside the container", !r.isError && r.structuredContent?.exit_code === 0 &&
	      r.structuredContent?.stdout === "container\nno-host-file\n", r);
	check("a container runs while the session is open", containers() !== "", containers());

	r = await run({ command: "mkdir -p /tmp/w && cd /tmp/w && X=kept" });
	r = await run({ command: 'echo "$PWD $X"' });
	check("state across runs in the container", r.structuredContent?.stdout === "/tmp/w kept\n", r);

	r = await run({ command: "echo err >&2; exit 7" });
	check("exit code and stderr", !r.isError && r.structuredContent?.exit_code === 7 &&
	      r.structuredContent?.stderr === "err\n", r);

	r = await client.callTool({ name: "session_list", arguments: {} });
	const s = (r.structuredContent?.sessions ?? [])[0];
	check("session_list names the docker backend", s?.backend === "docker", r);

	await client.close();
	let left = containers();
	for (let i = 0; i < 300 && left !== ""; i++) {
		await sleep(100);
		left = containers();
	}
	check("no container left once the client closed", left === "", left);
} catch (e) {
	check("no exception", false, String(e && e.stack || e));
} finally {
	fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed());
