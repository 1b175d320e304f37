// Lint packed tarballs as a registry would serve them: publint (package.json against the
// files packed: exports, types, fields) and, for a tarball with types, Are the Types Wrong
// (each entry point as TypeScript resolves it under node10, node16 from CJS and from ESM,
// and bundler). Exits non-zero on any error or warning of either.
//
//   node scripts/lint-package.mjs [TARBALL...]     (npm run lint:package [-- TARBALL...])
//
// Without arguments: the tarballs `npm pack` / `npm run pack:bundled` leave in this directory:
// prompt-host-VERSION.tgz, and the platform package each of its optionalDependencies names
// (prompt-host-linux-x64-gnu-VERSION.tgz for @prompt-host/linux-x64-gnu).
//
// The one rule not applied is attw's `cjs-resolves-to-esm` ("ESM (dynamic import only)"
// from a CommonJS `require`): the package is ESM only, and its `engines` are the Node.js
// versions whose `require()` loads ES modules without a flag (20.19 and later in 20.x, 22.12
// and later), so a CommonJS caller's `require("prompt-host")` works at run time, as does
// TypeScript's for `module: nodenext` (5.8 and later). attw's own TypeScript predates that.

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** The file `npm pack` names a package's tarball: `@scope/name` → `scope-name-VERSION.tgz`. */
function tarballName(name, version) {
  return `${name.replace(/^@/, "").replace("/", "-")}-${version}.tgz`;
}

/** The path of a devDependency's command, run with this Node.js. */
function bin(name, command) {
  const manifest = join(root, "node_modules", name, "package.json");
  const bins = JSON.parse(readFileSync(manifest, "utf8")).bin;
  return join(dirname(manifest), typeof bins === "string" ? bins : bins[command]);
}

function run(label, args) {
  console.error(`$ ${label} ${args.slice(1).join(" ")}`);
  const status = spawnSync(process.execPath, args, { stdio: "inherit" }).status;
  if (status !== 0) console.error(`error: ${label} failed (status ${status})`);
  return status === 0;
}

/** A tarball's package.json. */
function packed(tarball) {
  const out = spawnSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`cannot read package/package.json in ${tarball}: ${out.stderr}`);
  return JSON.parse(out.stdout);
}

/** Whether a packed package.json names types (the client's does; a platform package's not). */
function hasTypes(manifest) {
  return Boolean(manifest.types || manifest.typings || manifest.exports);
}

let tarballs = process.argv.slice(2).map((t) => resolve(t));
if (tarballs.length === 0) {
  const main = join(root, tarballName(pkg.name, pkg.version));
  if (!existsSync(main)) {
    console.error(`error: ${main} not found: pack it first (npm pack, or npm run pack:bundled)`);
    process.exit(1);
  }
  tarballs = [main];
  // The platform packages the packed client names (pack:bundled packs them beside it).
  for (const [name, version] of Object.entries(packed(main).optionalDependencies ?? {})) {
    const platform = join(root, tarballName(name, version));
    if (!existsSync(platform)) {
      console.error(`error: ${main} names ${name}@${version}, but ${platform} is not here: npm run pack:bundled packs both`);
      process.exit(1);
    }
    tarballs.push(platform);
  }
}

let ok = true;
for (const tarball of tarballs) {
  ok = run("publint", [bin("publint", "publint"), "--strict", tarball]) && ok;
  if (hasTypes(packed(tarball))) {
    ok = run("attw", [bin("@arethetypeswrong/cli", "attw"), tarball, "--ignore-rules", "cjs-resolves-to-esm"]) && ok;
  }
}
if (!ok) process.exit(1);
console.error(`lint:package: ${tarballs.length} tarball(s) clean`);
