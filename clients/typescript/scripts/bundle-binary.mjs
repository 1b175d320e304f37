// Put the prompt-host executable into the package for this platform
// (bin/<platform>-<arch>/prompt-host), so a tarball packed after it carries its server and
// the client finds it without PATH, and the plugins it ships beside it
// (bin/<platform>-<arch>/plugins/NAME.wasm), where the binary finds them by name
// (`wasm = "persona"`). `--clean` removes them again.
//
//   node scripts/bundle-binary.mjs [--clean]
//
// The executable is PROMPT_HOST_BIN, else the checkout's target/release/prompt-host
// (`cargo build --release --locked -p prompt-host-cli`); the plugins are the .wasm files of
// PROMPT_HOST_PLUGINS, else the checkout's target/plugins (`scripts/package` builds both).

import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
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
const plugins = process.env.PROMPT_HOST_PLUGINS || resolve(root, "../../target/plugins");
const wasm = existsSync(plugins) ? readdirSync(plugins).filter((f) => f.endsWith(".wasm")).sort() : [];
if (wasm.length === 0) {
  console.error(`error: no plugins in ${plugins}: \`scripts/package npm\` builds them, or set PROMPT_HOST_PLUGINS`);
  process.exit(1);
}
const platform = `${process.platform}-${process.arch}`;
const target = join(bin, platform, "prompt-host");
rmSync(bin, { recursive: true, force: true });
mkdirSync(join(bin, platform, "plugins"), { recursive: true });
copyFileSync(source, target);
chmodSync(target, 0o755);
console.error(`bundled ${source} as bin/${platform}/prompt-host (${statSync(target).size} bytes)`);
for (const file of wasm) {
  const into = join(bin, platform, "plugins", file);
  copyFileSync(join(plugins, file), into);
  chmodSync(into, 0o644);
}
console.error(`bundled ${wasm.length} plugins from ${plugins} into bin/${platform}/plugins: ${wasm.map((f) => f.slice(0, -5)).join(", ")}`);
