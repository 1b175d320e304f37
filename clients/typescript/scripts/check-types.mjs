// The client's hand-written protocol types (src/types.ts) against
// protocol/prompt-host.schema.json, the protocol's source of truth (generated from the
// server's Rust types). A field the server gains fails this check until types.ts has it.
//
// Compared, field by field: every method's params and result with the type METHODS maps it
// to, and every named object inside them with the type TYPES maps it to — the names, and
// whether each is required (a property without `?`). Every object schema with properties
// under a method must be in TYPES or in SKIPPED (with why it has no type), so a new nested
// object is noticed too. The schema walk follows `$ref` (JSON pointers within the document),
// merges `allOf` and unwraps nullable wrappers (`anyOf`/`oneOf` with a null branch,
// `type: [T, "null"]`): it reads the hand-written schema and a generated one alike.
//
//   node scripts/check-types.mjs    (npm run check:types)
//
// Exit 0 with a one-line summary; exit 1 listing every mismatch.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join, resolve as resolvePath } from "node:path";
import ts from "typescript";

const HERE = dirname(fileURLToPath(import.meta.url));
export const SCHEMA_PATH = join(HERE, "..", "..", "..", "protocol", "prompt-host.schema.json");
export const TYPES_PATH = join(HERE, "..", "src", "types.ts");

// --- Reading the schema -------------------------------------------------------------------

/** `node` with its `$ref` chain followed (`#/...` JSON pointers into `root`). */
export function resolve(root, node) {
  const seen = new Set();
  while (node && typeof node === "object" && "$ref" in node) {
    const ref = node.$ref;
    if (!ref.startsWith("#")) throw new Error(`only references within the document are followed: ${ref}`);
    if (seen.has(ref)) throw new Error(`a $ref cycle through ${ref}`);
    seen.add(ref);
    let target = root;
    for (const token of ref.slice(1).split("/").slice(1)) target = target[token.replaceAll("~1", "/").replaceAll("~0", "~")];
    // Keywords beside a $ref (a description) do not change the shape; the target does.
    node = target;
  }
  return node;
}

function isNull(root, node) {
  node = resolve(root, node);
  return node.type === "null" || node.const === null || (Array.isArray(node.enum) && node.enum.length === 1 && node.enum[0] === null);
}

const branches = (node) => node.anyOf ?? node.oneOf ?? [];

function isObject(root, node) {
  node = resolve(root, node);
  const kinds = Array.isArray(node.type) ? node.type : [node.type];
  return kinds.includes("object") || "properties" in node || (node.allOf ?? []).some((part) => isObject(root, part));
}

/** `node` without its references and nullable wrappers. A union whose only non-null branch,
 * or whose only object branch, is one schema (`Option<T>`; a route given as a name or an
 * object) becomes that branch. */
export function unwrap(root, node) {
  node = resolve(root, node);
  const all = branches(node);
  if (all.length > 0) {
    let present = all.filter((b) => !isNull(root, b));
    if (present.length > 1) present = present.filter((b) => isObject(root, b));
    if (present.length === 1) return unwrap(root, present[0]);
  }
  return node;
}

const branchLabel = (root, branch, index) => branch.$ref?.split("/").pop() || resolve(root, branch).title || `#${index}`;

/** The properties and required names of an object schema (`allOf` parts merged), or null
 * when `node` is not an object. */
export function objectView(root, node) {
  node = unwrap(root, node);
  const properties = { ...(node.properties ?? {}) };
  const required = new Set(node.required ?? []);
  for (const part of node.allOf ?? []) {
    const view = objectView(root, part);
    if (view) {
      Object.assign(properties, view.properties);
      for (const name of view.required) required.add(name);
    }
  }
  if (Object.keys(properties).length === 0 && !isObject(root, node)) return null;
  return { properties, required };
}

const SEGMENT = /^(?<name>[^<[]+)(?:<(?<variant>[^>]+)>)?(?<items>(?:\[\])*)$/;

function step(root, node, variant, items, path) {
  if (variant) {
    const union = unwrap(root, node);
    const index = branches(union).findIndex((b, i) => branchLabel(root, b, i) === variant || `#${i}` === variant);
    if (index < 0) throw new Error(`${path}: no branch ${variant} in the union`);
    node = branches(union)[index];
  }
  for (let i = 0; i < items.length / 2; i++) {
    node = unwrap(root, node);
    if (!node.items) throw new Error(`${path}: not an array there`);
    node = node.items;
  }
  return node;
}

/** The schema at `path`: `params.<method>` or `results.<method>`, then `.field` steps;
 * `<Name>` picks a union's branch, `[]` an array's items (`results.plugins[]`,
 * `results.step.request<ChatRequest>.messages[]`). */
export function schemaAt(root, path) {
  const [kind, ...segments] = path.split(".");
  const section = objectView(root, root.$defs[kind]);
  let node = null;
  for (const [i, segment] of segments.entries()) {
    const match = SEGMENT.exec(segment);
    if (!match) throw new Error(`${path}: cannot read ${segment}`);
    const view = i === 0 ? section : objectView(root, node);
    if (!view || !(match.groups.name in view.properties)) throw new Error(`${path}: the schema has no field ${match.groups.name} there`);
    node = step(root, view.properties[match.groups.name], match.groups.variant, match.groups.items, path);
  }
  return node;
}

/** Every path under `path` whose schema is an object with properties: what needs a type or
 * a reason to have none. */
function* objectPaths(root, path, node, depth = 0) {
  if (depth > 12) return; // a recursive schema; the methods' own shapes are far shallower
  const resolved = resolve(root, node);
  if (branches(resolved).filter((b) => !isNull(root, b) && isObject(root, b)).length > 1) {
    // Positions count every branch, as `step` reads `#N`.
    for (const [i, branch] of branches(resolved).entries()) {
      if (!isNull(root, branch)) yield* objectPaths(root, `${path}<${branchLabel(root, branch, i)}>`, branch, depth + 1);
    }
    return;
  }
  node = unwrap(root, node);
  if (node.items && typeof node.items === "object" && !Array.isArray(node.items)) {
    yield* objectPaths(root, `${path}[]`, node.items, depth + 1);
    return;
  }
  const view = objectView(root, node);
  if (!view || Object.keys(view.properties).length === 0) return;
  yield path;
  for (const [name, child] of Object.entries(view.properties)) yield* objectPaths(root, `${path}.${name}`, child, depth + 1);
}

function methodsOf(root) {
  const params = objectView(root, root.$defs.params);
  const results = objectView(root, root.$defs.results);
  return [...new Set([...Object.keys(params.properties), ...Object.keys(results.properties)])].sort();
}

// --- Reading types.ts ---------------------------------------------------------------------

/** The interfaces and type aliases of a TypeScript source, by name. */
export function readDeclarations(source, fileName = "types.ts") {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const declarations = new Map();
  for (const statement of file.statements) {
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) declarations.set(statement.name.text, statement);
  }
  return declarations;
}

const isNullish = (node) =>
  node.kind === ts.SyntaxKind.UndefinedKeyword ||
  (ts.isLiteralTypeNode(node) && node.literal.kind === ts.SyntaxKind.NullKeyword);

/** A type node without parentheses, `null`/`undefined` and readonly: what it stands for. */
function plain(node) {
  while (node) {
    if (ts.isParenthesizedTypeNode(node)) node = node.type;
    else if (ts.isTypeOperatorNode(node) && node.operator === ts.SyntaxKind.ReadonlyKeyword) node = node.type;
    else if (ts.isUnionTypeNode(node)) {
      const present = node.types.filter((t) => !isNullish(t));
      if (present.length !== 1) return present.length === node.types.length ? node : { ...node, types: present, kind: node.kind };
      node = present[0];
    } else return node;
  }
  return node;
}

/** The members of a type as `Map<name, {optional}>`, following `extends` and local aliases;
 * a union's members are every branch's (required when required in all); null when the type
 * has no members (a string, a number). A property typed `never` forbids the key: it is not
 * one the type has. */
export function membersOf(declarations, node, seen = new Set()) {
  node = plain(node);
  if (!node) return null;
  if (ts.isInterfaceDeclaration(node)) {
    const members = new Map();
    for (const clause of node.heritageClauses ?? []) {
      for (const base of clause.types) {
        const inherited = membersOf(declarations, declarationOf(declarations, base.expression.getText()), seen);
        for (const [name, member] of inherited ?? []) members.set(name, member);
      }
    }
    for (const [name, member] of literalMembers(node.members)) members.set(name, member);
    return members;
  }
  if (ts.isTypeAliasDeclaration(node)) return membersOf(declarations, node.type, seen);
  if (ts.isTypeLiteralNode(node)) return literalMembers(node.members);
  if (ts.isTypeReferenceNode(node)) {
    const name = node.typeName.getText();
    if (seen.has(name) || !declarations.has(name)) return null;
    return membersOf(declarations, declarations.get(name), new Set([...seen, name]));
  }
  if (ts.isUnionTypeNode(node)) {
    const views = node.types.map((t) => membersOf(declarations, t, seen)).filter(Boolean);
    if (views.length === 0) return null;
    const members = new Map();
    for (const view of views) {
      for (const [name, member] of view) {
        const everywhere = views.every((v) => v.has(name) && !v.get(name).optional);
        members.set(name, { optional: !everywhere || member.optional });
      }
    }
    return members;
  }
  return null;
}

function literalMembers(members) {
  const out = new Map();
  for (const member of members) {
    if (!ts.isPropertySignature(member) || !member.name) continue; // index signatures: the rest of an open object
    if (member.type?.kind === ts.SyntaxKind.NeverKeyword) continue;
    out.set(member.name.getText().replace(/^["']|["']$/g, ""), { optional: Boolean(member.questionToken), type: member.type });
  }
  return out;
}

function declarationOf(declarations, name) {
  const declaration = declarations.get(name);
  if (!declaration) throw new Error(`types.ts has no type ${name}`);
  return declaration;
}

/** The type node at a TypeScript path: a declared name, then `.property` steps and `[]` for
 * an array's elements (`McpStatus.instructions`, `TimingReport.phases[]`). */
export function typeAt(declarations, path) {
  const [head, ...rest] = path.split(".");
  const first = /^(?<name>[^[]+)(?<items>(?:\[\])*)$/.exec(head);
  let node = elements(declarations, declarationOf(declarations, first.groups.name), first.groups.items, path);
  for (const segment of rest) {
    const match = /^(?<name>[^[]+)(?<items>(?:\[\])*)$/.exec(segment);
    const member = membersOf(declarations, node)?.get(match.groups.name);
    if (!member) throw new Error(`${path}: types.ts has no property ${match.groups.name} there`);
    node = elements(declarations, member.type, match.groups.items, path);
  }
  return node;
}

function elements(declarations, node, items, path) {
  for (let i = 0; i < items.length / 2; i++) {
    node = plain(node);
    if (ts.isTypeAliasDeclaration(node)) node = plain(node.type);
    if (ts.isTypeReferenceNode(node) && declarations.has(node.typeName.getText())) node = plain(declarations.get(node.typeName.getText()).type);
    if (ts.isArrayTypeNode(node)) node = node.elementType;
    else if (ts.isTypeReferenceNode(node) && ["Array", "ReadonlyArray"].includes(node.typeName.getText())) node = node.typeArguments[0];
    else throw new Error(`${path}: not an array in types.ts`);
  }
  return node;
}

// --- The mapping --------------------------------------------------------------------------

/** A method whose params or result the client passes or reduces as plain values, not a type
 * (`disposePlugin(id)`, whose result is `disposed`): the fields it knows of, so that a new
 * one is still noticed. */
const reads = (fields, reason) => ({ reads: new Set(fields), reason });

/** Each method: [params, result], a types.ts path or what the client reads. */
export const METHODS = {
  describe: [reads([], "describe() takes nothing"), "Describe"],
  bind_scope: [reads(["scope", "parent"], "bindScope(scope, parent?)"), reads([], "an empty object: nothing to return")],
  dispose_scope: [reads(["scope"], "disposeScope(scope)"), reads([], "an empty object: nothing to return")],
  scopes: [reads([], "scopes() takes nothing"), reads([], "a list of scope names: string[]")],
  load_plugin: ["LoadPluginParams", reads(["id", "manifest", "component"], "loadPlugin returns the id alone; the digests are for oci://")],
  reload_plugin: [reads(["id", "wasm"], "reloadPlugin(id, wasm)"), reads(["id", "declarations"], "reloadPlugin returns declarations")],
  dispose_plugin: [reads(["id"], "disposePlugin(id)"), reads(["disposed"], "disposePlugin returns disposed")],
  plugins: [reads([], "plugins() takes nothing"), "PluginInfo"],
  assemble: ["TargetParams", "Assembly"],
  render: ["RenderParams", "Rendered"],
  step: ["StepParams", "StepResult"],
  retry: ["RetryParams", "StepResult"],
  append_assistant: ["AppendAssistantParams", reads(["seq"], "appendAssistant returns seq")],
  append_tool_result: ["AppendToolResultParams", reads(["seq"], "appendToolResult returns seq")],
  request: ["RequestParams", "Replay"],
  compact: ["CompactParams", "Compacted"],
  close_session: [reads(["session"], "closeSession(session)"), reads(["closed"], "closeSession returns closed")],
  mcp_status: [reads(["wait_ms"], "mcpStatus({ wait_ms? })"), "McpStatus"],
  mcp_skill: ["McpSkillParams", "McpSkillBody"],
  subscribe: ["SubscribeParams", reads([], "an empty object: nothing to return")],
  "$/cancelRequest": [reads(["id"], "sent on an AbortSignal with the request's id, not by a method"), reads([], "an empty object: nothing to return")],
};

/** The named objects inside results and params, beyond the methods' own: schema path ->
 * types.ts path. */
export const TYPES = {
  "results.plugins[].grants": "PluginGrants",
  "results.plugins[].grants.dirs[]": "GrantDir",
  "results.plugins[].grants.http[]": "OriginGrant",
  "results.assemble.sections[]": "NamedText",
  "results.assemble.contexts[]": "NamedText",
  "results.assemble.tools[]": "ToolSchema",
  "results.render.tokens": "TokenReport",
  "results.render.tokens.sections[]": "PartTokens",
  "results.render.tokens.contexts[]": "PartTokens",
  "results.render.tokens.tools[]": "PartTokens",
  "results.render.timings": "TimingReport",
  "results.render.timings.phases[]": "TimingReport.phases[]",
  "results.render.timings.calls[]": "CallTiming",
  "results.render.mcp_cuts[]": "InstructionsCut",
  "results.step.route": "Route",
  "results.step.route.capabilities": "RouteCapabilities",
  "results.step.cache": "StepCache",
  "results.step.cache.breakpoints[]": "CacheBreakpoint",
  "results.step.cache.last_usage": "Usage",
  "results.step.tokens": "TokenReport",
  "results.step.request_tokens": "RequestTokens",
  "results.step.tokens.sections[]": "PartTokens",
  "results.step.tokens.contexts[]": "PartTokens",
  "results.step.tokens.tools[]": "PartTokens",
  "results.step.timings": "TimingReport",
  "results.step.timings.phases[]": "TimingReport.phases[]",
  "results.step.timings.calls[]": "CallTiming",
  "results.step.mcp_cuts[]": "InstructionsCut",
  "results.step.request<ChatRequest>": "ChatRequest",
  "results.step.request<ChatRequest>.messages[]": "Message",
  "results.step.request<ChatRequest>.messages[].tool_calls[]": "WireToolCall",
  "results.step.request<ChatRequest>.messages[].tool_calls[].function": "WireToolCall.function",
  "results.step.request<ChatRequest>.tools[]": "WireTool",
  "results.step.request<ChatRequest>.tools[].function": "ToolSchema",
  "results.step.request<AnthropicRequest>": "AnthropicRequest",
  "results.step.request<AnthropicRequest>.system[]": "AnthropicTextBlock",
  "results.step.request<AnthropicRequest>.messages[]": "AnthropicMessage",
  "results.step.request<AnthropicRequest>.tools[]": "AnthropicTool",
  "results.step.request<ResponsesRequest>": "ResponsesRequest",
  "results.step.request<ResponsesRequest>.tools[]": "ResponsesTool",
  "results.mcp_status[].instructions_cut": "InstructionsCut",
  "results.mcp_status[].instructions": "McpStatus.instructions",
  "results.mcp_status[].skills[]": "McpSkillEntry",
  "results.mcp_skill.skill": "McpSkillEntry",
  "params.load_plugin.grants": "Grants",
  "params.load_plugin.grants.dirs[]": "GrantDir",
  "params.load_plugin.grants.http[]": "OriginGrant",
  "params.step.route": "RouteSpec",
  "params.retry.route": "RouteSpec",
  "params.append_assistant.tool_calls[]": "ToolCall",
  "params.append_assistant.usage": "Usage",
};

/** Objects with properties that have no type of their own, each with why. A path here
 * covers everything under it. */
export const SKIPPED = {
  "params.load_plugin.limits": "LoadPluginParams.limits is a Record of limit names to numbers",
};

// `retry` answers what `step` does, and `request`'s replay is a step's request: the same
// types, checked at each place (the generated schema may spell each one out apart).
for (const table of [TYPES, SKIPPED]) {
  for (const path of Object.keys(table).filter((p) => p.startsWith("results.step."))) {
    table[path.replace("results.step.", "results.retry.")] = table[path];
    if (path.startsWith("results.step.request<")) table[path.replace("results.step.", "results.request.")] = table[path];
  }
}

// --- The comparison -----------------------------------------------------------------------

function compareFields(path, name, view, members) {
  const problems = [];
  const schemaNames = Object.keys(view.properties).sort();
  for (const field of schemaNames) if (!members.has(field)) problems.push(`${path}: ${name} lacks field '${field}' that the schema has`);
  for (const field of [...members.keys()].sort()) if (!(field in view.properties)) problems.push(`${path}: ${name} has field '${field}' that the schema lacks`);
  for (const field of schemaNames) {
    const member = members.get(field);
    if (!member) continue;
    if (!member.optional && !view.required.has(field)) problems.push(`${path}: ${name} requires field '${field}' that the schema makes optional`);
    if (member.optional && view.required.has(field)) problems.push(`${path}: ${name} makes field '${field}' optional but the schema requires it`);
  }
  return problems;
}

function compareReads(root, path, known) {
  const view = objectView(root, schemaAt(root, path));
  const properties = new Set(Object.keys(view?.properties ?? {}));
  return [
    ...[...properties].sort().filter((f) => !known.reads.has(f)).map((f) => `${path}: the client does not know of field '${f}' that the schema has (${known.reason})`),
    ...[...known.reads].sort().filter((f) => !properties.has(f)).map((f) => `${path}: the client reads field '${f}' that the schema lacks`),
  ];
}

/** Every difference between `schema` and the types in `source` (types.ts's text), and how
 * many types and fields were compared. */
export function check(schema, source) {
  const declarations = readDeclarations(source);
  const problems = [];
  const inSchema = methodsOf(schema);
  for (const m of inSchema) if (!(m in METHODS)) problems.push(`${m}: a method the schema has is missing from METHODS`);
  for (const m of Object.keys(METHODS)) if (!inSchema.includes(m)) problems.push(`${m}: METHODS names a method the schema lacks`);
  const typed = { ...TYPES };
  for (const [method, [params, result]] of Object.entries(METHODS)) {
    if (!inSchema.includes(method)) continue;
    for (const [kind, side] of [["params", params], ["results", result]]) {
      const path = `${kind}.${method}`;
      if (typeof side !== "string") problems.push(...compareReads(schema, path, side));
      // A result that is a list (plugins, mcp_status) is typed by its items.
      else typed[unwrap(schema, schemaAt(schema, path)).items ? `${path}[]` : path] = side;
    }
  }
  const compared = new Set();
  let fields = 0;
  for (const [path, tsPath] of Object.entries(typed)) {
    let view;
    let members;
    try {
      view = objectView(schema, schemaAt(schema, path));
      members = membersOf(declarations, typeAt(declarations, tsPath));
    } catch (e) {
      problems.push(`${path}: ${tsPath} maps to nothing (${e.message})`);
      continue;
    }
    if (!view) problems.push(`${path}: the schema has no object there for ${tsPath}`);
    else if (!members) problems.push(`${path}: ${tsPath} is not an object type in types.ts`);
    else {
      problems.push(...compareFields(path, tsPath, view, members));
      if (!compared.has(tsPath)) fields += members.size;
      compared.add(tsPath);
    }
  }
  // Every object under a method is accounted for: a type, or a reason to have none.
  const skipped = (path) => Object.keys(SKIPPED).some((s) => path === s || [".", "[", "<"].some((c) => path.startsWith(s + c)));
  for (const [method, [, result]] of Object.entries(METHODS)) {
    if (!inSchema.includes(method)) continue;
    for (const kind of ["params", "results"]) {
      if (kind === "results" && typeof result !== "string") continue;
      for (const path of objectPaths(schema, `${kind}.${method}`, schemaAt(schema, `${kind}.${method}`))) {
        if (path === `${kind}.${method}` || path in typed || skipped(path)) continue;
        problems.push(`${path}: an object in the schema with no type in TYPES and no reason in SKIPPED`);
      }
    }
  }
  return { problems, types: compared.size, fields };
}

function main() {
  const schema = JSON.parse(readFileSync(SCHEMA_PATH, "utf8"));
  const { problems, types, fields } = check(schema, readFileSync(TYPES_PATH, "utf8"));
  if (problems.length > 0) {
    console.error(`types.ts does not match the schema (${problems.length}):`);
    for (const problem of problems) console.error(`  ${problem}`);
    process.exit(1);
  }
  console.log(`types.ts matches the schema: ${types} types, ${fields} fields`);
}

if (process.argv[1] && resolvePath(process.argv[1]) === fileURLToPath(import.meta.url)) main();
