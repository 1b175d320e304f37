"""The native module's stub (``prompt_host/_native.pyi``) against the module itself: the
installed package ships the stub beside the module, and the stub names what the module
exposes, no more and no less, each function and method with the module's parameters. A
change to host/python that the stub does not follow fails here."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import prompt_host
from prompt_host import native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="the native module is not installed")

STUB = Path(prompt_host.__file__).parent / "_native.pyi"


def _params(node: ast.FunctionDef) -> List[str]:
    args = node.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg not in ("self", "cls")]


def _stub() -> Dict[str, object]:
    """The stub's public names: a function's parameters, a class's methods with theirs, a
    constant as ``None``."""
    names: Dict[str, object] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = _params(node)
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {
                item.name: _params(item)
                for item in node.body
                if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_") or item.name == "__new__")
            }
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if not node.target.id.startswith("_") or node.target.id == "__version__":
                names[node.target.id] = None
    return names


def _runtime_params(obj: object) -> Optional[List[str]]:
    """The parameters PyO3 wrote into ``__text_signature__`` (``($self, line)``; a class's
    is its constructor's), read directly: `inspect` reads a class's only from Python 3.10 on,
    and on 3.9 the module (abi3) has none for a class (`None` then)."""
    text = getattr(obj, "__text_signature__", None)
    if text is None:
        return None
    names = [part.split("=")[0].strip().lstrip("$*") for part in text.strip("()").split(",")]
    return [name for name in names if name and name not in ("self", "cls", "/")]


def test_the_package_ships_the_stub_beside_the_module() -> None:
    from prompt_host import _native

    assert Path(_native.__file__).parent == STUB.parent
    assert STUB.is_file()


def test_the_stub_names_what_the_module_exposes() -> None:
    from prompt_host import _native

    stub = _stub()
    assert sorted(stub) == sorted(_native.__all__)
    for name, expected in stub.items():
        value = getattr(_native, name)
        if isinstance(expected, dict):
            public = {m for m in vars(value) if not m.startswith("_")}
            assert sorted(m for m in expected if m != "__new__") == sorted(public), name
            for method, params in expected.items():
                runtime = _runtime_params(value if method == "__new__" else getattr(value, method))
                if runtime is not None or sys.version_info >= (3, 10):
                    assert params == runtime, f"{name}.{method}"
        elif isinstance(expected, list):
            assert expected == _runtime_params(value), name

