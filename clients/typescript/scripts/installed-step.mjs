// A step through the installed package, from a directory that holds nothing but it: the
// check that a packed tarball works as a user gets it (`.ci/run` installs the tarball into
// an empty directory, copies this file there and runs it with PATH lacking prompt-host).
//
//   PROMPT_HOST_GUESTS=<dir of example plugins> node installed-step.mjs
//
// Exits non-zero, saying why, if anything differs from what a step must give.

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { PromptHost, bundledBinary, findBinary } from "prompt-host";

const guests = process.env.PROMPT_HOST_GUESTS;
if (!guests) throw new Error("set PROMPT_HOST_GUESTS to the example plugins' directory");
if (process.env.PROMPT_HOST_BIN) throw new Error("unset PROMPT_HOST_BIN: the package's own binary is what is checked");
const bundled = bundledBinary();
if (!bundled || findBinary() !== bundled) throw new Error(`the package carries no binary for ${process.platform}-${process.arch}`);

const dir = mkdtempSync(join(tmpdir(), "prompt-host-installed-"));
const host = new PromptHost({ env: { PROMPT_HOST_CACHE_DIR: join(dir, "cache") } });
try {
  await host.bindScope("agent:1");
  await host.loadPlugin({
    name: "rules",
    wasm: join(guests, "declare.wasm"),
    scope: "agent:1",
    config: { sections: [{ name: "rules", order: 100, text: "Work in {{cwd}}." }] },
  });
  const session = join(dir, "s.jsonl");
  const step = await host.step({ session, scope: "agent:1", facts: { cwd: "/repo" }, user: ["hi"] });
  const messages = step.request.messages;
  const system = messages[0];
  if (system.role !== "system" || !String(system.content).endsWith("Work in /repo.")) {
    throw new Error(`unexpected system message: ${JSON.stringify(system)}`);
  }
  if (messages.at(-1).content !== "hi") throw new Error(`unexpected last message: ${JSON.stringify(messages.at(-1))}`);
  const logged = readFileSync(session, "utf8").trim().split("\n").length;
  console.log(`step ${step.step} through ${bundled}: ${messages.length} messages, ${logged} log lines`);
} finally {
  await host.close();
}
