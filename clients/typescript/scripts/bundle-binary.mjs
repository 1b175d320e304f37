// Put the prompt-host executable into the package for this platform
// (bin/<platform>-<arch>/prompt-host), so a tarball packed after it carries its server and
// the client finds it without PATH. `--clean` removes it again.
//
//   node scripts/bundle-binary.mjs [--clean]
//
// The executable is PROMPT_HOST_BIN, else the checkout's target/release/prompt-host
// (`cargo build --release --locked -p prompt-host-cli`).

import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "bin");

if (process.argv.includes("--clean")) {
  rmSync(bin, { recursive: true, force: true });
  process.exit(0);
}

const source = process.env.PROMPT_HOST_BIN || resolve(root, "../../target/release/prompt-host");
if (!existsSync(source)) {
  console.error(`error: ${source} not found: build it with \`cargo build --release --locked -p prompt-host-cli\` or set PROMPT_HOST_BIN`);
  process.exit(1);
}
const target = join(bin, `${process.platform}-${process.arch}`, "prompt-host");
rmSync(bin, { recursive: true, force: true });
mkdirSync(dirname(target), { recursive: true });
copyFileSync(source, target);
chmodSync(target, 0o755);
console.error(`bundled ${source} as bin/${process.platform}-${process.arch}/prompt-host (${statSync(target).size} bytes)`);
