"""The asyncio client: `AsyncPromptHost` starts ``prompt-host serve`` as a subprocess and
speaks JSON-RPC 2.0 to it. Any number of tasks may call it at once; responses are matched to
requests by id. Cancelling a task that awaits a request sends ``$/cancelRequest`` and waits
for the server's answer before the task ends (so the server has stopped working on it)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar, Union

from . import _methods, _wire
from ._wire import CancelToken, PathLike, StderrTail
from .errors import PromptHostError, RequestCancelled, ServerExited, UsedAfterFork
from .types import Notification

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["AsyncNotificationStream", "AsyncPromptHost"]

T = TypeVar("T")

Trace = Callable[[str, Any], None]

#: Responses may be large (a prompt of megabytes, repeated in a request's messages).
_LINE_LIMIT = 1 << 30

_END = object()


def _nothing() -> None:
    pass


class AsyncNotificationStream:
    """An async iterator over the notifications received after it was made. It ends when
    the server exits or `close` is called."""

    def __init__(self, owner: AsyncPromptHost) -> None:
        self._owner = owner
        self._queue: asyncio.Queue[Any] = asyncio.Queue()

    def _put(self, item: Any) -> None:
        self._queue.put_nowait(item)

    def __aiter__(self) -> AsyncNotificationStream:
        return self

    async def __anext__(self) -> Notification:
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            raise StopAsyncIteration
        note: Notification = item
        return note

    def close(self) -> None:
        self._owner._drop_stream(self)
        self._queue.put_nowait(_END)


class _Pending:
    __slots__ = ("future", "id", "method")

    def __init__(self, id: int, method: str, future: asyncio.Future[Any]) -> None:
        self.id = id
        self.method = method
        self.future = future


class AsyncPromptHost:
    """A running ``prompt-host serve``, for asyncio. The same options as
    `prompt_host.PromptHost`; start it with ``async with AsyncPromptHost(...) as host`` or
    ``host = await AsyncPromptHost(...).start()`` and `aclose` it.

    ``on_notification`` runs in the reader task before any later response is delivered; a
    coroutine it returns is scheduled as a task.
    """

    def __init__(
        self,
        config: Optional[PathLike] = None,
        *,
        binary: Optional[PathLike] = None,
        max_request_bytes: Optional[int] = None,
        args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        on_notification: Optional[Callable[[Notification], Any]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        trace: Optional[Trace] = None,
        cancel_wait: float = 30.0,
        _spawn: Optional[Callable[[], Any]] = None,
    ) -> None:
        self.cancel_wait = cancel_wait
        self.max_request_bytes = max_request_bytes or _wire.DEFAULT_MAX_REQUEST_BYTES
        self._created_in = os.getpid()
        # The in-process server (`prompt_host.AsyncInProcessHost`) is made by `_spawn`,
        # shaped like an asyncio child process.
        self._spawn = _spawn
        self._command = [] if _spawn is not None else _wire.server_command(binary, config, max_request_bytes, args)
        self._env = dict(os.environ)
        if env:
            self._env.update(env)
        self._cwd = os.fspath(cwd) if cwd is not None else None
        self._on_notification = on_notification
        self._on_stderr = on_stderr
        self._trace = trace
        self._ids = itertools.count(1)
        self._pending: Dict[int, _Pending] = {}
        self._streams: List[AsyncNotificationStream] = []
        self._stderr = StderrTail()
        self._exited: Optional[ServerExited] = None
        self._proc: Optional[asyncio.subprocess.Process] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._tasks: List[asyncio.Task[Any]] = []
        self._drain_lock: Optional[asyncio.Lock] = None

    async def start(self) -> Self:
        """Start the server process."""
        if self._proc is not None:
            return self
        self._loop = asyncio.get_running_loop()
        self._drain_lock = asyncio.Lock()
        if self._spawn is not None:
            self._proc = self._spawn()
        else:
            self._proc = await asyncio.create_subprocess_exec(
                *self._command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
                limit=_LINE_LIMIT,
            )
        self._stderr_task = asyncio.ensure_future(self._read_stderr())
        self._reader_task = asyncio.ensure_future(self._read_stdout())
        return self

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    @property
    def returncode(self) -> Optional[int]:
        return None if self._proc is None else self._proc.returncode

    def stderr_tail(self) -> str:
        return self._stderr.text()

    async def aclose(self, timeout: float = 30.0) -> Optional[int]:
        """Close the server's input (it answers what is in flight, then exits) and wait for
        it; killed after ``timeout`` seconds. Returns the exit status."""
        proc = self._proc
        if proc is None:
            return None
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        await asyncio.gather(self._reader_task, self._stderr_task, return_exceptions=True)
        return proc.returncode

    async def kill(self) -> None:
        """End the server at once (requests in flight fail with `ServerExited`)."""
        if self._proc is None:
            return
        self._proc.kill()
        await self._proc.wait()
        await asyncio.gather(self._reader_task, self._stderr_task, return_exceptions=True)

    # -- the wire --------------------------------------------------------------------------

    def _write(self, message: Mapping[str, Any]) -> None:
        proc = self._proc
        if proc is None:
            raise RuntimeError("AsyncPromptHost not started: use `async with` or `await host.start()`")
        data = _wire.encode(message)
        refused = _wire.too_large(data, self.max_request_bytes, message.get("method"))
        if refused is not None:
            raise refused
        if self._trace is not None:
            self._trace("send", message)
        if self._exited is not None or proc.stdin is None or proc.stdin.is_closing():
            raise self._exit_error(message.get("method"))
        proc.stdin.write(data)

    async def _drain(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None and self._drain_lock is not None
        async with self._drain_lock:
            try:
                await self._proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                # Let the reader see the end and record the exit status first.
                try:
                    await asyncio.wait_for(asyncio.shield(self._reader_task), 5)
                except Exception:
                    pass
                raise self._exit_error(None) from None

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (a newline is added when missing). Answers to such lines
        reach only ``trace``; for protocol tests."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            raise self._exit_error(None)
        if not data.endswith(b"\n"):
            data += b"\n"
        proc.stdin.write(data)
        await self._drain()

    def _exit_error(self, method: Optional[str]) -> ServerExited:
        if self._exited is not None:
            return ServerExited(
                self._exited.message, returncode=self._exited.returncode, stderr=self._exited.stderr, method=method
            )
        return ServerExited(
            "prompt-host serve is not running", returncode=self.returncode, stderr=self._stderr.text(), method=method
        )

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        while True:
            try:
                line = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not line:
                break
            try:
                message = json.loads(line)
            except ValueError:
                if self._trace is not None:
                    self._trace("recv-invalid", line.decode("utf-8", "replace"))
                continue
            if self._trace is not None:
                try:
                    self._trace("recv", message)
                except Exception:
                    pass
            if isinstance(message, list):
                for item in message:
                    self._dispatch(item)
            else:
                self._dispatch(message)
        returncode = await self._proc.wait()
        try:
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 5)
        except Exception:
            pass
        self._exited = ServerExited(
            f"prompt-host serve exited (status {returncode})", returncode=returncode, stderr=self._stderr.text()
        )
        pending = list(self._pending.values())
        self._pending.clear()
        for call in pending:
            if not call.future.done():
                call.future.set_exception(self._exit_error(call.method))
        for stream in list(self._streams):
            stream._put(_END)

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "method" in message and "id" not in message:
            note = Notification(method=message["method"], params=message.get("params") or {})
            if self._on_notification is not None:
                try:
                    outcome = self._on_notification(note)
                    if inspect.isawaitable(outcome):
                        task = asyncio.ensure_future(outcome)
                        self._tasks.append(task)
                        task.add_done_callback(self._tasks.remove)
                except Exception:
                    pass
            for stream in list(self._streams):
                stream._put(note)
            return
        id = message.get("id")
        call = self._pending.pop(id, None) if isinstance(id, int) else None
        if call is None or call.future.done():
            return
        if "error" in message:
            call.future.set_exception(PromptHostError.from_error(message["error"], method=call.method))
        else:
            call.future.set_result(message.get("result"))

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        stderr = self._proc.stderr
        while True:
            try:
                raw = await stderr.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr.add(line)
            if self._on_stderr is not None:
                try:
                    self._on_stderr(line)
                except Exception:
                    pass

    def _drop_stream(self, stream: AsyncNotificationStream) -> None:
        if stream in self._streams:
            self._streams.remove(stream)

    def _cancel_id(self, id: int) -> None:
        if id in self._pending:
            try:
                self._write(_wire.cancel_message(id))
            except ServerExited:
                pass

    # -- generic calls -----------------------------------------------------------------------

    def _check_process(self, method: Optional[str]) -> None:
        """Refuse a call from a process forked from the one that created this host (see
        `UsedAfterFork`): nothing would ever answer it."""
        if os.getpid() != self._created_in:
            raise UsedAfterFork(self._created_in, method)

    async def call(
        self,
        method: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
    ) -> Any:
        """Send a request and await its raw result.

        The server's error is raised as `PromptHostError` (`RequestCancelled` when
        cancelled through ``cancel`` or by ``timeout``). When the awaiting task is cancelled,
        ``$/cancelRequest`` is sent and the server's answer awaited (at most
        ``cancel_wait``) before `asyncio.CancelledError` propagates.
        """
        self._check_process(method)
        loop = asyncio.get_running_loop()
        if self._exited is not None:
            raise self._exit_error(method)
        id = next(self._ids)
        future: asyncio.Future[Any] = loop.create_future()
        # A late answer nobody awaits any more must not be reported as unretrieved.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._pending[id] = _Pending(id, method, future)
        try:
            self._write(_wire.request_message(id, method, params))
        except BaseException:
            self._pending.pop(id, None)
            raise
        unregister: Callable[[], None] = _nothing
        if cancel is not None:

            def on_cancel() -> None:
                loop.call_soon_threadsafe(self._cancel_id, id)

            unregister = cancel._register(on_cancel)
        try:
            if timeout is None:
                await self._drain()
                return await asyncio.shield(future)
            started = loop.time()
            try:
                # Sending counts toward the timeout: a server that stopped reading its input
                # must not hold the caller past it.
                await asyncio.wait_for(self._drain(), timeout)
            except asyncio.TimeoutError:
                self._pending.pop(id, None)
                raise TimeoutError(
                    f"{method} (id {id}) was not fully sent within {timeout}s: the server is not reading its input"
                ) from None
            try:
                remaining = max(0.0, timeout - (loop.time() - started))
                return await asyncio.wait_for(asyncio.shield(future), remaining)
            except asyncio.TimeoutError:
                pass
            self._cancel_id(id)
            try:
                return await asyncio.wait_for(asyncio.shield(future), self.cancel_wait)
            except RequestCancelled as e:
                e.timed_out = True
                raise
            except asyncio.TimeoutError:
                raise TimeoutError(
                    f"{method} (id {id}) was not answered within {timeout}s, nor within "
                    f"{self.cancel_wait}s of its $/cancelRequest"
                ) from None
        except asyncio.CancelledError:
            if not future.done():
                self._cancel_id(id)
                try:
                    await asyncio.wait_for(asyncio.shield(future), self.cancel_wait)
                except BaseException:
                    pass
            raise
        finally:
            unregister()

    async def _request(self, call: _methods.Call[T]) -> T:
        """Make a method's call (`prompt_host._methods`) and read its result."""
        return call.read(await self.call(call.method, call.params, cancel=call.cancel, timeout=call.timeout))

    async def notify(self, method: str, params: Optional[Mapping[str, Any]] = None) -> None:
        """Send a notification (a request without id: nothing is answered)."""
        self._check_process(method)
        self._write(_wire.notification_message(method, params))
        await self._drain()

    def notifications(self) -> AsyncNotificationStream:
        """An async iterator over the notifications received from now on."""
        stream = AsyncNotificationStream(self)
        if self._exited is not None:
            stream._put(_END)
        else:
            self._streams.append(stream)
        return stream

    async def cancel_request(self, id: Union[int, str]) -> None:
        """Send ``$/cancelRequest`` for request ``id`` (as a notification)."""
        self._write(_wire.cancel_message(id))
        await self._drain()

    # -- the methods: each defined once, for both clients, in _methods.py -------------------

    describe = _methods.asynchronous(_methods.describe)
    bind_scope = _methods.asynchronous(_methods.bind_scope)
    dispose_scope = _methods.asynchronous(_methods.dispose_scope)
    scopes = _methods.asynchronous(_methods.scopes)
    load_plugin = _methods.asynchronous(_methods.load_plugin)
    reload_plugin = _methods.asynchronous(_methods.reload_plugin)
    dispose_plugin = _methods.asynchronous(_methods.dispose_plugin)
    plugins = _methods.asynchronous(_methods.plugins)
    assemble = _methods.asynchronous(_methods.assemble)
    render = _methods.asynchronous(_methods.render)
    step = _methods.asynchronous(_methods.step)
    retry = _methods.asynchronous(_methods.retry)
    append_assistant = _methods.asynchronous(_methods.append_assistant)
    append_tool_result = _methods.asynchronous(_methods.append_tool_result)
    request = _methods.asynchronous(_methods.request)
    compact = _methods.asynchronous(_methods.compact)
    close_session = _methods.asynchronous(_methods.close_session)
    mcp_status = _methods.asynchronous(_methods.mcp_status)
    mcp_skill = _methods.asynchronous(_methods.mcp_skill)
    subscribe = _methods.asynchronous(_methods.subscribe)
