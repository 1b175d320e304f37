# __NAME__

A prompt-host plugin in JavaScript: `src/plugin.js`, an ES module, built into a WebAssembly
component of the world `plugin` in `wit/0.1.0` by `jco componentize` (npm
`@bytecodealliance/jco`, which runs `@bytecodealliance/componentize-js`: the SpiderMonkey
engine, pre-initialised with the module). Both are pinned in `package.json` and
`package-lock.json`. The plugin declares:

__ENTRIES__

## Build

```sh
./build.sh        # npm ci (first run only), then npm run build
```

This writes `dist/plugin.wasm` (about 12 MB: it embeds the JavaScript engine). Node.js 20 or
later. The first build installs the toolchain (~340 MB in `node_modules`); later builds need
no network. The build passes `--disable http fetch-event`: without it the component imports
`wasi:http`, which prompt-host does not provide, and it fails to load.

## Check, render, test

```sh
prompt-host check dist/plugin.wasm                     # loads it, runs init, lists what it declares
prompt-host render --config host.toml --fact cwd=/work # the system prompt with the plugin loaded
./test.sh                                              # builds, then both of the above, checked
```

`check` runs `init` with `--config '{…}'` (default `{}`) and prints the declarations,
e.g. `__CHECK__`. `render` loads `host.toml`, which loads the built component globally;
its output includes

```
__RENDER__
```

The first load compiles the component (5–10 s); prompt-host caches the result, so later
runs start in a fraction of a second. `prompt-host assemble --config host.toml` prints the
whole assembly as JSON (sections, contexts, tools, variables). `test.sh` runs the binary
named by `PROMPT_HOST` (default: `prompt-host` on PATH).

## Writing it

- Imports are the WIT interfaces by versioned name: `import { declareSection } from
  'prompt-host:plugin/registry@0.1.0'`. Records are plain objects with camelCase fields,
  variants are `{ tag: 'fixed', val: '…' }`, `option` is a value or `undefined`.
- The export is the object `contributor`, with a camelCase method per function of the
  `contributor` interface.
- A `result<_, plugin-error>` export returns normally for `ok`; for `err`, throw an object
  whose `payload` is the variant (`PluginError` in `src/plugin.js`). Any other exception
  traps the instance.
- The context argument is `undefined` when unchanged since this instance's previous call:
  keep the last one (`remember`).

## Logs

`log(level, message)` (from `prompt-host:plugin/log@0.1.0`; `'trace'` … `'error'`) writes one
line to the host's log, attributed to the plugin and capped per instance; so does anything
the plugin prints to stdout or stderr. The command line (`check`, `render`, …) shows the
`warn` and `error` lines on stderr, as `plugin "__NAME__" (global) warn: …`; `prompt-host
serve` sends every line at or above the level a client subscribed to as a `log`
notification.

## The contract version

The project builds against `prompt-host:plugin@0.1.0` (`wit/0.1.0`, world `plugin`), which
every prompt-host loads. `wit/0.2.0` is the newer contract: a dynamic entry may answer
"unchanged" (nothing is copied to the host), and `control.cancelled()` tells a long callback
that the caller gave up. To build against it, give the toolchain a WIT directory holding
0.2.0 with 0.1.0 as a dependency, and point `--wit` in `package.json` at it:

```sh
mkdir -p wit-0.2.0/deps/0.1.0
cp wit/0.2.0/*.wit wit-0.2.0/ && cp wit/0.1.0/*.wit wit-0.2.0/deps/0.1.0/
# package.json: --wit wit-0.2.0
```

Then `sectionText` and `contextText` return `{ tag: 'text', val: text }` or
`{ tag: 'unchanged' }`, `variable` returns `{ tag: 'value', val: valueOrUndefined }` or
`{ tag: 'unchanged' }`, and `tools` returns `{ tag: 'tools', val: toolSet }` or
`{ tag: 'unchanged' }`; the imports keep their `@0.1.0` names, and `cancelled` comes from
`'prompt-host:plugin/control@0.2.0'`. `prompt-host check` prints the version a component was
built against (`wit: prompt-host:plugin@…`). The `.wit` files are the contract's reference
documentation: every item carries a doc comment.
