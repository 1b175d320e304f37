"""Both clients take every method from one definition (``prompt_host._methods``): the same
parameters, docstring, params sent and result read; `PromptHost`'s waits for the answer,
`AsyncPromptHost`'s is awaited. The in-process hosts inherit them."""

from __future__ import annotations

import inspect

import pytest

from prompt_host import AsyncInProcessHost, AsyncPromptHost, InProcessHost, PromptHost, _methods

#: What each client has beside the protocol's methods: its life cycle and the wire.
TRANSPORT = {
    PromptHost: {"call", "cancel_request", "close", "kill", "notifications", "notify", "pid", "returncode", "send",
                 "send_raw", "stderr_tail"},
    AsyncPromptHost: {"aclose", "call", "cancel_request", "kill", "notifications", "notify", "pid", "returncode",
                      "send_raw", "start", "stderr_tail"},
}
TRANSPORT[InProcessHost] = TRANSPORT[PromptHost]
TRANSPORT[AsyncInProcessHost] = TRANSPORT[AsyncPromptHost]


@pytest.mark.parametrize("client", list(TRANSPORT), ids=lambda c: c.__name__)
def test_every_method_comes_from_the_table(client: type) -> None:
    public = {name for name in dir(client) if not name.startswith("_")}
    assert public == TRANSPORT[client] | {spec.__name__ for spec in _methods.METHODS}
    for spec in _methods.METHODS:
        method = getattr(client, spec.__name__)
        assert method.__wrapped__ is spec, spec.__name__
        assert method.__doc__ == spec.__doc__, spec.__name__
        assert inspect.iscoroutinefunction(method) == issubclass(client, AsyncPromptHost), spec.__name__


@pytest.mark.parametrize("spec", _methods.METHODS, ids=lambda s: s.__name__)
def test_a_method_has_its_definitions_parameters(spec) -> None:
    expected = list(inspect.signature(spec).parameters.values())
    for client in (PromptHost, AsyncPromptHost):
        method = getattr(client, spec.__name__)
        assert list(inspect.signature(method).parameters.values())[1:] == expected
        # Bound, as a caller sees it.
        assert list(inspect.signature(method.__get__(object())).parameters.values()) == expected
