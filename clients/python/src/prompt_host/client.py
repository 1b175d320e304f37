"""The synchronous client: `PromptHost` starts ``prompt-host serve`` and speaks JSON-RPC 2.0
to it over its stdio. Any number of threads may call it at once; responses are matched to
requests by id on a reader thread."""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import os
import queue
import subprocess
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, TypeVar, Union

from . import _methods, _wire
from ._wire import CancelToken, PathLike, StderrTail
from .errors import PromptHostError, RequestCancelled, ServerExited, UsedAfterFork
from .types import Notification

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["NotificationStream", "PendingCall", "PromptHost"]

T = TypeVar("T")

#: ``trace(direction, message)``: ``"send"`` or ``"recv"`` with the decoded message (a dict,
#: or a list for a batch answer); ``"recv-invalid"`` with the text of a line that was not
#: JSON.
Trace = Callable[[str, Any], None]

_END = object()


class _Outgoing:
    """One line on its way to the server's stdin, written by the writer thread in order.
    Its ``state`` tells a timed-out caller whether any of it reached the server."""

    QUEUED, WRITING, WRITTEN, SKIPPED = "queued", "writing", "written", "skipped"

    def __init__(
        self, data: bytes, method: Optional[str], on_failure: Optional[Callable[[BaseException], None]]
    ) -> None:
        self.data = data
        self.method = method
        self.on_failure = on_failure
        self.state = _Outgoing.QUEUED
        self.lock = threading.Lock()

    def skip(self) -> bool:
        """Withdraw the line if the writer has not started on it."""
        with self.lock:
            if self.state == _Outgoing.QUEUED:
                self.state = _Outgoing.SKIPPED
                return True
            return False


class NotificationStream:
    """An iterator over the notifications received after it was made (`PromptHost.notifications`).
    It ends when the server exits or `close` is called."""

    def __init__(self, owner: PromptHost) -> None:
        self._owner = owner
        self._queue: queue.Queue[Any] = queue.Queue()
        self._closed = False

    def _put(self, item: Any) -> None:
        self._queue.put(item)

    def get(self, timeout: Optional[float] = None) -> Notification:
        """The next notification; `queue.Empty` after ``timeout`` seconds, `StopIteration`
        once the stream ended."""
        item = self._queue.get(timeout=timeout)
        if item is _END:
            self._queue.put(_END)
            raise StopIteration
        note: Notification = item
        return note

    def __iter__(self) -> Iterator[Notification]:
        return self

    def __next__(self) -> Notification:
        return self.get()

    def close(self) -> None:
        self._owner._drop_stream(self)
        self._queue.put(_END)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PendingCall:
    """A request in flight (`PromptHost.send`): wait for it with `result`, cancel it with
    `cancel`."""

    def __init__(self, host: PromptHost, id: int, method: str) -> None:
        self.id = id
        self.method = method
        self._host = host
        self._future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._cancel_sent = False
        self._unregister: Callable[[], None] = lambda: None
        self._outgoing: Optional[_Outgoing] = None

    def done(self) -> bool:
        return self._future.done()

    def cancel(self) -> None:
        """Send ``$/cancelRequest`` for this request (once) if it has not been answered."""
        if self._future.done() or self._cancel_sent:
            return
        self._cancel_sent = True
        try:
            self._host._write(_wire.cancel_message(self.id))
        except ServerExited:
            pass

    def result(self, timeout: Optional[float] = None) -> Any:
        """The result; raises the server's error as `PromptHostError` (`RequestCancelled`
        when cancelled). With ``timeout`` (seconds), a request not answered by then is
        cancelled and its answer awaited (at most the client's ``cancel_wait``): a
        `RequestCancelled` with ``timed_out`` set, or the result if it finished first."""
        try:
            return self._future.result(timeout)
        except concurrent.futures.TimeoutError:
            pass
        outgoing = self._outgoing
        if outgoing is not None and outgoing.state != _Outgoing.WRITTEN:
            # The server is not reading its input: a cancel would wait behind this request.
            sent = "was not sent" if outgoing.skip() or outgoing.state == _Outgoing.SKIPPED else "was not fully sent"
            self._host._forget(self.id)
            raise TimeoutError(
                f"{self.method} (id {self.id}) {sent} within {timeout}s: the server is not reading its input"
            )
        self.cancel()
        try:
            return self._future.result(self._host.cancel_wait)
        except RequestCancelled as e:
            e.timed_out = True
            raise
        except concurrent.futures.TimeoutError:
            raise TimeoutError(
                f"{self.method} (id {self.id}) was not answered within {timeout}s, nor within "
                f"{self._host.cancel_wait}s of its $/cancelRequest"
            ) from None

    def _settle(self, message: Mapping[str, Any]) -> None:
        self._unregister()
        if self._future.done():
            return
        if "error" in message:
            self._future.set_exception(PromptHostError.from_error(message["error"], method=self.method))
        else:
            self._future.set_result(message.get("result"))

    def _fail(self, error: BaseException) -> None:
        self._unregister()
        if not self._future.done():
            self._future.set_exception(error)


class PromptHost:
    """A running ``prompt-host serve``.

    ``config``: a host.toml (``--config``). ``binary``: the executable (else
    ``PROMPT_HOST_BIN``, else ``prompt-host`` on PATH). ``env``: variables added to this
    process's environment for the server. ``on_notification``: called on the reader thread
    with each `Notification` before any later response is delivered (keep it short).
    ``on_stderr``: called with each line the server writes to stderr (the last 200 lines
    are kept either way: `stderr_tail`). ``trace``: sees every message sent and received.
    ``cancel_wait``: how long a timed-out request's cancel is awaited.

    Use it as a context manager, or call `close`.
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
        on_notification: Optional[Callable[[Notification], None]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        trace: Optional[Trace] = None,
        cancel_wait: float = 30.0,
        _process: Any = None,
    ) -> None:
        self.cancel_wait = cancel_wait
        self.max_request_bytes = max_request_bytes or _wire.DEFAULT_MAX_REQUEST_BYTES
        self._created_in = os.getpid()
        self._on_notification = on_notification
        self._on_stderr = on_stderr
        self._trace = trace
        self._ids = itertools.count(1)
        self._pending: Dict[int, PendingCall] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stdin_failed = False
        self._streams: List[NotificationStream] = []
        self._stderr = StderrTail()
        self._exited: Optional[ServerExited] = None
        self._proc: subprocess.Popen[bytes]
        if _process is not None:
            # The in-process server (`prompt_host.InProcessHost`), shaped like a child.
            self._proc = _process
        else:
            command = _wire.server_command(binary, config, max_request_bytes, args)
            full_env = dict(os.environ)
            if env:
                full_env.update(env)
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                cwd=os.fspath(cwd) if cwd is not None else None,
            )
        # Every line goes out through one thread, so that no caller blocks in a write to a
        # server that stopped reading (a call's timeout covers sending it too).
        self._outbox: queue.Queue[Optional[_Outgoing]] = queue.Queue()
        self._writer = threading.Thread(target=self._write_stdin, name="prompt-host-stdin", daemon=True)
        self._reader = threading.Thread(target=self._read_stdout, name="prompt-host-stdout", daemon=True)
        self._stderr_reader = threading.Thread(target=self._read_stderr, name="prompt-host-stderr", daemon=True)
        self._stderr_reader.start()
        self._reader.start()
        self._writer.start()

    # -- life cycle ------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> Optional[int]:
        return self._proc.poll()

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        return self._stderr.text()

    def close(self, timeout: float = 30.0) -> Optional[int]:
        """Close the server's input (it answers what is in flight, then exits) and wait for
        it; killed after ``timeout`` seconds. Returns the exit status."""
        # The writer closes stdin once the lines before it are written.
        self._outbox.put(None)
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout)
        self._stderr_reader.join(timeout)
        return self._proc.returncode

    def kill(self) -> None:
        """End the server at once (requests in flight fail with `ServerExited`)."""
        self._outbox.put(None)
        self._proc.kill()
        self._proc.wait()
        self._reader.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the wire --------------------------------------------------------------------------

    def _write(
        self, message: Mapping[str, Any], on_failure: Optional[Callable[[BaseException], None]] = None
    ) -> _Outgoing:
        """Queue ``message`` for the writer thread; ``on_failure`` learns if it cannot be
        written (the server exited)."""
        data = _wire.encode(message)
        refused = _wire.too_large(data, self.max_request_bytes, message.get("method"))
        if refused is not None:
            raise refused
        return self._queue_line(data, message.get("method"), on_failure, message)

    def _queue_line(
        self,
        data: bytes,
        method: Optional[str],
        on_failure: Optional[Callable[[BaseException], None]],
        traced: Any = None,
    ) -> _Outgoing:
        with self._write_lock:
            if self._exited is not None or self._stdin_failed:
                raise self._exit_error(method)
            if self._trace is not None and traced is not None:
                self._trace("send", traced)
            outgoing = _Outgoing(data, method, on_failure)
            self._outbox.put(outgoing)
            return outgoing

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (a newline is added when missing). Answers to such lines
        reach only ``trace``; for protocol tests."""
        if not data.endswith(b"\n"):
            data += b"\n"
        self._queue_line(data, None, None)

    def _write_stdin(self) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        while True:
            outgoing = self._outbox.get()
            if outgoing is None:
                try:
                    stdin.close()
                except OSError:
                    pass
                return
            with outgoing.lock:
                if outgoing.state == _Outgoing.SKIPPED:
                    continue
                outgoing.state = _Outgoing.WRITING
            try:
                stdin.write(outgoing.data)
                stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                with self._write_lock:
                    self._stdin_failed = True
                self._await_exit()
                failed = [outgoing]
                while True:
                    try:
                        rest = self._outbox.get_nowait()
                    except queue.Empty:
                        break
                    if rest is not None:
                        failed.append(rest)
                for line in failed:
                    if line.on_failure is not None:
                        line.on_failure(self._exit_error(line.method))
                return
            with outgoing.lock:
                outgoing.state = _Outgoing.WRITTEN

    def _forget(self, id: int) -> None:
        with self._lock:
            self._pending.pop(id, None)

    def _await_exit(self, timeout: float = 5.0) -> None:
        """After a failed write: let the reader see the end and record the exit status."""
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout)

    def _exit_error(self, method: Optional[str]) -> ServerExited:
        if self._exited is not None:
            return ServerExited(
                self._exited.message, returncode=self._exited.returncode, stderr=self._exited.stderr, method=method
            )
        return ServerExited(
            "prompt-host serve is not running", returncode=self._proc.poll(), stderr=self._stderr.text(), method=method
        )

    def _read_stdout(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        for line in stdout:
            try:
                message = json.loads(line)
            except ValueError:
                if self._trace is not None:
                    self._trace("recv-invalid", line.decode("utf-8", "replace"))
                self._line_read()
                continue
            if self._trace is not None:
                try:
                    self._trace("recv", message)
                except Exception:  # a tracer's failure must not stop the reader
                    pass
            if isinstance(message, list):
                for item in message:
                    self._dispatch(item)
            else:
                self._dispatch(message)
            self._line_read()
        self._line_read(end=True)
        returncode = self._proc.wait()
        self._stderr_reader.join(5)
        exited = ServerExited(
            f"prompt-host serve exited (status {returncode})", returncode=returncode, stderr=self._stderr.text()
        )
        with self._lock:
            self._exited = exited
            pending = list(self._pending.values())
            self._pending.clear()
            streams = list(self._streams)
        for call in pending:
            call._fail(ServerExited(exited.message, returncode=returncode, stderr=exited.stderr, method=call.method))
        for stream in streams:
            stream._put(_END)

    def _line_read(self, end: bool = False) -> None:
        """Called by the reader after each line it delivered (and at the end of the output):
        the in-process host answers its calls after the lines before them."""

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "method" in message and "id" not in message:
            note = Notification(method=message["method"], params=message.get("params") or {})
            if self._on_notification is not None:
                try:
                    self._on_notification(note)
                except Exception:
                    pass
            with self._lock:
                streams = list(self._streams)
            for stream in streams:
                stream._put(note)
            return
        id = message.get("id")
        with self._lock:
            call = self._pending.pop(id, None) if isinstance(id, int) else None
        if call is not None:
            call._settle(message)

    def _read_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        for raw in stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr.add(line)
            if self._on_stderr is not None:
                try:
                    self._on_stderr(line)
                except Exception:
                    pass

    def _drop_stream(self, stream: NotificationStream) -> None:
        with self._lock:
            if stream in self._streams:
                self._streams.remove(stream)

    # -- generic calls -----------------------------------------------------------------------

    def _check_process(self, method: Optional[str]) -> None:
        """Refuse a call from a process forked from the one that created this host (see
        `UsedAfterFork`): nothing would ever answer it."""
        if os.getpid() != self._created_in:
            raise UsedAfterFork(self._created_in, method)

    def send(
        self, method: str, params: Optional[Mapping[str, Any]] = None, *, cancel: Optional[CancelToken] = None
    ) -> PendingCall:
        """Send a request and return at once; ``pending.result()`` waits for its answer."""
        self._check_process(method)
        id = next(self._ids)
        call = PendingCall(self, id, method)
        with self._lock:
            if self._exited is not None:
                raise self._exit_error(method)
            self._pending[id] = call
        try:
            call._outgoing = self._write(_wire.request_message(id, method, params), call._fail)
        except BaseException:
            with self._lock:
                self._pending.pop(id, None)
            raise
        if cancel is not None:
            call._unregister = cancel._register(call.cancel)
            if call.done():
                call._unregister()
        return call

    def call(
        self,
        method: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
    ) -> Any:
        """Send a request and wait for its raw result."""
        return self.send(method, params, cancel=cancel).result(timeout)

    def _call_step(
        self, method: str, params: Mapping[str, Any], cancel: Optional[CancelToken], timeout: Optional[float]
    ) -> Any:
        """`call` for ``step`` and ``retry``, whose result becomes a `StepResult` (the
        in-process host hands the request over unconverted there)."""
        return self.call(method, params, cancel=cancel, timeout=timeout)

    def _request(self, call: _methods.Call[T]) -> T:
        """Make a method's call (`prompt_host._methods`) and read its result."""
        if call.step:
            result = self._call_step(call.method, call.params, call.cancel, call.timeout)
        else:
            result = self.call(call.method, call.params, cancel=call.cancel, timeout=call.timeout)
        return call.read(result)

    def notify(self, method: str, params: Optional[Mapping[str, Any]] = None) -> None:
        """Send a notification (a request without id: nothing is answered)."""
        self._check_process(method)
        self._write(_wire.notification_message(method, params))

    def notifications(self) -> NotificationStream:
        """An iterator over the notifications received from now on (`subscribe` chooses
        which the server sends)."""
        stream = NotificationStream(self)
        with self._lock:
            if self._exited is not None:
                stream._put(_END)
            else:
                self._streams.append(stream)
        return stream

    # -- the methods: each defined once, for both clients, in _methods.py -------------------

    describe = _methods.sync(_methods.describe)
    bind_scope = _methods.sync(_methods.bind_scope)
    dispose_scope = _methods.sync(_methods.dispose_scope)
    scopes = _methods.sync(_methods.scopes)
    load_plugin = _methods.sync(_methods.load_plugin)
    reload_plugin = _methods.sync(_methods.reload_plugin)
    dispose_plugin = _methods.sync(_methods.dispose_plugin)
    plugins = _methods.sync(_methods.plugins)
    assemble = _methods.sync(_methods.assemble)
    render = _methods.sync(_methods.render)
    step = _methods.sync(_methods.step)
    retry = _methods.sync(_methods.retry)
    append_assistant = _methods.sync(_methods.append_assistant)
    append_tool_result = _methods.sync(_methods.append_tool_result)
    request = _methods.sync(_methods.request)
    compact = _methods.sync(_methods.compact)
    close_session = _methods.sync(_methods.close_session)
    mcp_status = _methods.sync(_methods.mcp_status)
    mcp_skill = _methods.sync(_methods.mcp_skill)
    subscribe = _methods.sync(_methods.subscribe)

    def cancel_request(self, id: Union[int, str]) -> None:
        """Send ``$/cancelRequest`` for request ``id`` (as a notification)."""
        self._write(_wire.cancel_message(id))
