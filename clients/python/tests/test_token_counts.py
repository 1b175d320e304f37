"""A plugin's section of a million spaces is counted, over ``serve`` and in process alike.

tiktoken (Python and Rust) panics on such a run: the host's count of it used to be a panic,
which ``serve`` never answered and which the in-process host reported as the server having
exited. The counts are o200k_base's own: the spaces at the end of the prompt are one piece,
encoded 128 to a token (7,813 tokens), after the rule's 4."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable

from prompt_host import PromptHost

BLANK = " " * 1_000_000
RULES = "I am Ada."


def config_with_blank(tmp_path: Path, wasm: Callable[[str], str]) -> Path:
    """A rule and a dynamic section of a million spaces, counted with o200k_base on every
    rendering (the token budget is under the prompt's bytes)."""
    config = tmp_path / "host.toml"
    config.write_text(
        '[prompt]\ninclude_harness_identity = false\ntokenizer = "o200k_base"\nmax_prompt_tokens = 100000\n\n'
        f'[[plugin]]\nname = "blank"\nwasm = {json.dumps(wasm("declare"))}\n'
        f'config = {{ sections = [{{ name = "rules", order = 100, text = "{RULES}" }}, '
        f'{{ name = "blank", order = 200, text = {{ dynamic = "{BLANK}" }} }}] }}\n'
    )
    return config


def test_a_section_of_a_million_spaces_is_counted_by_render_and_step(
    open_host: Callable[..., PromptHost], wasm: Callable[[str], str], tmp_path: Path
) -> None:
    host = open_host(config=config_with_blank(tmp_path, wasm))
    rendered = host.render(tokens=True)
    assert rendered.prompt == f"{RULES}\n\n{BLANK}"
    t = rendered.tokens
    assert t is not None
    assert (t.tokenizer, t.prompt, t.sections_sum, t.context) == ("o200k_base", 7817, 7817, 0)
    assert [(p.name, p.bytes, p.tokens) for p in t.sections] == [("rules", 9, 4), ("blank", 1_000_000, 7813)]
    step = host.step(tmp_path / "s.jsonl", user="hi", tokens=True)
    assert step.tokens is not None and dataclasses.replace(step.tokens, tools_as=None) == t
    # The host goes on.
    assert host.describe().protocol
