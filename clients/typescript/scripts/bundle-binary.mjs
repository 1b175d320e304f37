// Pack the client with its server as npm packages of the napi-rs layout, into this directory:
//
// - the platform package, @prompt-host/<platform>-<arch>[-gnu|-musl] (the name
//   `platformPackage()` gives on this machine, such as @prompt-host/linux-x64-gnu), with
//   `os`, `cpu` (and on Linux `libc`) so npm installs it only where it runs: the
//   prompt-host executable at its top and the plugins it ships beside it in plugins/, where
//   the binary finds them by name (`wasm = "persona"`);
//   prompt-host-<platform>-<arch>[-libc]-VERSION.tgz
// - the client, prompt-host-VERSION.tgz, naming that package, at its own version, in
//   `optionalDependencies`; no binary of its own.
//
//   node scripts/bundle-binary.mjs            (npm run pack:bundled, which lints both after)
//
// The executable is PROMPT_HOST_BIN, else the checkout's target/release/prompt-host
// (`cargo build --release --locked -p prompt-host-cli`); the plugins are the .wasm files of
// PROMPT_HOST_PLUGINS, else the checkout's target/plugins (`scripts/package` builds both).
// dist/ must be built (`npm ci` builds it).
//
// package.json in the checkout names no optional dependency: npm ci would refuse it while the
// platform package is on no registry (a lock file cannot hold a package npm install could not
// fetch). The packed package.json names it; package.json is restored after `npm pack`.

import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function fail(message) {
  console.error(`error: ${message}`);
  process.exit(1);
}

// What to undo however the script ends (an error, process.exit, a signal): the staging
// directory, and package.json as it was.
const undo = new Map();
process.on("exit", () => {
  for (const step of [...undo.values()].reverse()) step();
});
let child;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    child?.kill(signal);
    process.exit(128 + constants.signals[signal]);
  });
}

const source = process.env.PROMPT_HOST_BIN || resolve(root, "../../target/release/prompt-host");
if (!existsSync(source)) {
  fail(`${source} not found: build it with \`cargo build --release --locked -p prompt-host-cli\` or set PROMPT_HOST_BIN`);
}
const plugins = process.env.PROMPT_HOST_PLUGINS || resolve(root, "../../target/plugins");
const wasm = existsSync(plugins) ? readdirSync(plugins).filter((f) => f.endsWith(".wasm")).sort() : [];
if (wasm.length === 0) fail(`no plugins in ${plugins}: \`scripts/package npm\` builds them, or set PROMPT_HOST_PLUGINS`);
const licence = resolve(root, "../../LICENSE");
if (!existsSync(licence)) fail(`${licence} not found`);
const client = join(root, "dist", "client.js");
if (!existsSync(client)) fail(`${client} not found: build it with \`npm ci\` (or \`npm run build\`)`);
const { platformPackage } = await import(pathToFileURL(client).href);

const manifestPath = join(root, "package.json");
const manifestText = readFileSync(manifestPath, "utf8");
const manifest = JSON.parse(manifestText);
const name = platformPackage();
const platform = name.slice("@prompt-host/".length);
const exe = process.platform === "win32" ? "prompt-host.exe" : "prompt-host";
const LIBC = { gnu: "glibc", musl: "musl" };

/** `npm pack` in `dir` into this directory; the tarball's file name. */
function npmPack(dir) {
  const npm = process.env.npm_execpath;
  const [command, args] = npm && npm.endsWith(".js") ? [process.execPath, [npm]] : ["npm", []];
  return new Promise((resolve, reject) => {
    child = spawn(command, [...args, "pack", "--json", "--pack-destination", root], {
      cwd: dir,
      stdio: ["ignore", "pipe", "inherit"],
      shell: process.platform === "win32" && command === "npm",
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (text) => (out += text));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      child = undefined;
      if (code === 0) resolve(JSON.parse(out)[0].filename);
      else reject(new Error(`npm pack in ${dir} failed (${signal ? `signal ${signal}` : `status ${code}`})`));
    });
  });
}

function size(file) {
  const bytes = statSync(join(root, file)).size;
  return `${bytes} bytes, ${bytes < 1e6 ? `${(bytes / 1e3).toFixed(1)} kB` : `${(bytes / 1e6).toFixed(1)} MB`}`;
}

// The platform package, staged in a temporary directory.
const stage = mkdtempSync(join(tmpdir(), "prompt-host-platform-"));
undo.set("stage", () => rmSync(stage, { recursive: true, force: true }));
const libc = platform.split("-")[2];
const description = `The prompt-host executable for ${process.platform} ${process.arch}${libc ? ` (${LIBC[libc]})` : ""} and the example plugins it finds by name: the server of the prompt-host npm package, which installs it as an optional dependency`;
writeFileSync(
  join(stage, "package.json"),
  `${JSON.stringify(
    {
      name,
      version: manifest.version,
      description,
      license: manifest.license,
      // No JavaScript at all; said so that nothing guesses (publint).
      type: "commonjs",
      os: [process.platform],
      cpu: [process.arch],
      ...(libc ? { libc: [LIBC[libc]] } : {}),
      files: [exe, "plugins/"],
      // Yarn's Plug'n'Play would leave it in a zip, where nothing can execute it.
      preferUnplugged: true,
    },
    null,
    2,
  )}\n`,
);
writeFileSync(
  join(stage, "README.md"),
  `# ${name}\n\n${description}.\n\nInstall \`prompt-host\`, not this: npm installs this package with it where ${process.platform}, ${process.arch}${libc ? ` and ${LIBC[libc]}` : ""} match, and the client runs \`${exe}\` from here unless given another (\`binary\`, \`PROMPT_HOST_BIN\`). Beside it, \`plugins/\` holds the plugins it finds by name (\`wasm = "persona"\`): ${wasm.map((f) => f.slice(0, -5)).join(", ")}.\n`,
);
copyFileSync(licence, join(stage, "LICENSE"));
copyFileSync(source, join(stage, exe));
chmodSync(join(stage, exe), 0o755);
mkdirSync(join(stage, "plugins"));
for (const file of wasm) {
  copyFileSync(join(plugins, file), join(stage, "plugins", file));
  chmodSync(join(stage, "plugins", file), 0o644);
}
console.error(`packing ${name}: ${source} as ${exe} (${statSync(source).size} bytes), plugins from ${plugins}: ${wasm.map((f) => f.slice(0, -5)).join(", ")}`);

try {
  const platformTarball = await npmPack(stage);
  // The client, naming the platform package at its own version.
  const packed = { ...manifest, optionalDependencies: { ...manifest.optionalDependencies, [name]: manifest.version } };
  undo.set("manifest", () => writeFileSync(manifestPath, manifestText));
  writeFileSync(manifestPath, `${JSON.stringify(packed, null, 2)}\n`);
  console.error(`packing ${manifest.name} with optionalDependencies ${JSON.stringify(packed.optionalDependencies)}`);
  const mainTarball = await npmPack(root);
  console.log(`${platformTarball} (${size(platformTarball)})`);
  console.log(`${mainTarball} (${size(mainTarball)})`);
} catch (e) {
  fail(e.message);
}
