"""Plugins from an OCI registry through the client, over both transports: a real registry
(CNCF distribution, Debian's ``docker-registry``) on loopback, a plugin pushed with the
``prompt-host push`` command, then loaded with ``load_plugin("…", "oci://…")``.

The in-process host and ``serve`` give the same answers: the plugin loads by tag and by
digest (with the digests in the answer), renders, and a pin that is not the component, a
missing tag and a stopped registry are refused with kind ``oci`` naming the reference.
Skipped, saying why, where the registry is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from prompt_host import PromptHostError

from conftest import IDENTITY

REGISTRY_BINARY = shutil.which("docker-registry") or "/usr/bin/docker-registry"

pytestmark = pytest.mark.skipif(
    not Path(REGISTRY_BINARY).is_file(),
    reason="needs CNCF distribution (apt-get install docker-registry; .ci/run installs it)",
)


class Registry:
    def __init__(self, root: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        config = root / "registry.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
            f"http:\n  addr: {self.address}\n  secret: prompt-host-tests\n"
        )
        self.process = subprocess.Popen(
            [REGISTRY_BINARY, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the registry did not listen"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    r = Registry(tmp_path)
    yield r
    r.stop()


GREETER = {"sections": [{"name": "greeting", "order": 10, "text": "Hello from the registry."}]}


def greeter(section: str) -> dict:
    """The declare plugin's config with a section of its own (one name per scope)."""
    return {"sections": [{"name": section, "order": 20, "text": f"{section}."}]}


def push(bin_path: Path, file: str, reference: str, registry: Registry, cache: Path) -> dict:
    done = subprocess.run(
        [str(bin_path), "push", file, reference, "--plain-http", registry.address],
        capture_output=True,
        text=True,
        env={"PROMPT_HOST_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(cache)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_oci_plugin_loads_by_tag_and_by_digest_and_refusals_name_the_reference(
    open_host, bin_path: Path, registry: Registry, wasm: Callable[[str], str], tmp_path: Path
) -> None:
    reference = f"oci://{registry.address}/plugins/greeter:1.0"
    pushed = push(bin_path, wasm("declare"), reference, registry, tmp_path)
    config = tmp_path / "host.toml"
    config.write_text(f'[[scope]]\nname = "agent"\n\n[host.registry]\nplain_http = ["{registry.address}"]\n')
    host = open_host(config=config)

    first = host.call("load_plugin", {"name": "greeter", "wasm": reference, "config": GREETER})
    assert first["manifest"] == pushed["manifest"] and first["component"] == pushed["component"]
    assert host.render().prompt == f"{IDENTITY}\n\nHello from the registry."
    by_digest = host.load_plugin("pinned", pushed["pinned"], scope="agent", config=greeter("pinned"), sha256=pushed["component"])
    assert by_digest > first["id"]

    # A plugin's new tag, taken by reloading it: the same declarations from the verified
    # component.
    newer = f"oci://{registry.address}/plugins/greeter:1.1"
    push(bin_path, wasm("declare"), newer, registry, tmp_path)
    assert host.reload_plugin(first["id"], newer) == 1

    with pytest.raises(PromptHostError) as wrong_pin:
        host.load_plugin("wrong", reference, scope="agent", config=GREETER, sha256="0" * 64)
    assert wrong_pin.value.kind == "oci" and wrong_pin.value.plugin == "wrong"
    assert f"{reference} resolves to component {pushed['component']}, but its sha256 pins {'0' * 64}; refused" in str(wrong_pin.value)

    missing = f"oci://{registry.address}/plugins/greeter:nope"
    with pytest.raises(PromptHostError) as no_tag:
        host.load_plugin("missing", missing, scope="agent", config=GREETER)
    assert no_tag.value.kind == "oci"
    assert f'{missing}: the registry has no tag "nope" in plugins/greeter' in str(no_tag.value)

    # Stopped: what the content store holds still loads by digest; a new tag cannot.
    registry.stop()
    again = host.load_plugin("offline", pushed["pinned"], scope="agent", config=greeter("offline"))
    assert again > by_digest
    other = f"oci://{registry.address}/plugins/other:1.0"
    with pytest.raises(PromptHostError) as unreachable:
        host.load_plugin("other", other, scope="agent", config=GREETER)
    assert unreachable.value.kind == "oci"
    assert f"{other}: cannot reach the registry {registry.address}" in str(unreachable.value)


@pytest.mark.invalid_params
def test_a_malformed_reference_is_invalid_params(open_host) -> None:
    host = open_host()
    with pytest.raises(PromptHostError) as bad:
        host.load_plugin("p", "oci://localhost:5000/plugins/greeter")
    assert bad.value.code == -32602
    assert "wasm: oci://localhost:5000/plugins/greeter names no tag and no digest" in str(bad.value)


def test_a_host_toml_with_an_oci_plugin_starts_locked_and_then_offline(
    open_host, bin_path: Path, registry: Registry, wasm: Callable[[str], str], tmp_path: Path
) -> None:
    reference = f"oci://{registry.address}/plugins/greeter:2.0"
    pushed = push(bin_path, wasm("declare"), reference, registry, tmp_path)
    config = tmp_path / "host.toml"
    config.write_text(
        f'[host.registry]\nplain_http = ["{registry.address}"]\n\n'
        f'[[plugin]]\nname = "greeter"\nwasm = "{reference}"\n'
        'config = { sections = [{ name = "greeting", order = 10, text = "Hello from the registry." }] }\n'
    )
    first = open_host(config=config)
    assert first.render().prompt == f"{IDENTITY}\n\nHello from the registry."
    lock = (tmp_path / "host.lock").read_text()
    assert f'reference = "{reference}"' in lock and f'manifest = "{pushed["manifest"]}"' in lock
    # The registry gone, the lock and the content store start it again.
    registry.stop()
    again = open_host(config=config)
    assert again.render().prompt == f"{IDENTITY}\n\nHello from the registry."
