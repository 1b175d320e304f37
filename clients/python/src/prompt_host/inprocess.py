"""The host in this process: `InProcessHost` and `AsyncInProcessHost` run ``prompt-host
serve`` inside the Python process (the package's native module, on threads of its own)
instead of as a child process. They are `PromptHost` and `AsyncPromptHost` with the pipe and
the process taken away: the same methods, results, errors (`PromptHostError`, `RouteError`,
`RequestCancelled`, `ServerExited` when the in-process server stopped), notifications and
cancellation, because the same JSON-RPC lines pass between the same client code and the same
server code. Every blocking call into the native module releases the GIL, and the host's
work (plugins, the session log's writes) runs on the server's own threads.

One difference is invisible to the types: a step's ``request`` (most of its result) stays the
host's value until `StepResult.request` is first read, and `StepResult.request_json` writes
it as the HTTP body without building it as Python objects at all.

A plugin's trap, an exhausted limit or a hung plugin fails that request as it would over
``serve``; nothing a plugin does can take the Python process down (its memory, stack and time
are bounded by the sandbox).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import subprocess
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Mapping, Optional

from . import _wire
from ._wire import CancelToken, PathLike
from .aio import _LINE_LIMIT, AsyncPromptHost, Trace
from .client import PromptHost
from .errors import PromptHostError
from .types import Notification

if TYPE_CHECKING:
    from ._native import InProcessServer, StepRequest

#: The kind of `InProcessServer.call`'s answer that is an error (the others are results).
_ERROR_JSON = 2

__all__ = ["AsyncInProcessHost", "InProcessHost", "native_available"]


#: The plugins the wheel ships (``prompt_host/plugins/NAME.wasm``), found by name:
#: ``wasm = "persona"`` in host.toml, ``load_plugin(..., wasm="persona")``.
PLUGINS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")


def _load_native() -> None:
    """Import the native module (else an `ImportError` that says where it comes from) and
    tell it where the package's plugins are."""
    try:
        from . import _native
    except ImportError as e:
        raise ImportError(
            "prompt_host's native module is not installed: the in-process host comes with the "
            "prompt-host wheel (README: 'Install'); PromptHost and AsyncPromptHost need only the "
            "prompt-host binary"
        ) from e
    # The native module is a library inside the Python process, so it cannot find the
    # package's plugins beside an executable as the binary does: the package tells it where
    # they are, before any host or command line runs.
    _native.set_bundled_plugins(PLUGINS_DIR)


def native_available() -> bool:
    """Whether this installation has the native module (the wheel's in-process host and
    command line)."""
    try:
        _load_native()
    except ImportError:
        return False
    return True


def _server(
    config: Optional[PathLike], max_request_bytes: Optional[int], cache_dir: Optional[PathLike]
) -> InProcessServer:
    _load_native()
    from ._native import InProcessServer

    return InProcessServer(
        os.fspath(config) if config is not None else None,
        max_request_bytes,
        os.fspath(cache_dir) if cache_dir is not None else None,
    )


def _stderr_line(server: InProcessServer) -> Optional[bytes]:
    """The server's next stderr line as a pipe would give it (bytes); `None` at the end."""
    line = server.read_stderr_line()
    return None if line is None else line.encode("utf-8")


class _Stdin:
    def __init__(self, server: InProcessServer) -> None:
        self._server = server

    def write(self, data: bytes) -> None:
        self._server.write(bytes(data))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._server.close_input()


class _Lines:
    """A reader of lines, iterated as a pipe's lines are (each ends with a newline)."""

    def __init__(self, read: Callable[[], Optional[bytes]]) -> None:
        self._read = read

    def __iter__(self) -> Iterator[bytes]:
        while True:
            line = self._read()
            if line is None:
                return
            yield line + b"\n"


class _Process:
    """The in-process server in the shape of the `subprocess.Popen` that `PromptHost` drives."""

    def __init__(self, server: InProcessServer) -> None:
        self._server = server
        self.pid = os.getpid()
        self.returncode: Optional[int] = None
        self.stdin = _Stdin(server)
        self.stdout = _Lines(server.read_line)
        self.stderr = _Lines(lambda: _stderr_line(server))

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self._server.poll()
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        status = self._server.wait(timeout)
        if status is None:
            raise subprocess.TimeoutExpired("prompt-host serve (in process)", timeout or 0.0)
        self.returncode = int(status)
        return self.returncode

    def kill(self) -> None:
        self._server.kill()


class InProcessHost(PromptHost):
    """`PromptHost` with the host in this process: ``prompt-host serve`` runs on threads of
    its own inside Python, and requests and answers pass through memory instead of a pipe.
    A call without ``cancel`` or ``timeout`` is answered to the calling thread directly (the
    request runs through the server as a line's would, and a step's result arrives as Python
    objects built from the host's own values, with no JSON text in between); one with either
    goes as a line, so that it can be cancelled as over ``serve``. Both give the same results
    and errors, in the same order with the notifications.

    ``config``: a host.toml (else an empty default host). ``cache_dir``: the compile cache
    (else ``PROMPT_HOST_CACHE_DIR``, else the user's cache directory). The other options are
    `PromptHost`'s. Relative paths (``config``, a plugin's ``wasm``, a ``session``) are taken
    from this process's working directory. A host.toml that cannot be loaded stops the
    server: calls raise `ServerExited` with the error in its ``stderr``, as over ``serve``.

    Use it as a context manager, or call `close`.
    """

    def __init__(
        self,
        config: Optional[PathLike] = None,
        *,
        max_request_bytes: Optional[int] = None,
        cache_dir: Optional[PathLike] = None,
        on_notification: Optional[Callable[[Notification], None]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        trace: Optional[Trace] = None,
        cancel_wait: float = 30.0,
    ) -> None:
        process = _Process(_server(config, max_request_bytes, cache_dir))
        # Before the reader starts (in the base class), which counts the lines.
        self._native_server = process._server
        self._lines = threading.Condition()
        self._lines_read = 0
        self._output_ended = False
        super().__init__(
            config,
            max_request_bytes=max_request_bytes,
            on_notification=on_notification,
            on_stderr=on_stderr,
            trace=trace,
            cancel_wait=cancel_wait,
            _process=process,
        )

    def _line_read(self, end: bool = False) -> None:
        with self._lines:
            if end:
                self._output_ended = True
            else:
                self._lines_read += 1
            self._lines.notify_all()

    def _after_lines(self, count: int) -> None:
        """Wait until the reader delivered the first ``count`` lines of the output (the
        notifications queued before an answer are delivered before it, as over a pipe)."""
        with self._lines:
            while self._lines_read < count and not self._output_ended:
                self._lines.wait(0.1)

    def call(
        self,
        method: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
    ) -> Any:
        """Send a request and wait for its raw result: directly when neither ``cancel`` nor
        ``timeout`` is given (and not from a notification callback), else as a line."""
        return self._direct(method, params, cancel, timeout, deferred=False)

    def _call_step(
        self, method: str, params: Mapping[str, Any], cancel: Optional[CancelToken], timeout: Optional[float]
    ) -> Any:
        return self._direct(method, params, cancel, timeout, deferred=True)

    def _direct(
        self,
        method: str,
        params: Optional[Mapping[str, Any]],
        cancel: Optional[CancelToken],
        timeout: Optional[float],
        *,
        deferred: bool,
    ) -> Any:
        """`call`; with ``deferred``, a step's ``request`` stays the native ``StepRequest``
        (converted when `StepResult.request` is read), else it is converted here."""
        self._check_process(method)
        if cancel is not None or timeout is not None or threading.current_thread() is self._reader:
            return super().call(method, params, cancel=cancel, timeout=timeout)
        id = next(self._ids)
        message = _wire.request_message(id, method, params)
        data = _wire.encode(message)
        refused = _wire.too_large(data, self.max_request_bytes, method)
        if refused is not None:
            raise refused
        if self._exited is not None or self._stdin_failed:
            raise self._exit_error(method)
        if self._trace is not None:
            self._trace("send", message)
        answered = self._native_server.call(data.decode("utf-8"))
        if answered is None:
            # The server is not running (it failed to start, or stopped): as over serve.
            self._reader.join(5)
            raise self._exit_error(method)
        kind, payload, lines = answered
        self._after_lines(lines)
        response: Dict[str, Any] = {"jsonrpc": "2.0", "id": id}
        native_request: Optional[StepRequest] = None
        if isinstance(payload, str):
            # A result or an error object as JSON text.
            response["error" if kind == _ERROR_JSON else "result"] = json.loads(payload)
        else:
            # A result as objects: a step's request is still the host's value.
            response["result"] = payload
            request = payload.get("request")
            if request is not None and not isinstance(request, dict):
                native_request = request
                if not deferred:
                    payload["request"] = request.to_python()
        if self._trace is not None:
            traced = response
            if native_request is not None and deferred:
                # The trace sees the response as a line carries it; the caller's request
                # stays unconverted.
                traced = {**response, "result": {**response["result"], "request": native_request.to_python()}}
            try:
                self._trace("recv", traced)
            except Exception:
                pass
        if "error" in response:
            raise PromptHostError.from_error(response["error"], method=method)
        return response["result"]


class _AsyncStdin:
    """The server's input as an asyncio stream writer: lines are handed over in order by one
    thread (handing over waits while the server is behind), and `drain` waits for them."""

    def __init__(self, server: InProcessServer) -> None:
        self._server = server
        self._writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="prompt-host-input")
        self._last: Optional[concurrent.futures.Future[None]] = None
        self._closing = False

    def write(self, data: bytes) -> None:
        if self._closing:
            raise BrokenPipeError("the server's input is closed")
        self._last = self._writer.submit(self._server.write, bytes(data))

    async def drain(self) -> None:
        last = self._last
        if last is not None:
            await asyncio.wrap_future(last)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        # After the lines before it.
        self._writer.submit(self._server.close_input)
        self._writer.shutdown(wait=False)


def _feed(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, read: Callable[[], Optional[bytes]]) -> None:
    """Move lines from ``read`` (blocking) into ``reader`` until the end, on this thread."""
    while True:
        line = read()
        try:
            if line is None:
                loop.call_soon_threadsafe(reader.feed_eof)
                return
            loop.call_soon_threadsafe(reader.feed_data, line + b"\n")
        except RuntimeError:
            return  # the loop is closed: nobody reads any more


class _AsyncProcess:
    """The in-process server in the shape of the asyncio child process that
    `AsyncPromptHost` drives."""

    def __init__(self, server: InProcessServer, loop: asyncio.AbstractEventLoop) -> None:
        self._server = server
        self.pid = os.getpid()
        self.returncode: Optional[int] = None
        self.stdin = _AsyncStdin(server)
        self.stdout = asyncio.StreamReader(limit=_LINE_LIMIT)
        self.stderr = asyncio.StreamReader(limit=_LINE_LIMIT)
        self._exited: asyncio.Future[int] = loop.create_future()

        def wait_exit() -> None:
            status = int(server.wait(None))
            try:
                loop.call_soon_threadsafe(self._set_exit, status)
            except RuntimeError:
                pass

        for name, target, args in (
            ("prompt-host-output", _feed, (loop, self.stdout, server.read_line)),
            ("prompt-host-stderr", _feed, (loop, self.stderr, lambda: _stderr_line(server))),
            ("prompt-host-exit", wait_exit, ()),
        ):
            threading.Thread(target=target, args=args, name=name, daemon=True).start()

    def _set_exit(self, status: int) -> None:
        self.returncode = status
        if not self._exited.done():
            self._exited.set_result(status)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        self._server.kill()


class AsyncInProcessHost(AsyncPromptHost):
    """`AsyncPromptHost` with the host in this process (see `InProcessHost`): start it with
    ``async with AsyncInProcessHost(...) as host`` or ``await AsyncInProcessHost(...).start()``
    and `aclose` it. Awaiting a call never blocks the event loop: the host works on its own
    threads."""

    def __init__(
        self,
        config: Optional[PathLike] = None,
        *,
        max_request_bytes: Optional[int] = None,
        cache_dir: Optional[PathLike] = None,
        on_notification: Optional[Callable[[Notification], Any]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        trace: Optional[Trace] = None,
        cancel_wait: float = 30.0,
    ) -> None:
        def spawn() -> _AsyncProcess:
            server = _server(config, max_request_bytes, cache_dir)
            return _AsyncProcess(server, asyncio.get_running_loop())

        # Fails here, as the other client does when no binary is found, if the native
        # module is missing.
        _load_native()
        super().__init__(
            config,
            max_request_bytes=max_request_bytes,
            on_notification=on_notification,
            on_stderr=on_stderr,
            trace=trace,
            cancel_wait=cancel_wait,
            _spawn=spawn,
        )
