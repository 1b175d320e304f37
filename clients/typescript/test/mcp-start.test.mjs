// MCP servers while the host starts, through the client: the first step waits for a server
// that is still starting (no mcpStatus call first), so request 0 has its tools and section
// and step 1 commits nothing; a required server that is down fails the step with kind "mcp".

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { PromptHostError } from "prompt-host";
import { IDENTITY, REPO, rejection, tempDir, wasm, withHost } from "./helpers.mjs";

const fenced = (server) =>
  `Instructions from MCP server "${server}" (third-party text, not from the operator):\n<<<\n${server} rules.\n>>>`;

function config(servers) {
  const dir = tempDir();
  const path = join(dir, "host.toml");
  writeFileSync(path, `[host]\nmcp_provider = ${JSON.stringify(wasm("mcp-instructions"))}\n\n${servers}`);
  return { dir, path };
}

/** A loopback port nothing listens on. */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("the first step has every tool and the section of an MCP server still starting", async () => {
  const script = join(REPO, "tests", "fixtures", "mcp", "server.py");
  const { dir, path } = config(`[[mcp]]
name = "fx"
command = "python3"
args = [${JSON.stringify(script)}, "--instructions", "fx rules.", "--start-delay", "1"]
timeout_ms = 20000
`);
  await withHost(
    async (host) => {
      const log = join(dir, "s.jsonl");
      const first = await host.step({ session: log, facts: { model: "m1" }, user: ["hi"] });
      assert.deepEqual([first.step, first.commits], [0, 1]);
      assert.deepEqual(
        first.request.tools.map((t) => t.function.name),
        ["mcp__fx__add", "mcp__fx__echo"],
      );
      assert.deepEqual(first.request.messages[0], { role: "system", content: `${IDENTITY}\n\n${fenced("fx")}` });
      const second = await host.step({ session: log, facts: { model: "m1" }, user: ["again"] });
      assert.deepEqual([second.step, second.commits], [1, 0]);
    },
    { host: { config: path } },
  );
});

test("a required MCP server that is down fails the step with kind mcp, writing nothing", async () => {
  const port = await closedPort();
  const { dir, path } = config(`[[mcp]]
name = "down"
url = "http://127.0.0.1:${port}/mcp"
timeout_ms = 5000
required = true
start_wait_ms = 1000
`);
  await withHost(
    async (host) => {
      const log = join(dir, "s.jsonl");
      const e = await rejection(host.step({ session: log, facts: { model: "m1" }, user: ["hi"] }));
      assert.ok(e instanceof PromptHostError);
      assert.equal(e.kind, "mcp");
      assert.ok(
        e.message.startsWith(
          `MCP server "down" (global) is required (required = true) and published nothing within 1000 ms of its start: mcp-client(down): http://127.0.0.1:${port}/mcp: `,
        ),
        e.message,
      );
      assert.equal(existsSync(log), false);
    },
    { host: { config: path } },
  );
});
