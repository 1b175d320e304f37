#!/usr/bin/env node
// The upstream side of the side-by-side benchmark: the DeepSeek Harness system-prompt package
// (bundled unchanged by build.sh) loads the deployment described by a prompt-host host.toml,
// with every plugin's content registered as plain JavaScript, and is timed the way
// prompt-host's benches time themselves, so they can print ratios against it.
//
//   node tests/upstream/bench.mjs --bundle OUT/upstream-system-prompt.mjs \
//     --host-toml host.toml [--rounds N] [--steps M] [--first-load-only] [--invariants]
//
// Prints one JSON line. "load" = read + parse host.toml (also reported alone as parse_us),
// then a cordis Context with the SystemPrompt service, the scopes and every plugin's
// registrations in place. "step" = assemble for the agent scope with the caller's facts, then
// render the prompt and the runtime-context snapshot (what prompt-host's step renders too).

import { readFileSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

const { values: args } = parseArgs({
  options: {
    'bundle': { type: 'string' },
    'host-toml': { type: 'string' },
    // The TOML parser build.sh bundles next to the upstream bundle.
    'toml': { type: 'string' },
    'rounds': { type: 'string', default: '50' },
    'steps': { type: 'string', default: '5000' },
    'warmup': { type: 'string', default: '1000' },
    'first-load-only': { type: 'boolean', default: false },
    // Install upstream's optional invariant companion (prompt-host always validates).
    'invariants': { type: 'boolean', default: false },
    // Write the rendered prompt here, to diff it against prompt-host's.
    'prompt-out': { type: 'string' },
  },
})
if (!args.bundle || !args['host-toml']) {
  console.error('usage: bench.mjs --bundle BUNDLE.mjs --host-toml HOST.toml [--rounds N] [--steps M] [--first-load-only]')
  process.exit(2)
}

// The step prompt-host's cold-start and step benches render: agent 0 with these facts.
const SCOPE = 'agent:0'
const FACTS = { model: 'deepseek-v4', cwd: '/work/project' }
// prompt-host registers these global variables itself, each reading the caller fact of the
// same name (as upstream's agent loop registers them from the agent's options).
const HOST_VARIABLES = ['provider', 'model', 'cwd']

const us = ms => Math.round(ms * 10_000) / 10 // ms → µs, one decimal

const importStarted = performance.now()
const upstream = await import(pathToFileURL(args.bundle).href)
const { parse: parseToml } = await import(pathToFileURL(args.toml ?? join(dirname(args.bundle), 'smol-toml.mjs')).href)
const importUs = us(performance.now() - importStarted)
const { Context, SystemPrompt, SystemPromptInvariant, InvariantRegistry, createScope, scopeChainOf,
  renderPrompt, renderContextSnapshot } = upstream

/** What the `declare` guest does with a dynamic template: `${scope}`, `${scope_chain}`,
 * `${fact:NAME}` and `${call}` expand, anything else (including `{{variables}}`) stays. */
function template(text) {
  let calls = 0
  return (context) => {
    calls += 1
    return text.replace(/\$\{([^}]*)\}/g, (whole, name) => {
      if (name === 'call') return String(calls)
      if (name === 'scope') return context.scope?.name ?? ''
      if (name === 'scope_chain') return scopeChainOf(context.scope).map(key => key.name).join(',')
      if (name.startsWith('fact:')) return context.facts?.[name.slice(5)] ?? ''
      return whole
    })
  }
}

/** A declared text: fixed string, or `{ dynamic = "template" }` computed per assembly. */
function text(source, where) {
  if (typeof source === 'string') return source
  if (typeof source?.dynamic === 'string') return template(source.dynamic)
  throw new Error(`${where}: only fixed and { dynamic } texts have a JS equivalent here`)
}

/** Register what a `declare` guest with this config registers. */
function declare(ctx, name, config) {
  const sp = ctx.systemPrompt
  for (const s of config.sections ?? []) {
    sp.section({ name: s.name, order: s.order, text: text(s.text, `${name}: ${s.name}`), complete: s.complete })
  }
  for (const c of config.contexts ?? []) {
    sp.context({ name: c.name, order: c.order, text: text(c.text, `${name}: ${c.name}`) })
  }
  for (const v of config.variables ?? []) {
    if ('dynamic' in v) sp.variable(v.name, template(v.dynamic))
    else sp.variable(v.name, () => v.value ?? undefined)
  }
  for (const t of config.tools ?? []) {
    // The guest passes `parameters` (JSON text) to the host, which parses it at load.
    const schemas = t.schemas.map(s => ({
      name: s.name,
      description: s.description ?? '',
      parameters: typeof s.parameters === 'string' ? JSON.parse(s.parameters)
        : s.parameters ?? { type: 'object', properties: {} },
    }))
    const result = t.known_names ? { schemas, knownNames: t.known_names } : { schemas }
    // Upstream has only provider functions; a fixed set and a dynamic one (`dynamic = true`,
    // the guest answers the same set per call) are both this closure.
    sp.tools(() => result)
  }
  if (config.suppress_runtime_context) sp.suppressRuntimeContext()
  // `keep_until_context_changes` is a caching hint to prompt-host: no upstream equivalent.
  if (config.listener) {
    const steps = config.listener.steps ?? []
    if (!steps.every(step => step.next === true)) {
      throw new Error(`${name}: only listener steps { next = true } have a JS equivalent here`)
    }
    ctx.on('system-prompt/assemble', async (assembly, _context, next) => {
      let result = assembly
      for (const _ of steps) result = await next()
      return result
    }, { prepend: !!config.listener.prepend, global: !!config.listener.global })
  }
}

/** Register what the `redactor` guest registers: after the rest of the chain, replace each
 * word with `[redacted]` in section texts (and context texts with `contexts = true`). */
function redactor(ctx, config) {
  const words = config.words ?? ['SECRET']
  const redact = (entries) => {
    for (const entry of entries) {
      for (const word of words) {
        if (entry.text.includes(word)) entry.text = entry.text.replaceAll(word, '[redacted]')
      }
    }
  }
  ctx.on('system-prompt/assemble', async (_assembly, _context, next) => {
    const result = await next()
    redact(result.sections)
    if (config.contexts) redact(result.contexts)
    return result
  }, { prepend: config.prepend ?? true, global: !!config.global })
}

/** Each plugin's component, by file name, and the JS that registers the same content. */
const GUESTS = {
  declare: (ctx, plugin) => declare(ctx, plugin.name, plugin.config ?? {}),
  redactor: (ctx, plugin) => redactor(ctx, plugin.config ?? {}),
}

/** A cordis plugin that installs `install` in a fiber with the systemPrompt service. */
const withPrompt = install => Object.assign(ctx => install(ctx), { inject: ['systemPrompt'] })

/** From host.toml's document to a service with everything registered. */
async function deploy(doc) {
  const ctx = new Context()
  if (args.invariants) {
    await ctx.plugin(InvariantRegistry)
    await ctx.plugin(SystemPromptInvariant)
  }
  const prompt = doc.prompt ?? {}
  await ctx.plugin(SystemPrompt, {
    persona: prompt.persona ?? '',
    includeHarnessIdentity: prompt.include_harness_identity ?? true,
    includeRuntimeContext: prompt.include_runtime_context ?? true,
    ...(prompt.tool_order ? { toolOrder: prompt.tool_order } : {}),
  })
  await ctx.plugin(withPrompt((inner) => {
    for (const name of HOST_VARIABLES) inner.systemPrompt.variable(name, context => context.facts?.[name])
  }))
  // Scope keys are objects upstream; `name` is what `${scope}` prints. Minted from a plugin
  // that injects systemPrompt, as upstream's tests do, so scoped contexts can reach it.
  const keys = new Map((doc.scope ?? []).map(s => [s.name, { name: s.name }]))
  const scopes = new Map()
  await ctx.plugin(withPrompt((inner) => {
    for (const s of doc.scope ?? []) {
      const parent = s.parent === undefined ? undefined : { parent: keys.get(s.parent) }
      scopes.set(s.name, createScope(inner, keys.get(s.name), parent))
    }
  }))
  for (const plugin of doc.plugin ?? []) {
    const guest = GUESTS[basename(plugin.wasm ?? '', '.wasm')]
    if (!guest) throw new Error(`plugin ${plugin.name}: no JS equivalent of ${plugin.wasm}`)
    const target = plugin.scope === undefined ? ctx : scopes.get(plugin.scope)?.ctx
    if (!target) throw new Error(`plugin ${plugin.name}: undeclared scope ${plugin.scope}`)
    await target.plugin(withPrompt(inner => guest(inner, plugin)))
  }
  return { systemPrompt: ctx.systemPrompt, agent: keys.get(SCOPE) }
}

/** One load: parse (timed alone too), then deploy. */
async function load() {
  const started = performance.now()
  const doc = parseToml(readFileSync(args['host-toml'], 'utf8'))
  const parsed = performance.now()
  const deployed = await deploy(doc)
  return { deployed, parseUs: us(parsed - started), loadUs: us(performance.now() - started) }
}

/** One step; a fresh context per step, as prompt-host builds one per call. */
async function step({ systemPrompt, agent }) {
  const assembly = await systemPrompt.assemble({ scope: agent, facts: { ...FACTS } })
  return { prompt: renderPrompt(assembly), context: renderContextSnapshot(assembly), tools: assembly.tools.length }
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const at = q => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]
  return { min: sorted[0], median: at(0.5), p99: at(0.99), n: sorted.length }
}

const upstreamInfo = (() => {
  try {
    return JSON.parse(readFileSync(join(dirname(args.bundle), 'upstream.json'), 'utf8')).rev
  } catch {
    return 'unknown'
  }
})()

// The first load and the first step in this process: cold code, as a fresh host has.
const first = await load()
const stepStarted = performance.now()
const rendered = await step(first.deployed)
const firstStepUs = us(performance.now() - stepStarted)
if (args['prompt-out']) writeFileSync(args['prompt-out'], rendered.prompt)
const common = {
  prompt_bytes: Buffer.byteLength(rendered.prompt),
  context_bytes: Buffer.byteLength(rendered.context),
  tools: rendered.tools,
  invariants: args.invariants,
  node: process.version,
  upstream: upstreamInfo,
}

if (args['first-load-only']) {
  console.log(JSON.stringify({
    import_us: importUs, parse_us: first.parseUs, load_us: first.loadUs, first_step_us: firstStepUs, ...common,
  }))
} else {
  // Repeated loads in this (now warm) process; each deployment is dropped for the GC.
  const loads = []
  const parses = []
  for (let i = 0; i < Number(args.rounds); i++) {
    const { parseUs, loadUs } = await load()
    parses.push(parseUs)
    loads.push(loadUs)
  }
  for (let i = 0; i < Number(args.warmup); i++) await step(first.deployed)
  const steps = []
  for (let i = 0; i < Number(args.steps); i++) {
    const started = performance.now()
    await step(first.deployed)
    steps.push(us(performance.now() - started))
  }
  console.log(JSON.stringify({
    load_us: stats(loads), parse_us: stats(parses), step_us: stats(steps),
    first_load_us: first.loadUs, first_step_us: firstStepUs, import_us: importUs, ...common,
  }))
}
