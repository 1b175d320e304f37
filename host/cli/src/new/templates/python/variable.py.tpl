"""__NAME__: a prompt-host plugin in Python that declares a dynamic variable,
`{{__SNAKE___scope}}`, and a fixed section that uses it, componentized against wit/0.1.0
(world `plugin`).

- `__SNAKE___scope` is a dynamic variable: the host calls `variable` for it once per
  assembly. Any section's text may reference it as `{{__SNAKE___scope}}`, whichever plugin
  declared the section; a reference to a variable without a value (None) is an error, never
  an empty string. Variable names match `^[a-z][a-z0-9_]*$`.
- `__NAME__:where` is a fixed section: the host stores its text at `init`.
"""

__IMPORTS__
VARIABLE = "__SNAKE___scope"
SECTION = "__NAME__:where"
SECTION_TEXT = "This prompt is assembled for {{__SNAKE___scope}}."

DEFAULTS = {"unscoped": "the global scope"}


__PRELUDE__

class Contributor(Base):
    settings = dict(DEFAULTS)

    def init(self, config: str) -> None:
        Contributor.settings = parse_config(config, DEFAULTS)
        declare(VARIABLE, lambda: registry.declare_variable(
            VARIABLE, registry.VariableSource_Dynamic()))
        declare(SECTION, lambda: registry.declare_section(
            registry.Section(SECTION, 150.0, registry.TextSource_Fixed(SECTION_TEXT), False)))
        log.log(log.Level.DEBUG, f"declared {VARIABLE} and {SECTION}")

    def variable(self, name: str, context: Optional[AssembleContext]) -> Optional[str]:
        cx = self.remember(context)
        if name != VARIABLE:
            raise not_declared("dynamic variable", name)
        if cx.scope_chain:
            return "scope " + " < ".join(cx.scope_chain)
        return Contributor.settings["unscoped"]
