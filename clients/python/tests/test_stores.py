"""Sessions in a database through both transports: SQLite (``sqlite:PATH#ID``) and
PostgreSQL (``postgres://…#ID``, the server ``PROMPT_HOST_TEST_POSTGRES`` names; ``.ci/run``
starts one), and a session named by its id alone within host.toml's ``[sessions] store``.
Two hosts taking turns on one session each read what the other wrote; a ``conflict`` (two
writers racing, tested in the Rust suite) carries the session and both seqs; bad names are
refused."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Callable

import pytest

from prompt_host import PromptHost, PromptHostError


def test_two_hosts_on_one_sqlite_session_take_turns_and_each_catches_up(open_host, tmp_path: Path) -> None:
    session = f"sqlite:{tmp_path / 'sessions.db'}#agent '7'; DROP TABLE events"
    first, second = open_host(), open_host()
    facts = {"model": "m"}
    for turn in range(3):
        # Each host's request first reads what the other one wrote: turns never conflict.
        a = first.step(session, facts=facts, user=[f"turn {turn} from the first"])
        assert a.step == 2 * turn
        first.append_assistant(session, text="ok")
        b = second.step(session, facts=facts, user=[f"turn {turn} from the second"])
        assert b.step == 2 * turn + 1
        second.append_assistant(session, text="ok")
        replayed = first.request(session)
        assert replayed.step == 2 * turn + 1
        assert replayed.request == b.request


def test_a_conflict_names_the_session_and_the_seqs() -> None:
    error = PromptHostError.from_error(
        {
            "code": -32000,
            "message": "session sqlite:s.db#a: another writer appended first (this writer expected seq 4, "
            "the session is at seq 9); nothing was written (open the session again to continue)",
            "data": {"kind": "conflict", "session": "sqlite:s.db#a", "expected": 4, "actual": 9},
        }
    )
    assert (error.kind, error.session, error.expected, error.actual) == ("conflict", "sqlite:s.db#a", 4, 9)


def test_bad_sqlite_session_names_are_refused_with_their_reason(host, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    for name, reason in [
        (f"sqlite:{db}#", 'session id "": is empty'),
        (f"sqlite:{db}#a\x00b", "holds the control character U+0000"),
        (f"sqlite:{db}#{'x' * 1_000_000}", "is 1000000 bytes long; at most 512 are allowed"),
        (f"sqlite:{db}", "a SQLite session is named sqlite:PATH#ID"),
    ]:
        with pytest.raises(PromptHostError) as refused:
            host.step(name, facts={"model": "m"}, user=["hi"])
        assert refused.value.kind == "session"
        assert reason in refused.value.message
    assert not db.exists()


def postgres_store() -> str:
    """The PostgreSQL store of the suite: a database on the server the suite was given."""
    base = os.environ.get("PROMPT_HOST_TEST_POSTGRES")
    if not base:
        pytest.skip("PROMPT_HOST_TEST_POSTGRES is not set (.ci/run starts PostgreSQL and sets it)")
    return f"{base.rstrip('/')}/postgres"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of many sessions: a SQLite database in the test's directory, or the
    PostgreSQL server's (ids are unique per test, so both transports share it)."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'sessions.db'}"
    return postgres_store()


def test_a_session_is_named_by_its_id_within_the_configured_store(
    open_host: Callable[..., PromptHost], store: str, tmp_path: Path
) -> None:
    config = tmp_path / "host.toml"
    config.write_text(f"[sessions]\nstore = {json.dumps(store)}\n")
    session = f"agent '7'; DROP TABLE events -- {uuid.uuid4()}"
    first, second = open_host(config=config), open_host(config=config)
    facts = {"model": "m"}
    for turn in range(2):
        a = first.step(session, facts=facts, user=[f"turn {turn} from the first"])
        assert a.step == 2 * turn
        first.append_assistant(session, text="ok")
        b = second.step(session, facts=facts, user=[f"turn {turn} from the second"])
        assert b.step == 2 * turn + 1
        second.append_assistant(session, text="ok")
    # The same session by its full name: the id is the store's, nothing else.
    assert first.request(f"{store}#{session}").request == b.request
    # An id the store cannot hold is refused with its reason, and names no password.
    with pytest.raises(PromptHostError) as refused:
        first.step("a\x00b", facts=facts, user=["hi"])
    assert refused.value.kind == "session"
    assert "holds the control character U+0000" in refused.value.message
    # file: still names a log file.
    log = tmp_path / "own.jsonl"
    first.step(f"file:{log}", facts=facts, user=["hi"])
    assert log.exists()
