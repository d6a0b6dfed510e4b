"""Where CPU-heavy template evaluation runs: a few processes of our own, each job under a deadline.

A yaql ``matches`` with a catastrophic regular expression, or a template that
expands without end, would hold the event loop of the api or a worker for
minutes, and every project with it: ``re`` keeps the GIL for the whole match,
so a thread does not help. Such work goes to :meth:`EvaluationPool.run`: a pure
function and its arguments are sent to an idle process, and a job that passes
``timeout`` seconds has its process killed and replaced, and raises
:class:`EvaluationTimeout` (Heat's ``RequestLimitExceeded``, a 400). A process
that dies (a segmentation fault of a too-deep structure, the kernel's OOM
killer) is replaced too, and its job raises :class:`EvaluationCrashed`.

``concurrent.futures.ProcessPoolExecutor`` cannot do this: it never kills a
task that overruns, and a dead process breaks the whole executor. With
``processes=0`` the function runs inline, on the caller's loop, with no
deadline (the simulator, and operators who want no processes).

The processes fork from a ``forkserver`` (never from the service itself,
whose threads and sockets a fork would copy), with the template language
loaded once, so a replacement costs milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import io
import multiprocessing
import pickle
import resource
import signal
import sys
import threading
import types
from collections.abc import AsyncIterator, Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, ParamSpec, Protocol, TypeVar

from libs.config import Settings
from libs.telemetry import logs
from libs.template import budgets
from libs.template.errors import RequestLimitExceeded, TemplateError

log = logs.logger("evaluation")

P = ParamSpec("P")
T = TypeVar("T")

# Imported by the forkserver once, so that each process it forks has them loaded.
_PRELOAD = ["libs.template.request", "libs.template.functions.hot_yaql", "libs.resources.registry",
            "libs.resources.validation", "libs.operations", "libs.update_preview"]


class Evaluator(Protocol):
    """Runs a pure function somewhere (a pool, a project's share of one, inline) and answers."""

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T: ...


class EvaluationTimeout(RequestLimitExceeded):
    """A job ran past the pool's deadline; its process was killed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"Template evaluation took longer than {seconds:g} seconds.")


class EvaluationTooLarge(RequestLimitExceeded):
    """A job needed more memory than a pool process may have."""

    def __init__(self, megabytes: int) -> None:
        super().__init__(f"Template evaluation needed more than {megabytes} MB of memory.")


class EvaluationCrashed(TemplateError):
    """The process died while evaluating (a crash of the interpreter, or the kernel killed it)."""

    error_type = "StackValidationFailed"

    def __init__(self) -> None:
        super().__init__("The template could not be evaluated: its evaluation process died.")


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    # Not through __init__: many errors take other arguments than their ``args`` hold.
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class _Pickler(pickle.Pickler):
    """Errors go across whole, whatever their constructor takes (plain pickling calls ``cls(*args)``)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, BaseException):
            return _rebuilt, (type(obj), obj.args, dict(obj.__dict__))
        return NotImplemented


# Pickling recurses twice per level of nesting, and a JSON body may nest 1,024 deep (orjson's
# limit): deep enough for that, shallow enough for the C stack.
_PICKLE_RECURSION = 4000


def _dumps(value: Any) -> memoryview:
    buffer = io.BytesIO()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _PICKLE_RECURSION))
    try:
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except RecursionError:
        raise RequestLimitExceeded("The template is nested too deeply to evaluate.") from None
    finally:
        sys.setrecursionlimit(limit)
    # The buffer itself, not a copy: a preview of 10^6 members answers half a gigabyte.
    return buffer.getbuffer()


def _answer(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], megabytes: int
            ) -> memoryview:
    try:
        outcome: tuple[bool, Any] = (True, fn(*args, **kwargs))
    except MemoryError:
        outcome = (False, EvaluationTooLarge(megabytes))
    except Exception as exc:
        outcome = (False, exc)
    try:
        return _dumps(outcome)
    except Exception as exc:  # an error or result that cannot cross: say what it was
        return _dumps((False, TemplateError(f"{type(exc).__name__}: {exc}")))


def _serve(conn: Connection, megabytes: int, prepare: Callable[[], None] | None) -> None:
    """A pool process: one job at a time, until the service closes its end of the pipe."""
    # Ctrl-C reaches the whole process group; the service decides when its processes end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if prepare is not None:
        # The forkserver started fresh: the service's process-wide settings are set again here.
        prepare()
    if megabytes:
        # A template that expands without end gets a MemoryError here, not the host's OOM killer.
        limit = megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    while True:
        try:
            fn, args, kwargs = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        conn.send_bytes(_answer(fn, args, kwargs, megabytes))


_MAIN_SWAP = threading.Lock()


@contextlib.contextmanager
def _bare_main() -> Iterator[None]:
    """Start a process without the service's ``__main__``.

    multiprocessing's children import the parent's main module again (``libs.cli``
    with every service behind it, or pytest's runner in the tests): 0.3 s and tens
    of MB per process for nothing a pure function needs. A bare ``__main__`` while
    the process starts leaves them what the forkserver preloaded.
    """
    with _MAIN_SWAP:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main


class _Process:
    """One pool process and the service's end of its pipe."""

    def __init__(self, context: multiprocessing.context.BaseContext, megabytes: int,
                 prepare: Callable[[], None] | None) -> None:
        ours, theirs = context.Pipe()
        self.conn = ours
        self.process: BaseProcess = context.Process(  # type: ignore[attr-defined]
            target=_serve, args=(theirs, megabytes, prepare), name="ember-evaluation", daemon=True)
        with _bare_main():
            self.process.start()
        theirs.close()

    def stop(self) -> None:
        self.conn.close()
        self.process.kill()
        self.process.join(5)


def _stop_all(procs: set[_Process]) -> None:
    for proc in procs:
        proc.stop()


class EvaluationPool:
    """``processes`` processes that run pure functions, each job ended after ``timeout`` seconds.

    Each process may use ``megabytes`` of address space (0: no limit).
    """

    def __init__(self, processes: int, timeout: float, megabytes: int = 0,
                 prepare: Callable[[], None] | None = None) -> None:
        self.processes = processes
        self.timeout = timeout
        self.megabytes = megabytes
        self.prepare = prepare  # run first in each process (picklable: a module function, a partial)
        self._context = multiprocessing.get_context("forkserver")
        self._idle: asyncio.Queue[_Process] = asyncio.Queue()
        self._all: set[_Process] = set()
        self.replaced = 0  # processes killed and replaced (overruns and crashes)
        self._closed = False
        # One owner (a project) may hold all processes but one: another project's job always
        # finds one free within a deadline, however many hostile jobs the first one sends.
        self._per_owner = max(1, processes - 1)
        self._owners: dict[str, _Share] = {}

    def closed(self) -> bool:
        return self._closed

    async def start(self) -> None:
        if self.processes == 0:
            return
        self._context.set_forkserver_preload(_PRELOAD)
        # The first start waits for the forkserver to load the template language: not on the loop.
        started = await asyncio.to_thread(lambda: [self._new() for _ in range(self.processes)])
        for proc in started:
            self._all.add(proc)
            self._idle.put_nowait(proc)

    def _new(self) -> _Process:
        return _Process(self._context, self.megabytes, self.prepare)

    async def close(self) -> None:
        self._closed = True
        procs, self._all = self._all, set()
        await asyncio.to_thread(_stop_all, procs)

    def on_behalf_of(self, owner: str) -> Evaluator:
        """This pool as ``owner`` uses it: at most all processes but one at a time."""
        return _Owned(self, owner)

    async def run_as(self, owner: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        share = self._owners.get(owner)
        if share is None:
            share = self._owners[owner] = _Share(asyncio.Semaphore(self._per_owner))
        share.users += 1
        try:
            async with share.semaphore:
                return await self.run(fn, *args, **kwargs)
        finally:
            share.users -= 1
            if share.users == 0:
                del self._owners[owner]

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in a pool process (``fn`` and its arguments must pickle)."""
        if self.processes == 0:
            return fn(*args, **kwargs)
        payload = _dumps((fn, args, kwargs))
        proc = await self._idle.get()
        healthy = False
        try:
            answer = await self._exchange(proc, payload)
            healthy = True
        finally:
            if healthy:
                self._idle.put_nowait(proc)
            else:
                # Overran, died or was abandoned (the caller was cancelled): its state is unknown.
                await self._replace(proc)
        ok, value = pickle.loads(answer)
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    async def _exchange(self, proc: _Process, payload: memoryview) -> bytes:
        loop = asyncio.get_running_loop()
        readable = loop.create_future()
        fd = proc.conn.fileno()

        def ready() -> None:
            if not readable.done():
                readable.set_result(None)

        loop.add_reader(fd, ready)
        try:
            try:
                # The process is idle, reading: the send does not wait on it.
                proc.conn.send_bytes(payload)
            except OSError:
                raise EvaluationCrashed() from None
            try:
                await asyncio.wait_for(readable, self.timeout)
            except TimeoutError:
                log.warning("an evaluation ran past %gs: its process is replaced", self.timeout)
                raise EvaluationTimeout(self.timeout) from None
        finally:
            loop.remove_reader(fd)
        try:
            return proc.conn.recv_bytes()
        except (EOFError, OSError):
            log.error("an evaluation process died (exit code %s): it is replaced", proc.process.exitcode)
            raise EvaluationCrashed() from None

    async def _replace(self, proc: _Process) -> None:
        self._all.discard(proc)
        self.replaced += 1
        await asyncio.to_thread(proc.stop)
        if self.closed():
            return
        fresh = await asyncio.to_thread(self._new)
        if self.closed():  # closed while the replacement started
            await asyncio.to_thread(fresh.stop)
            return
        self._all.add(fresh)
        self._idle.put_nowait(fresh)


@dataclasses.dataclass
class _Share:
    semaphore: asyncio.Semaphore
    users: int = 0


@dataclasses.dataclass(frozen=True)
class _Owned:
    pool: EvaluationPool
    owner: str

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.pool.run_as(self.owner, fn, *args, **kwargs)


@contextlib.asynccontextmanager
async def opened(processes: int, timeout: float, megabytes: int = 0,
                 prepare: Callable[[], None] | None = None) -> AsyncIterator[EvaluationPool]:
    """A started pool, closed (its processes killed) on exit."""
    pool = EvaluationPool(processes, timeout, megabytes, prepare)
    await pool.start()
    try:
        yield pool
    finally:
        await pool.close()


# Evaluation on the caller's loop, for callers that have no pool (the simulator, scripts).
INLINE = EvaluationPool(0, 0.0)


def opened_for(settings: Settings) -> contextlib.AbstractAsyncContextManager[EvaluationPool]:
    """A service's pool: its size, deadline and memory from config, and its template budgets."""
    return opened(settings.evaluation_processes, settings.evaluation_timeout, settings.evaluation_memory_mb,
                  functools.partial(budgets.configure, settings.budgets))
