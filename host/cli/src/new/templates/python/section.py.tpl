"""__NAME__: a prompt-host plugin in Python that contributes two system-prompt sections,
componentized against wit/0.1.0 (world `plugin`).

- `__NAME__:rules` is fixed: `init` hands its text to the host, which stores it, so an
  assembly never calls into the plugin for it. `{{cwd}}` is a host variable filled from the
  caller's `cwd` fact (`prompt-host render --fact cwd=/work`); rendering fails without it.
- `__NAME__:scope` is dynamic: the host calls `section_text` for it once per assembly.

Sections render in ascending order: -100 is the harness identity, 0 the persona, 100-199
tool guidance.
"""

__IMPORTS__
RULES = "__NAME__:rules"
SCOPE = "__NAME__:scope"

DEFAULTS = {"rules": "Work in {{cwd}}. Keep answers short."}


__PRELUDE__

class Contributor(Base):
    settings = dict(DEFAULTS)

    def init(self, config: str) -> None:
        Contributor.settings = parse_config(config, DEFAULTS)
        rules = Contributor.settings["rules"]
        declare(RULES, lambda: registry.declare_section(
            registry.Section(RULES, 150.0, registry.TextSource_Fixed(rules), False)))
        declare(SCOPE, lambda: registry.declare_section(
            registry.Section(SCOPE, 160.0, registry.TextSource_Dynamic(), False)))
        log.log(log.Level.DEBUG, f"declared {RULES} and {SCOPE}")

    def section_text(self, name: str, context: Optional[AssembleContext]) -> str:
        cx = self.remember(context)
        if name != SCOPE:
            raise not_declared("dynamic section", name)
        if cx.scope_chain:
            return f"This assembly is for scope {cx.scope_chain[0]}."
        return "This assembly is for the global scope."
