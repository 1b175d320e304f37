"""A prompt-host plugin in Python, componentized against ../wit (world `plugin`).

`init` declares, through the imported `registry` interface:

- a fixed section `py:hello` that references the host variable `{{model}}` and this
  plugin's own variable `{{py_assembly}}`,
- a dynamic section `py:scope`, computed per assembly by `section_text`,
- a dynamic variable `py_assembly`, computed per assembly by `variable`,
- a listener `py:stamp`, called with the assembly handle by `on_assemble`.
"""

import json
from typing import Optional

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, registry
from wit_world.imports.assembly import Assembly
from wit_world.imports.types import (
    AssembleContext,
    PluginError_Failed,
    PluginError_InvalidInput,
    ToolSet,
)

HELLO = "py:hello"
SCOPE = "py:scope"
VARIABLE = "py_assembly"
LISTENER = "py:stamp"

DEFAULTS = {"greeting": "These lines come from a Python plugin.", "stamp": "PY"}


def invalid(message: str) -> Err:
    return Err(PluginError_InvalidInput(message))


def declare(what: str, declaration) -> None:
    """Run one declaration; a registry refusal becomes a plugin error naming it."""
    try:
        declaration()
    except Err as e:
        kind = type(e.value).__name__.split("_")[-1].lower()
        raise Err(PluginError_Failed(f"declaring {what}: {kind}: {e.value.value}"))


class Contributor(exports.Contributor):
    # Instance state lives at class level: the host calls into one instance.
    settings = dict(DEFAULTS)
    assemblies = 0
    # The host sends a context only when it changed since this instance's previous call
    # (None = unchanged), so keep the last one.
    context = AssembleContext(scope_chain=[], facts=[])

    def remember(self, cx: Optional[AssembleContext]) -> AssembleContext:
        if cx is not None:
            Contributor.context = cx
        return Contributor.context

    def init(self, config: str) -> None:
        try:
            parsed = json.loads(config)
        except ValueError as e:
            raise invalid(f"invalid config: {e}")
        for key, value in parsed.items():
            if key not in DEFAULTS:
                raise invalid(f'invalid config: unknown key "{key}"')
            if not isinstance(value, str):
                raise invalid(f"invalid config: {key} must be a string")
        Contributor.settings = {**DEFAULTS, **parsed}
        greeting = Contributor.settings["greeting"]

        text = f"You run on {{{{model}}}}. {greeting} This is assembly {{{{{VARIABLE}}}}}."
        declare(HELLO, lambda: registry.declare_section(
            registry.Section(HELLO, 150.0, registry.TextSource_Fixed(text), False)))
        declare(SCOPE, lambda: registry.declare_section(
            registry.Section(SCOPE, 160.0, registry.TextSource_Dynamic(), False)))
        declare(VARIABLE, lambda: registry.declare_variable(
            VARIABLE, registry.VariableSource_Dynamic()))
        declare(LISTENER, lambda: registry.declare_listener(
            LISTENER, registry.ListenerOptions(prepend=False, global_=False)))
        log.log(log.Level.INFO, f"declared {HELLO}, {SCOPE}, {VARIABLE} and {LISTENER}")

    def section_text(self, name: str, context: Optional[AssembleContext]) -> str:
        cx = self.remember(context)
        if name != SCOPE:
            raise invalid(f"unknown section {name}")
        scope = " < ".join(cx.scope_chain) or "global"
        known = ", ".join(key for key, _ in cx.facts) or "none"
        return f"Scope: {scope}. Facts from the caller: {known}."

    def context_text(self, name: str, context: Optional[AssembleContext]) -> str:
        self.remember(context)
        raise invalid(f"unknown context {name}")

    def variable(self, name: str, context: Optional[AssembleContext]) -> Optional[str]:
        self.remember(context)
        if name != VARIABLE:
            raise invalid(f"unknown variable {name}")
        Contributor.assemblies += 1
        return str(Contributor.assemblies)

    def tools(self, key: str, context: Optional[AssembleContext]) -> ToolSet:
        self.remember(context)
        raise invalid(f"unknown tool provider {key}")

    def on_assemble(self, key: str, assembly: Assembly, context: Optional[AssembleContext]) -> None:
        self.remember(context)
        if key != LISTENER:
            raise invalid(f"unknown listener {key}")
        # Let the inner listeners run first, then stamp the result.
        assembly.next()
        names = assembly.section_names()
        text = assembly.section(HELLO)
        if text is not None:
            stamp = Contributor.settings["stamp"]
            assembly.set_section(HELLO, f"{text} [{stamp}: checked {len(names)} sections]")
