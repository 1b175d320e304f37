# __NAME__

A prompt-host plugin in Python: `src/app.py`, built into a WebAssembly component of the world
`plugin` in `wit/0.1.0` by `componentize-py` (PyPI, pinned in `requirements.txt`), which
bundles a CPython interpreter compiled to WebAssembly, the standard library and the app,
pre-initialised so that `import`s are done at build time. The plugin declares:

__ENTRIES__

## Build

```sh
./build.sh
```

The first run creates `.venv` with the pinned componentize-py (one wheel, no dependencies);
then it runs

```sh
componentize-py --wit-path wit/0.1.0 --world plugin componentize --python-path src app --output dist/plugin.wasm
```

which writes `dist/plugin.wasm` (about 18 MB: it embeds the interpreter). Later runs reuse
`.venv` and need no network. `PYTHON` names the interpreter for the venv (default `python3`,
3.9 or later).

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

- `.venv/bin/componentize-py --wit-path wit/0.1.0 --world plugin bindings OUT` writes the
  generated `wit_world` package to read; the build generates it again.
- The export is the class `Contributor(exports.Contributor)` in the module named on the
  command line (`app`). Records are dataclasses, variants are one class per case
  (`registry.TextSource_Fixed(text)`, `registry.TextSource_Dynamic()`), `option` is a value
  or `None`, and WIT names that clash with Python keywords get a trailing underscore
  (`ListenerOptions(prepend=…, global_=…)`).
- A `result<_, plugin-error>` export returns normally for `ok`; for `err`, raise
  `Err(PluginError_InvalidInput("why"))`. Any other exception traps the instance.
- The context argument is `None` when unchanged since this instance's previous call: keep
  the last one (`Base.remember`).

## Logs

`log.log(log.Level.INFO, message)` (levels `TRACE` … `ERROR`) writes one line to the host's
log, attributed to the plugin and capped per instance; so does anything the plugin prints to
stdout or stderr. The command line (`check`, `render`, …) shows the `warn` and `error` lines
on stderr, as `plugin "__NAME__" (global) warn: …`; `prompt-host serve` sends every line at
or above the level a client subscribed to as a `log` notification.

## The contract version

The project builds against `prompt-host:plugin@0.1.0` (`wit/0.1.0`, world `plugin`), which
every prompt-host loads. `wit/0.2.0` is the newer contract: a dynamic entry may answer
"unchanged" (nothing is copied to the host), and `control.cancelled()` tells a long callback
that the caller gave up. To build against it, give the toolchain a WIT directory holding
0.2.0 with 0.1.0 as a dependency, and point `--wit-path` in `build.sh` at it:

```sh
mkdir -p wit-0.2.0/deps/0.1.0
cp wit/0.2.0/*.wit wit-0.2.0/ && cp wit/0.1.0/*.wit wit-0.2.0/deps/0.1.0/
# build.sh: --wit-path wit-0.2.0
```

Then `section_text` and `context_text` return `TextAnswer_Text(text)` or
`TextAnswer_Unchanged()`, `variable` returns `ValueAnswer_Value(value_or_none)` or
`ValueAnswer_Unchanged()`, and `tools` returns `ToolsAnswer_Tools(tool_set)` or
`ToolsAnswer_Unchanged()` (all from `wit_world.exports.contributor`); `cancelled()` comes from
`wit_world.imports.control`. `prompt-host check` prints the version a component was built
against (`wit: prompt-host:plugin@…`). The `.wit` files are the contract's reference
documentation: every item carries a doc comment.
