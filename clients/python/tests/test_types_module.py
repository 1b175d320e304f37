"""The public types module: ``prompt_host.types`` holds the protocol's types, and the package
exports each of them as the same object."""

from __future__ import annotations

import prompt_host
import prompt_host.types


def test_every_public_type_is_exported_by_the_package() -> None:
    for name in prompt_host.types.__all__:
        assert getattr(prompt_host, name) is getattr(prompt_host.types, name), name
        assert name in prompt_host.__all__, name


def test_the_result_classes_live_in_the_public_module() -> None:
    for name in ("StepResult", "Rendered", "Assembly", "McpStatus", "Notification", "ToolCall", "Usage"):
        assert getattr(prompt_host, name).__module__ == "prompt_host.types", name
