"""__NAME__: a prompt-host plugin in Python that provides a tool, `__SNAKE___word_count`, and a
fixed section telling the model when to use it, componentized against wit/0.1.0 (world
`plugin`).

- The tool comes from a dynamic tool provider (key `__NAME__`): the host calls `tools` once
  per assembly, so the set can depend on the scope and the caller's facts. Here a parameter's
  description names the working directory when the caller passed a `cwd` fact. A set that
  never changes is better declared fixed (`registry.ToolSource_Fixed(tool_set)`).
- Tools reach the model beside the system prompt, not in it: `prompt-host assemble` lists
  them with their parameters, a JSON Schema object sent as JSON text.
- `__NAME__:tools` is a fixed section in the tool-guidance band (orders 100-199).
"""

__IMPORTS__
PROVIDER = "__NAME__"
TOOL = "__SNAKE___word_count"
GUIDANCE = "__NAME__:tools"

DEFAULTS = {"max_bytes": 1000000}


__PRELUDE__

def word_count(max_bytes: int, cwd: Optional[str]) -> ToolSchema:
    """The tool's schema: what the model sees to decide whether and how to call it."""
    relative_to = f"relative to {cwd}" if cwd is not None else "relative to the working directory"
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": f"The file's path, {relative_to}."},
            "words_only": {"type": "boolean", "description": "Report the word count alone."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    return ToolSchema(
        name=TOOL,
        description=f"Count the lines, words and bytes of a text file of at most {max_bytes} bytes.",
        parameters=json.dumps(parameters),
    )


class Contributor(Base):
    settings = dict(DEFAULTS)

    def init(self, config: str) -> None:
        Contributor.settings = parse_config(config, DEFAULTS)
        declare(PROVIDER, lambda: registry.declare_tools(registry.ToolSource_Dynamic(PROVIDER)))
        text = f"Use {TOOL} to measure a text file instead of reading it whole."
        declare(GUIDANCE, lambda: registry.declare_section(
            registry.Section(GUIDANCE, 150.0, registry.TextSource_Fixed(text), False)))
        log.log(log.Level.DEBUG, f"declared the tool provider {PROVIDER}")

    def tools(self, key: str, context: Optional[AssembleContext]) -> ToolSet:
        cx = self.remember(context)
        if key != PROVIDER:
            raise not_declared("tool provider", key)
        cwd = next((value for fact, value in cx.facts if fact == "cwd"), None)
        # known_names=None: the names in `schemas`.
        schema = word_count(Contributor.settings["max_bytes"], cwd)
        return ToolSet(schemas=[schema], known_names=None)
