"""__NAME__: a prompt-host plugin in Python with an assembly listener that rewrites a
section, componentized against wit/0.1.0 (world `plugin`).

The host runs the listeners of an assembly as a waterfall: each receives the assembly as a
handle, may change it, and calls `assembly.next()` to run the listeners inside it; afterwards
the handle holds their result. Not calling `next()` short-circuits: the inner listeners do
not run. A listener pays only for what it reads and writes through the handle.

This plugin declares a fixed section, `__NAME__:outline`, and a listener (key `__NAME__`)
that, after `next()`, rewrites that section to list the sections the prompt ends up with.
"""

__IMPORTS__
LISTENER = "__NAME__"
OUTLINE = "__NAME__:outline"

DEFAULTS = {"intro": "Sections of this prompt:"}


__PRELUDE__

class Contributor(Base):
    settings = dict(DEFAULTS)

    def init(self, config: str) -> None:
        Contributor.settings = parse_config(config, DEFAULTS)
        intro = Contributor.settings["intro"]
        # The fixed text stands when the listener does not run.
        declare(OUTLINE, lambda: registry.declare_section(
            registry.Section(OUTLINE, 190.0, registry.TextSource_Fixed(intro), False)))
        # Appended (not prepended), receiving the assemblies of its scope and descendants.
        declare(LISTENER, lambda: registry.declare_listener(
            LISTENER, registry.ListenerOptions(prepend=False, global_=False)))
        log.log(log.Level.DEBUG, f"declared {OUTLINE} and the listener {LISTENER}")

    def on_assemble(self, key: str, assembly: Assembly, context: Optional[AssembleContext]) -> None:
        self.remember(context)
        if key != LISTENER:
            raise not_declared("listener", key)
        # Let the rest of the chain run first, so the outline sees what it added. An inner
        # failure raises Err here; let it propagate (it fails the assembly anyway).
        assembly.next()
        names = assembly.section_names()
        intro = Contributor.settings["intro"]
        assembly.set_section(OUTLINE, f"{intro} {', '.join(names)}.")
