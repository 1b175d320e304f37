"""The client's hand-written protocol types against ``protocol/prompt-host.schema.json``.

The schema is the protocol's source of truth (generated from the server's Rust types); the
Python types are written by hand. These tests compare them field by field, so that a field
the server gains fails here until the client knows of it:

- every method's params against the keyword arguments of `PromptHost`'s method (the Python
  client takes params as arguments, not as a type), names and required-ness;
- every method's result, and every named object inside results and params, against the type
  `TYPES` maps it to: a dataclass (what a result is built as) or a TypedDict (what a caller
  writes or sends on);
- every object schema with properties under a method is either in `TYPES`, or in `SKIPPED`
  with the reason it has no type of its own, so a new nested object is noticed too.

The schema walk resolves ``$ref`` (JSON pointers within the document), merges ``allOf`` and
unwraps nullable wrappers (``anyOf``/``oneOf`` with a ``null`` branch, ``type: [T, "null"]``):
it reads the hand-written schema and a generated one alike.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import re
from typing import Any, Dict, FrozenSet, Iterator, List, Mapping, NamedTuple, Optional, Set, Tuple, Union, cast

from conftest import SCHEMA

import prompt_host.types as t
from prompt_host import AsyncPromptHost, PromptHost

Schema = Mapping[str, Any]


# --- Reading the schema -------------------------------------------------------------------


def resolve(root: Schema, node: Schema) -> Schema:
    """`node` with its ``$ref`` chain followed (``#/...`` JSON pointers into `root`)."""
    seen: Set[str] = set()
    while "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#"):
            raise ValueError(f"only references within the document are followed: {ref}")
        if ref in seen:
            raise ValueError(f"a $ref cycle through {ref}")
        seen.add(ref)
        target: Any = root
        for token in ref[1:].split("/")[1:]:
            target = target[token.replace("~1", "/").replace("~0", "~")]
        # Keywords beside a $ref (a description) do not change the shape; the target does.
        node = target
    return node


def _is_null(root: Schema, node: Schema) -> bool:
    node = resolve(root, node)
    return node.get("type") == "null" or node.get("const", ...) is None or node.get("enum") == [None]


def _branches(node: Schema) -> List[Schema]:
    return list(node.get("anyOf") or node.get("oneOf") or [])


def _is_object(root: Schema, node: Schema) -> bool:
    node = resolve(root, node)
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return "object" in kinds or "properties" in node or any(_is_object(root, part) for part in node.get("allOf", []))


def unwrap(root: Schema, node: Schema) -> Schema:
    """`node` without its references and nullable wrappers. A union whose only non-null
    branch, or whose only object branch, is one schema (``Option<T>``; a route given as a name
    or an object) becomes that branch."""
    node = resolve(root, node)
    branches = _branches(node)
    if branches:
        present = [b for b in branches if not _is_null(root, b)]
        if len(present) > 1:
            present = [b for b in present if _is_object(root, b)]
        if len(present) == 1:
            return unwrap(root, present[0])
    return node


def variant(root: Schema, node: Schema, name: str) -> Schema:
    """The branch of a union named `name`: by its ``$ref``'s last segment, its ``title``, or
    ``#N`` (its position)."""
    node = resolve(root, node)
    for index, branch in enumerate(_branches(node)):
        label = branch.get("$ref", "").rsplit("/", 1)[-1] or resolve(root, branch).get("title") or f"#{index}"
        if label == name or f"#{index}" == name:
            return branch
    raise KeyError(f"no branch {name!r} in the union")


class ObjectView(NamedTuple):
    properties: Dict[str, Schema]
    required: FrozenSet[str]


def object_view(root: Schema, node: Schema) -> Optional[ObjectView]:
    """The properties and required names of an object schema (``allOf`` parts merged), or
    ``None`` when `node` is not an object with properties."""
    node = unwrap(root, node)
    properties: Dict[str, Schema] = dict(node.get("properties") or {})
    required: Set[str] = set(node.get("required") or [])
    for part in node.get("allOf") or []:
        view = object_view(root, part)
        if view is not None:
            properties.update(view.properties)
            required |= view.required
    if not properties and not _is_object(root, node):
        return None
    return ObjectView(properties, frozenset(required))


_SEGMENT = re.compile(r"^(?P<name>[^<\[]+)(?:<(?P<variant>[^>]+)>)?(?P<items>(?:\[\])*)$")


def at(root: Schema, path: str) -> Schema:
    """The schema at `path`: ``params.<method>`` or ``results.<method>``, then ``.field``
    steps; ``<Name>`` picks a union's branch, ``[]`` an array's items (``results.plugins[]``,
    ``results.step.request<ChatRequest>.messages[]``)."""
    kind, _, rest = path.partition(".")
    method, _, fields = rest.partition(".")
    section = object_view(root, root["$defs"][kind])
    assert section is not None, f"$defs.{kind} has no properties"
    head = _SEGMENT.match(method)
    assert head is not None, path
    node = section.properties[head["name"]]
    node = _step(root, node, head["variant"], head["items"], path)
    for segment in fields.split(".") if fields else []:
        match = _SEGMENT.match(segment)
        assert match is not None, f"{path}: cannot read {segment!r}"
        view = object_view(root, node)
        if view is None or match["name"] not in view.properties:
            raise KeyError(f"{path}: the schema has no field {match['name']!r} there")
        node = _step(root, view.properties[match["name"]], match["variant"], match["items"], path)
    return node


def _step(root: Schema, node: Schema, variant_name: Optional[str], items: str, path: str) -> Schema:
    if variant_name:
        node = variant(root, unwrap(root, node), variant_name)
    for _ in range(len(items) // 2):
        node = unwrap(root, node)
        if "items" not in node:
            raise KeyError(f"{path}: not an array there")
        node = node["items"]
    return node


def object_paths(root: Schema, path: str, node: Schema, depth: int = 0) -> Iterator[str]:
    """Every path under `path` whose schema is an object with properties: what needs a type
    or a reason to have none."""
    if depth > 12:  # a recursive schema; the methods' own shapes are far shallower
        return
    resolved = resolve(root, node)
    objects = [b for b in _branches(resolved) if not _is_null(root, b) and _is_object(root, b)]
    if len(objects) > 1:
        # Positions count every branch, as `variant` reads ``#N``.
        for index, branch in enumerate(_branches(resolved)):
            if _is_null(root, branch):
                continue
            label = branch.get("$ref", "").rsplit("/", 1)[-1] or resolve(root, branch).get("title") or f"#{index}"
            yield from object_paths(root, f"{path}<{label}>", branch, depth + 1)
        return
    node = unwrap(root, node)
    if "items" in node and isinstance(node["items"], Mapping):
        yield from object_paths(root, f"{path}[]", node["items"], depth + 1)
        return
    view = object_view(root, node)
    if view is None or not view.properties:
        return
    yield path
    for name, child in view.properties.items():
        yield from object_paths(root, f"{path}.{name}", child, depth + 1)


def methods(root: Schema) -> List[str]:
    params = object_view(root, root["$defs"]["params"])
    results = object_view(root, root["$defs"]["results"])
    assert params is not None and results is not None
    return sorted(set(params.properties) | set(results.properties))


# --- The client's side --------------------------------------------------------------------


class Reads(NamedTuple):
    """A result the client reduces to a value rather than a type (`dispose_plugin`'s
    ``disposed``): the fields it knows of, so that a new one is still noticed."""

    fields: FrozenSet[str]
    reason: str


def reads(*fields: str, reason: str) -> Reads:
    return Reads(frozenset(fields), reason)


#: Each method: where its params come from (a `PromptHost` method's keyword arguments, or what
#: the client reads) and what its result is built as.
METHODS: Dict[str, Tuple[Union[str, Reads], Union[type, Reads]]] = {
    "describe": ("describe", t.Describe),
    "bind_scope": ("bind_scope", reads(reason="an empty object: nothing to return")),
    "dispose_scope": ("dispose_scope", reads(reason="an empty object: nothing to return")),
    "scopes": ("scopes", reads(reason="a list of scope names: List[str]")),
    "load_plugin": (
        "load_plugin",
        reads("id", "manifest", "component", reason="load_plugin returns the id alone; the digests are for oci://"),
    ),
    "reload_plugin": ("reload_plugin", reads("id", "declarations", reason="reload_plugin returns declarations")),
    "dispose_plugin": ("dispose_plugin", reads("disposed", reason="dispose_plugin returns disposed")),
    "plugins": ("plugins", t.PluginInfo),
    "assemble": ("assemble", t.Assembly),
    "render": ("render", t.Rendered),
    "step": ("step", t.StepResult),
    "retry": ("retry", t.StepResult),
    "append_assistant": ("append_assistant", reads("seq", reason="append_assistant returns seq")),
    "append_tool_result": ("append_tool_result", reads("seq", reason="append_tool_result returns seq")),
    "request": ("request", t.Replay),
    "compact": ("compact", t.Compacted),
    "close_session": ("close_session", reads("closed", reason="close_session returns closed")),
    "mcp_status": ("mcp_status", t.McpStatus),
    "mcp_skill": ("mcp_skill", t.McpSkillBody),
    "subscribe": ("subscribe", reads(reason="an empty object: nothing to return")),
    "$/cancelRequest": (
        reads("id", reason="sent by a CancelToken with the request's id, not by a method"),
        reads(reason="an empty object: nothing to return"),
    ),
}

#: The named objects inside results and params, beyond the methods' own (the paths `at` reads).
TYPES: Dict[str, type] = {
    "results.plugins[].grants": t.PluginGrants,
    "results.plugins[].grants.dirs[]": t.GrantDir,
    "results.plugins[].grants.http[]": t.OriginGrant,
    "results.assemble.sections[]": t.NamedText,
    "results.assemble.contexts[]": t.NamedText,
    "results.assemble.tools[]": t.ToolSchema,
    "results.render.tokens": t.TokenReport,
    "results.render.tokens.sections[]": t.PartTokens,
    "results.render.tokens.contexts[]": t.PartTokens,
    "results.render.tokens.tools[]": t.PartTokens,
    "results.render.timings": t.TimingReport,
    "results.render.timings.calls[]": t.CallTiming,
    "results.render.mcp_cuts[]": t.InstructionsCut,
    "results.step.route": t.Route,
    "results.step.route.capabilities": t.Capabilities,
    "results.step.cache": t.Cache,
    "results.step.cache.breakpoints[]": t.Breakpoint,
    "results.step.cache.last_usage": t.Usage,
    "results.step.tokens": t.TokenReport,
    "results.step.tokens.sections[]": t.PartTokens,
    "results.step.tokens.contexts[]": t.PartTokens,
    "results.step.tokens.tools[]": t.PartTokens,
    "results.step.request_tokens": t.RequestTokens,
    "results.step.timings": t.TimingReport,
    "results.step.timings.calls[]": t.CallTiming,
    "results.step.mcp_cuts[]": t.InstructionsCut,
    "results.step.request<ChatRequest>": t.ChatRequest,
    "results.step.request<ChatRequest>.messages[]": t.Message,
    "results.step.request<ChatRequest>.messages[].tool_calls[]": t.WireToolCall,
    "results.step.request<ChatRequest>.messages[].tool_calls[].function": t.WireFunctionCall,
    "results.step.request<ChatRequest>.tools[]": t.WireTool,
    "results.step.request<ChatRequest>.tools[].function": t.WireFunction,
    "results.step.request<AnthropicRequest>": t.AnthropicRequest,
    "results.step.request<AnthropicRequest>.messages[]": t._AnthropicMessage,
    "results.step.request<ResponsesRequest>": t.ResponsesRequest,
    "results.mcp_status[].instructions_cut": t.InstructionsCut,
    "results.mcp_status[].instructions": t.McpInstructions,
    "results.mcp_status[].skills[]": t.McpSkillEntry,
    "results.mcp_skill.skill": t.McpSkillEntry,
    "params.step.route": t.RouteSpec,
    "params.retry.route": t.RouteSpec,
    "params.append_assistant.tool_calls[]": t.ToolCall,
    "params.append_assistant.usage": t.Usage,
    "params.load_plugin.grants": t.Grants,
    "params.load_plugin.grants.dirs[]": t.GrantDir,
    "params.load_plugin.grants.http[]": t.OriginGrant,
}

#: Objects with properties that have no type of their own, each with why. A path here covers
#: everything under it.
SKIPPED: Dict[str, str] = {
    "params.load_plugin.limits": "load_plugin(limits=...) takes a mapping of limit names to numbers",
    "results.render.timings.phases[]": "TimingReport.phases is a dict, phase -> micros, built from these",
    "results.step.timings.phases[]": "TimingReport.phases is a dict, phase -> micros, built from these",
    "results.step.request<AnthropicRequest>.system[]": "provider content blocks, passed on as dicts",
    "results.step.request<AnthropicRequest>.tools[]": "provider tool objects, passed on as dicts",
    "results.step.request<ResponsesRequest>.tools[]": "provider tool objects, passed on as dicts",
}

# `retry` answers what `step` does, and `request`'s replay is a step's request: the same
# types, checked at each place (the generated schema may spell each one out apart).
for _table in (TYPES, SKIPPED):
    for _path in [p for p in _table if p.startswith("results.step.")]:
        _table[_path.replace("results.step.", "results.retry.", 1)] = _table[_path]  # type: ignore[assignment]
        if _path.startswith("results.step.request<"):
            _table[_path.replace("results.step.", "results.request.", 1)] = _table[_path]  # type: ignore[assignment]

#: Gaps known and not yet closed, each (path, field) with why: the comparison must still
#: report each one (so an entry goes when its gap is closed), and the test accepts only these.
KNOWN_GAPS: Dict[Tuple[str, str], str] = {
    ("params.load_plugin", "grants"): "load_plugin takes no grants= yet (host.toml grants a plugin loaded by name)",
}


def _type_name(kind: Any) -> str:
    return getattr(kind, "__qualname__", None) or getattr(kind, "__name__", None) or repr(kind)


def _is_typeddict(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, dict) and hasattr(kind, "__required_keys__")


def compare_fields(path: str, name: str, view: ObjectView, fields: Set[str]) -> List[str]:
    problems = [f"{path}: {name} lacks field {f!r} that the schema has" for f in sorted(set(view.properties) - fields)]
    problems += [f"{path}: {name} has field {f!r} that the schema lacks" for f in sorted(fields - set(view.properties))]
    return problems


def compare_type(root: Schema, path: str, kind: Any) -> List[str]:
    """What differs between the schema at `path` and `kind`, one message a field."""
    view = object_view(root, at(root, path))
    name = _type_name(kind)
    if view is None:
        return [f"{path}: the schema has no object there for {name}"]
    if _is_typeddict(kind):
        # A TypedDict's annotations include its bases' (`Message` on `_MessageRequired`).
        problems = compare_fields(path, name, view, set(kind.__annotations__))
        for field in sorted(set(kind.__annotations__) & set(view.properties)):
            if field in kind.__required_keys__ and field not in view.required:
                problems.append(f"{path}: {name} requires field {field!r} that the schema makes optional")
            if field not in kind.__required_keys__ and field in view.required:
                problems.append(f"{path}: {name} makes field {field!r} optional but the schema requires it")
        return problems
    if dataclasses.is_dataclass(kind):
        fields = {f.name: f for f in dataclasses.fields(kind)}
        problems = compare_fields(path, name, view, set(fields))
        # A result's dataclass always has every field; one the server may leave out needs a
        # default for `from_json` to fill in. (A default on a required field is allowed: it
        # stands for what an older server, which did not send it, meant.)
        for field in sorted(set(fields) & (set(view.properties) - view.required)):
            f = fields[field]
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                problems.append(f"{path}: {name}.{field} has no default, but the schema lets the server leave it out")
        return problems
    raise TypeError(f"{path}: {name} is neither a TypedDict nor a dataclass")


def compare_signature(root: Schema, path: str, owner: type, method: str) -> List[str]:
    view = object_view(root, at(root, path))
    name = f"{owner.__name__}.{method}"
    if view is None:
        return [f"{path}: the schema has no object there for {name}"]
    parameters = {
        p.name: p
        for p in inspect.signature(getattr(owner, method)).parameters.values()
        if p.name not in ("self", "cancel", "timeout")
    }
    problems = compare_fields(path, name, view, set(parameters))
    for field in sorted(set(parameters) & set(view.properties)):
        without_default = parameters[field].default is inspect.Parameter.empty
        if without_default and field not in view.required:
            problems.append(f"{path}: {name} requires argument {field!r} that the schema makes optional")
        if not without_default and field in view.required:
            problems.append(f"{path}: {name} makes argument {field!r} optional but the schema requires it")
    return problems


def compare_reads(root: Schema, path: str, known: Reads) -> List[str]:
    view = object_view(root, at(root, path))
    properties = set(view.properties) if view is not None else set()
    problems = [
        f"{path}: the client does not know of field {f!r} that the schema has ({known.reason})"
        for f in sorted(properties - known.fields)
    ]
    problems += [
        f"{path}: the client reads field {f!r} that the schema lacks" for f in sorted(known.fields - properties)
    ]
    return problems


def _skipped(path: str) -> bool:
    return any(path == s or path.startswith((s + ".", s + "[", s + "<")) for s in SKIPPED)


def check(root: Schema) -> List[str]:
    """Every difference between the schema and the client's types; empty when they match."""
    problems: List[str] = []
    in_schema = methods(root)
    problems += [f"{m}: a method the schema has is missing from METHODS" for m in in_schema if m not in METHODS]
    problems += [f"{m}: METHODS names a method the schema lacks" for m in METHODS if m not in in_schema]
    typed: Dict[str, Any] = dict(TYPES)
    for method, (params, result) in METHODS.items():
        if method not in in_schema:
            continue
        if isinstance(params, Reads):
            problems += compare_reads(root, f"params.{method}", params)
        else:
            for owner in (PromptHost, AsyncPromptHost):
                problems += compare_signature(root, f"params.{method}", owner, params)
        if isinstance(result, Reads):
            problems += compare_reads(root, f"results.{method}", result)
        else:
            # A result that is a list (plugins, mcp_status) is typed by its items.
            node = unwrap(root, at(root, f"results.{method}"))
            typed[f"results.{method}[]" if "items" in node else f"results.{method}"] = result
    for path, kind in typed.items():
        try:
            problems += compare_type(root, path, kind)
        except KeyError as e:
            problems.append(f"{path}: {_type_name(kind)} maps to nothing in the schema ({e})")
    # Every object under a typed result or a method's params is accounted for.
    for method, (_, result) in METHODS.items():
        if method not in in_schema:
            continue
        for kind in ("params", "results"):
            for path in object_paths(root, f"{kind}.{method}", at(root, f"{kind}.{method}")):
                if path == f"{kind}.{method}" or path in typed or _skipped(path):
                    continue
                if kind == "results" and isinstance(result, Reads):
                    continue
                problems.append(f"{path}: an object in the schema with no type in TYPES and no reason in SKIPPED")
    return problems


def test_the_client_types_match_the_schema() -> None:
    problems = check(SCHEMA)
    unexplained = [p for p in problems if not any(p.startswith(f"{path}: ") and repr(f) in p for path, f in KNOWN_GAPS)]
    assert not unexplained, "\n".join(unexplained)


def test_every_known_gap_is_still_reported() -> None:
    # An entry outlives its gap otherwise, and would hide the next one.
    problems = check(SCHEMA)
    for path, f in KNOWN_GAPS:
        assert any(p.startswith(f"{path}: ") and repr(f) in p for p in problems), f"{path} {f!r}: closed; drop it"


def editable(schema: Dict[str, Any], path: str) -> Dict[str, Any]:
    """The object schema at `path` in a copy of the schema, to be changed in place."""
    return cast(Dict[str, Any], unwrap(schema, at(schema, path)))


def test_a_field_added_to_a_result_is_reported() -> None:
    schema = copy.deepcopy(SCHEMA)
    # The object the path leads to, wherever its $ref points, is what gets the field.
    target = editable(schema, "results.step")
    target["properties"]["new_field"] = {"type": "string"}
    assert "results.step: StepResult lacks field 'new_field' that the schema has" in check(schema)


def test_a_field_added_to_a_nested_object_and_a_new_requirement_are_reported() -> None:
    schema = copy.deepcopy(SCHEMA)
    cut = editable(schema, "results.mcp_status[].instructions_cut")
    cut["properties"]["ratio"] = {"type": "number"}
    route_spec = editable(schema, "params.step.route")
    route_spec["required"] = [*route_spec["required"], "model"]
    problems = check(schema)
    assert "results.mcp_status[].instructions_cut: InstructionsCut lacks field 'ratio' that the schema has" in problems
    assert "params.step.route: RouteSpec makes field 'model' optional but the schema requires it" in problems


def test_a_new_object_under_a_result_needs_a_type_or_a_reason() -> None:
    schema = copy.deepcopy(SCHEMA)
    target = editable(schema, "results.step")
    target["properties"]["budget"] = {"type": "object", "properties": {"left": {"type": "integer"}}}
    problems = check(schema)
    assert "results.step.budget: an object in the schema with no type in TYPES and no reason in SKIPPED" in problems


def test_a_field_added_to_a_result_the_client_reduces_is_reported() -> None:
    schema = copy.deepcopy(SCHEMA)
    target = editable(schema, "results.close_session")
    target["properties"]["bytes"] = {"type": "integer"}
    assert any(p.startswith("results.close_session: the client does not know of field 'bytes'") for p in check(schema))


def test_the_walk_reads_a_generated_layout() -> None:
    # What schemars writes: results behind $refs, an Option<T> as anyOf [T, null], a struct
    # flattened into allOf. The same comparison holds on it.
    schema = copy.deepcopy(SCHEMA)
    defs = schema["$defs"]
    defs["GeneratedRendered"] = {
        "allOf": [
            {"$ref": "#/$defs/GeneratedRenderedBase"},
            {"type": "object", "properties": {"extra_field": {"type": "integer"}}},
        ]
    }
    defs["GeneratedRenderedBase"] = copy.deepcopy(unwrap(schema, at(schema, "results.render")))
    defs["results"]["properties"]["render"] = {"anyOf": [{"$ref": "#/$defs/GeneratedRendered"}, {"type": "null"}]}
    problems = check(schema)
    assert "results.render: Rendered lacks field 'extra_field' that the schema has" in problems
    assert not [p for p in problems if p.startswith("results.render") and "extra_field" not in p], problems
