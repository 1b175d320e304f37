def invalid(message: str) -> Err:
    """An error for the host: raising `Err(PluginError_…)` makes the export return `err`.
    Any other exception traps the instance, so catch what you can."""
    return Err(PluginError_InvalidInput(message))


def not_declared(what: str, name: str) -> Err:
    """The error for a callback the host only calls for entries declared dynamic."""
    return invalid(f'no {what} "{name}"')


def parse_config(text: str, defaults: dict) -> dict:
    """The config (host.toml's `config` table as JSON text) over `defaults`: unknown keys and
    values of another type are refused, so a typo fails the load instead of being ignored."""
    try:
        parsed = json.loads(text)
    except ValueError as e:
        raise invalid(f"invalid config: {e}")
    for key, value in parsed.items():
        if key not in defaults:
            raise invalid(f'invalid config: unknown key "{key}"')
        if type(value) is not type(defaults[key]):
            raise invalid(f"invalid config: {key}: expected {type(defaults[key]).__name__}")
    return {**defaults, **parsed}


def declare(what: str, declaration) -> None:
    """Run one declaration; a registry refusal becomes a plugin error naming it."""
    try:
        declaration()
    except Err as e:
        kind = type(e.value).__name__.split("_")[-1].lower()
        raise Err(PluginError_Failed(f"declaring {what}: {kind}: {e.value.value}"))


class Base(exports.Contributor):
    """Every export, refusing what this plugin does not declare; `Contributor` overrides the
    ones it needs. Instance state lives at class level: the host calls one instance."""

    # The host sends the context only when it changed since this instance's previous call
    # (None = unchanged), so keep the last one.
    context = AssembleContext(scope_chain=[], facts=[])

    def remember(self, cx: Optional[AssembleContext]) -> AssembleContext:
        if cx is not None:
            Base.context = cx
        return Base.context

    def init(self, config: str) -> None:
        raise invalid("init is not implemented")

    def section_text(self, name: str, context: Optional[AssembleContext]) -> str:
        self.remember(context)
        raise not_declared("dynamic section", name)

    def context_text(self, name: str, context: Optional[AssembleContext]) -> str:
        self.remember(context)
        raise not_declared("dynamic context", name)

    def variable(self, name: str, context: Optional[AssembleContext]) -> Optional[str]:
        self.remember(context)
        raise not_declared("dynamic variable", name)

    def tools(self, key: str, context: Optional[AssembleContext]) -> ToolSet:
        self.remember(context)
        raise not_declared("tool provider", key)

    def on_assemble(self, key: str, assembly: Assembly, context: Optional[AssembleContext]) -> None:
        self.remember(context)
        raise not_declared("listener", key)
