// src/types.ts against protocol/prompt-host.schema.json (scripts/check-types.mjs): they match,
// and a field, an object or a requirement the schema gains is reported until types.ts has it.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { SCHEMA_PATH, TYPES_PATH, check, schemaAt, unwrap } from "../scripts/check-types.mjs";

const SCHEMA = JSON.parse(readFileSync(SCHEMA_PATH, "utf8"));
const TYPES = readFileSync(TYPES_PATH, "utf8");

/** The object schema at `path` in a copy of the schema, to be changed in place (wherever its
 * $ref leads). */
const editable = (schema, path) => unwrap(schema, schemaAt(schema, path));

test("types.ts matches the schema", () => {
  const { problems, types, fields } = check(SCHEMA, TYPES);
  assert.deepEqual(problems, []);
  assert.ok(types > 30 && fields > 150, `${types} types, ${fields} fields`);
});

test("a field added to a result is reported", () => {
  const schema = structuredClone(SCHEMA);
  editable(schema, "results.step").properties.new_field = { type: "string" };
  const { problems } = check(schema, TYPES);
  assert.ok(problems.includes("results.step: StepResult lacks field 'new_field' that the schema has"), problems.join("\n"));
  // `retry` answers with the same type, checked there too.
  assert.ok(problems.includes("results.retry: StepResult lacks field 'new_field' that the schema has"), problems.join("\n"));
});

test("a field added to a nested object, and a new requirement, are reported", () => {
  const schema = structuredClone(SCHEMA);
  editable(schema, "results.mcp_status[].instructions").properties.ratio = { type: "number" };
  const routeSpec = editable(schema, "params.step.route");
  routeSpec.required = [...routeSpec.required, "model"];
  const { problems } = check(schema, TYPES);
  assert.ok(problems.includes("results.mcp_status[].instructions: McpStatus.instructions lacks field 'ratio' that the schema has"), problems.join("\n"));
  assert.ok(problems.includes("params.step.route: RouteSpec makes field 'model' optional but the schema requires it"), problems.join("\n"));
});

test("a new object under a result needs a type or a reason", () => {
  const schema = structuredClone(SCHEMA);
  editable(schema, "results.step").properties.budget = { type: "object", properties: { left: { type: "integer" } } };
  const { problems } = check(schema, TYPES);
  assert.ok(problems.includes("results.step.budget: an object in the schema with no type in TYPES and no reason in SKIPPED"), problems.join("\n"));
});

test("a field added to a result the client reduces to a value is reported", () => {
  const schema = structuredClone(SCHEMA);
  editable(schema, "results.close_session").properties.bytes = { type: "integer" };
  const { problems } = check(schema, TYPES);
  assert.ok(problems.some((p) => p.startsWith("results.close_session: the client does not know of field 'bytes'")), problems.join("\n"));
});

test("a field types.ts lacks is reported, in the type and in those that extend it", () => {
  const base = "export interface TargetParams {\n  scope?: string;\n  facts?: Facts;\n}";
  assert.ok(TYPES.includes(base));
  const { problems } = check(SCHEMA, TYPES.replace(base, "export interface TargetParams {\n  scope?: string;\n}"));
  assert.deepEqual(problems, [
    "params.assemble: TargetParams lacks field 'facts' that the schema has",
    "params.render: RenderParams lacks field 'facts' that the schema has",
  ]);
});

test("the walk reads a generated layout: $refs, Option<T> as anyOf with null, allOf", () => {
  const schema = structuredClone(SCHEMA);
  schema.$defs.GeneratedRenderedBase = structuredClone(editable(schema, "results.render"));
  schema.$defs.GeneratedRendered = {
    allOf: [{ $ref: "#/$defs/GeneratedRenderedBase" }, { type: "object", properties: { extra_field: { type: "integer" } } }],
  };
  schema.$defs.results.properties.render = { anyOf: [{ $ref: "#/$defs/GeneratedRendered" }, { type: "null" }] };
  const { problems } = check(schema, TYPES);
  assert.deepEqual(problems, ["results.render: Rendered lacks field 'extra_field' that the schema has"]);
});
