// A step through the installed package, from a directory that holds nothing but it: the
// check that the packed tarballs work as a user gets them (`.ci/run` installs the two that
// `npm run pack:bundled` packs, the client and its platform package, into an empty directory,
// copies this file there and runs it with a PATH that has neither prompt-host nor a Rust
// toolchain).
//
//   node installed-step.mjs
//
// The binary is the platform package's, which the client names as its optional dependency;
// the client carries none. Every plugin comes from the platform package, by name: the
// host.toml's persona and MCP instruction provider, the `declare` plugin loaded at run time,
// and each other shipped plugin loaded once. Exits non-zero, saying why, if anything differs
// from what a step must give.

import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { PromptHost, bundledBinary, findBinary, platformPackage } from "prompt-host";

// What scripts/package ships (SHIPPED_PLUGINS there).
const SHIPPED = [
  "clock",
  "declare",
  "git-context",
  "mcp-instructions",
  "persona",
  "project-instructions",
  "redactor",
  "runtime-policy",
];

if (process.env.PROMPT_HOST_BIN) throw new Error("unset PROMPT_HOST_BIN: the package's own binary is what is checked");
if (process.env.PROMPT_HOST_PLUGIN_PATH) throw new Error("unset PROMPT_HOST_PLUGIN_PATH: the package's own plugins are what is checked");
const require = createRequire(import.meta.url);
// CommonJS code requires the same module (require(esm), which the package's `engines` call for).
if (require("prompt-host").PromptHost !== PromptHost) throw new Error("require(\"prompt-host\") is not the module import gives");
// The client names the platform package at its own version and carries no binary itself.
const client = dirname(dirname(require.resolve("prompt-host"))); // node_modules/prompt-host (dist/index.js)
const manifest = JSON.parse(readFileSync(join(client, "package.json"), "utf8"));
const platform = platformPackage();
if (manifest.optionalDependencies?.[platform] !== manifest.version) {
  throw new Error(`prompt-host ${manifest.version} names ${JSON.stringify(manifest.optionalDependencies ?? {})} as optional dependencies, not ${platform}@${manifest.version}`);
}
if (existsSync(join(client, "bin"))) throw new Error(`${client} carries bin/: the binary belongs in ${platform}`);
const bundled = bundledBinary();
if (!bundled || findBinary() !== bundled) throw new Error(`${platform} is not installed, or carries no binary`);
const from = JSON.parse(readFileSync(join(dirname(bundled), "package.json"), "utf8"));
if (from.name !== platform || from.version !== manifest.version) {
  throw new Error(`${bundled} is in ${from.name}@${from.version}, not ${platform}@${manifest.version}`);
}
const shipped = readdirSync(join(dirname(bundled), "plugins"))
  .filter((f) => f.endsWith(".wasm"))
  .map((f) => f.slice(0, -".wasm".length))
  .sort();
if (JSON.stringify(shipped) !== JSON.stringify(SHIPPED)) {
  throw new Error(`the package ships the plugins ${shipped.join(", ")}, not ${SHIPPED.join(", ")}`);
}

const dir = mkdtempSync(join(tmpdir(), "prompt-host-installed-"));
const config = join(dir, "host.toml");
writeFileSync(
  config,
  `[host]
mcp_provider = "mcp-instructions"

[[scope]]
name = "agent:1"

[[plugin]]
name = "persona"
wasm = "persona"
scope = "agent:1"
config = { text = "You review the code in {{cwd}}." }
`,
);
const host = new PromptHost({ config, env: { PROMPT_HOST_CACHE_DIR: join(dir, "cache") } });
try {
  await host.loadPlugin({
    name: "rules",
    wasm: "declare",
    scope: "agent:1",
    config: { sections: [{ name: "rules", order: 100, text: "Work in {{cwd}}." }] },
  });
  // The others load by name too (their `init` runs; what they need to render, such as a
  // granted directory, is a deployment's).
  await host.bindScope("scratch");
  for (const name of ["clock", "runtime-policy", "redactor", "project-instructions", "git-context"]) {
    await host.loadPlugin({ name, wasm: name, scope: "scratch" });
  }
  await host.disposeScope("scratch");

  const session = join(dir, "s.jsonl");
  const step = await host.step({ session, scope: "agent:1", facts: { cwd: "/repo" }, user: ["hi"] });
  const messages = step.request.messages;
  const expected =
    "You are an AI agent powered by the DeepSeek Harness SDK.\n\nYou review the code in /repo.\n\nWork in /repo.";
  if (messages[0].role !== "system" || messages[0].content !== expected) {
    throw new Error(`unexpected system message: ${JSON.stringify(messages[0])}, expected ${JSON.stringify(expected)}`);
  }
  if (messages.at(-1).content !== "hi") throw new Error(`unexpected last message: ${JSON.stringify(messages.at(-1))}`);
  const logged = readFileSync(session, "utf8").trim().split("\n").length;
  console.log(
    `step ${step.step} through ${bundled} (${platform}@${from.version}) with its plugins (${shipped.join(", ")}): ${messages.length} messages, ${logged} log lines`,
  );
} finally {
  await host.close();
}
