// Plugins from an OCI registry through the TypeScript client: a real registry (CNCF
// distribution, Debian's docker-registry, installed by .ci/run) on loopback, a plugin
// pushed with `prompt-host push`, loaded with loadPlugin({ wasm: "oci://…" }); a pin that
// is not the component and a missing tag are refused with kind "oci" naming the reference.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { join } from "node:path";

import { PromptHostError } from "prompt-host";
import { IDENTITY, binary, rejection, tempDir, wasm, withHost } from "./helpers.mjs";

const REGISTRY = ["/usr/bin/docker-registry", "/usr/local/bin/docker-registry"].find((p) => existsSync(p));

async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

async function startRegistry(dir) {
  const port = await freePort();
  const config = join(dir, "registry.yml");
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, "data")}\nhttp:\n  addr: 127.0.0.1:${port}\n  secret: prompt-host-tests\n`,
  );
  const child = spawn(REGISTRY, ["serve", config], { stdio: "ignore" });
  const deadline = Date.now() + 30000;
  for (;;) {
    const up = await new Promise((r) => {
      const s = connect(port, "127.0.0.1", () => { s.destroy(); r(true); });
      s.on("error", () => r(false));
    });
    if (up) break;
    assert.ok(Date.now() < deadline, "the registry did not listen");
    await new Promise((r) => setTimeout(r, 50));
  }
  return { address: `127.0.0.1:${port}`, stop: () => child.kill("SIGKILL") };
}

test(
  "an oci:// plugin loads by tag, and a wrong pin and a missing tag are refused naming it",
  { skip: REGISTRY ? false : "needs CNCF distribution (apt-get install docker-registry; .ci/run installs it)" },
  async () => {
    const dir = tempDir();
    const registry = await startRegistry(dir);
    try {
      const reference = `oci://${registry.address}/plugins/greeter:1.0`;
      mkdirSync(join(dir, "home"));
      const pushed = JSON.parse(
        execFileSync(binary(), ["push", wasm("declare"), reference, "--plain-http", registry.address], {
          env: { PATH: "/usr/bin:/bin", HOME: join(dir, "home"), PROMPT_HOST_CACHE_DIR: join(dir, "cache") },
        }).toString(),
      );
      const config = join(dir, "host.toml");
      writeFileSync(config, `[host.registry]\nplain_http = ["${registry.address}"]\n`);
      await withHost(
        async (host) => {
          const greeting = { sections: [{ name: "greeting", order: 10, text: "Hello from the registry." }] };
          await host.loadPlugin({ name: "greeter", wasm: reference, config: greeting });
          assert.equal((await host.render()).prompt, `${IDENTITY}\n\nHello from the registry.`);
          const wrong = await rejection(host.loadPlugin({ name: "wrong", wasm: reference, sha256: "0".repeat(64) }));
          assert.ok(wrong instanceof PromptHostError);
          assert.equal(wrong.kind, "oci");
          assert.equal(wrong.plugin, "wrong");
          assert.ok(
            wrong.message.includes(`${reference} resolves to component ${pushed.component}, but its sha256 pins ${"0".repeat(64)}; refused`),
            wrong.message,
          );
          const missing = `oci://${registry.address}/plugins/greeter:nope`;
          const none = await rejection(host.loadPlugin({ name: "missing", wasm: missing }));
          assert.equal(none.kind, "oci");
          assert.ok(none.message.includes(`${missing}: the registry has no tag "nope" in plugins/greeter`), none.message);
        },
        { host: { config } },
      );
    } finally {
      registry.stop();
    }
  },
);
