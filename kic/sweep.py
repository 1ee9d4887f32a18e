"""Design sweeps: one evaluation function over many designs, in chunks, on one
core, a local process pool or Dask.

A *design* is one row of parameters (link lengths, masses, ...).  The designs
are cut into chunks of consecutive rows; each chunk is one task, and the user's
function evaluates the whole chunk at once (vectorized over its designs, or a
loop over them)::

    evaluate(chunk) -> {"name": array with len(chunk) leading, ...}

:func:`sweep` runs the tasks serially, on a :class:`concurrent.futures.
ProcessPoolExecutor`, or as Dask tasks (a ``LocalCluster`` of single-threaded
worker processes by default, or any ``dask.distributed.Client`` or scheduler
address: the same code on a cluster), and gathers the results in design order
whatever the order the tasks finish in.  A chunk that raises can be recorded
as data (NaN results, a status and a message for each of its designs) instead
of ending the sweep; progress is reported as it goes; results are saved to an
``.npz`` file that a later call can resume from.

Dask is optional (``pip install 'kic[sweep]'``) and imported only when used.
"""
from __future__ import annotations

import math
import os
import pickle
import sys
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ._files import write_atomically
from .errors import ModelError

__all__ = ["sweep", "SweepResult", "SweepStatus", "SweepProgress", "as_designs"]

_FORMAT = "kic.sweep/1"
_CHUNK_OF: dict[int, int] = {}  # id of an exception in flight -> the chunk that raised it
_MESSAGE_LIMIT = 400            # characters kept of a failure's message (the file stays small)
_SCHEDULERS = ("serial", "processes", "dask")


class SweepStatus(IntEnum):
    """Outcome of each design of a sweep (one value per design)."""

    OK = 0
    #: its chunk raised (``on_error="record"``): results NaN, the message says why
    FAILED = 1
    #: not evaluated (the sweep was interrupted, or stopped at an error, before its chunk)
    NOT_RUN = 2


class SweepProgress(NamedTuple):
    """What a ``progress`` callback receives after every finished chunk.

    ``done`` and ``total`` count designs (``done`` includes designs loaded from
    a resumed file and failed ones); ``rate`` is designs per second evaluated in
    this call; ``elapsed`` and ``eta`` are seconds (``eta`` is NaN until a rate
    is known).
    """

    done: int
    total: int
    chunks_done: int
    chunks_total: int
    failed: int
    elapsed: float
    rate: float
    eta: float


@dataclass
class SweepResult:
    """Designs, results and outcome of a :func:`sweep`.

    Attributes
    ----------
    designs : numpy.ndarray
        Structured array, shape ``(n,)``, one field per design parameter.
    results : dict of str to numpy.ndarray
        Each of shape ``(n, ...)``, in design order.  NaN for designs whose
        chunk failed or did not run (integer and boolean results are then
        converted to float to hold the NaN).
    status : numpy.ndarray
        ``(n,)`` int8, a :class:`SweepStatus` per design.
    message : numpy.ndarray
        ``(n,)`` str: the failure ``"ExceptionType: message"`` of a failed
        design, ``""`` otherwise.
    chunk_size : int
        Designs per chunk; chunk ``k`` holds designs ``k c`` to ``(k + 1) c``.
    chunk_seconds : numpy.ndarray
        ``(n_chunks,)`` time the evaluation of each chunk took in its worker
        (s); NaN for chunks not run.
    wall_time : float
        Wall-clock time of the :func:`sweep` call (s), start-up of the workers included.
    scheduler : str
        ``"serial"``, ``"processes"`` or ``"dask"``.
    n_workers : int
        Worker processes used (1 for ``"serial"``).
    resumed : int
        Designs taken from the ``out`` file (``resume=True``) instead of being
        evaluated again.
    result_dtypes : dict of str to str
        The dtype of each result as ``evaluate`` returned it (a result that
        holds NaN for failed designs is float; a resumed sweep whose designs
        all end OK gives its results back in these dtypes).
    """

    designs: np.ndarray
    results: dict[str, np.ndarray]
    status: np.ndarray
    message: np.ndarray
    chunk_size: int
    chunk_seconds: np.ndarray
    wall_time: float = 0.0
    scheduler: str = "serial"
    n_workers: int = 1
    resumed: int = 0
    result_dtypes: dict[str, str] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.designs)

    @property
    def ok(self) -> np.ndarray:
        """``(n,)`` bool: the designs whose results are valid."""
        return self.status == SweepStatus.OK

    @property
    def names(self) -> tuple[str, ...]:
        """The design parameters' names."""
        return tuple(self.designs.dtype.names)

    def __repr__(self) -> str:
        counts = {s.name: int(np.count_nonzero(self.status == s)) for s in SweepStatus}
        told = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        return (f"SweepResult({len(self)} designs ({told}), parameters {list(self.names)}, "
                f"results {list(self.results)}, {self.scheduler} x{self.n_workers}, "
                f"{self.wall_time:.3g} s)")

    def to_npz(self, path: str | os.PathLike) -> Path:
        """Save to an uncompressed ``.npz`` (no pickles; :meth:`from_npz` reads it back).

        The file is written to a temporary file of its own next to ``path`` and
        renamed over it, so a sweep interrupted while saving leaves the previous
        file intact, and two writers never write into one file.  Returns the path.
        """
        path = _npz_path(path)
        arrays = {
            "format": np.array(_FORMAT), "designs": self.designs,
            "status": self.status.astype(np.int8), "message": _as_text(self.message),
            "chunk_size": np.array(self.chunk_size), "chunk_seconds": self.chunk_seconds,
            "wall_time": np.array(self.wall_time), "scheduler": np.array(self.scheduler),
            "n_workers": np.array(self.n_workers),
        }
        for key, value in self.results.items():
            arrays["result." + key] = value
        for key, dtype in self.result_dtypes.items():
            arrays["dtype." + key] = np.array(dtype)
        write_atomically(path, lambda fh: np.savez(fh, **arrays))
        return path

    @classmethod
    def from_npz(cls, path: str | os.PathLike) -> "SweepResult":
        """Load a result saved by :meth:`to_npz` (or by ``sweep(..., out=path)``).

        Raises :class:`kic.ModelError` naming the file when it cannot be read,
        is damaged (e.g. cut short) or is not a kic sweep result."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if "format" not in data.files or str(data["format"]) != _FORMAT:
                    raise ModelError(f"sweep file {os.fspath(path)!r} is not a kic sweep "
                                     f"result (no format {_FORMAT!r})")
                results = {k[len("result."):]: data[k] for k in data.files
                           if k.startswith("result.")}
                dtypes = {k[len("dtype."):]: str(data[k]) for k in data.files
                          if k.startswith("dtype.")}
                return cls(designs=data["designs"], results=results, status=data["status"],
                           message=data["message"], chunk_size=int(data["chunk_size"]),
                           chunk_seconds=data["chunk_seconds"],
                           wall_time=float(data["wall_time"]), scheduler=str(data["scheduler"]),
                           n_workers=int(data["n_workers"]), result_dtypes=dtypes)
        except ModelError:
            raise
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise ModelError(f"sweep file {os.fspath(path)!r} cannot be read (damaged or not "
                             f"a kic sweep result): {type(exc).__name__}: {exc}") from exc


def _npz_path(path) -> Path:
    """``path`` with the ``.npz`` suffix numpy would give it."""
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
def sweep(evaluate: Callable[[np.ndarray], Mapping[str, Any]], designs, *,
          names: Sequence[str] | None = None, chunk_size: int | None = None,
          scheduler: Any = "serial", n_workers: int | None = None,
          progress: bool | Callable[[SweepProgress], Any] = True,
          out: str | os.PathLike | None = None, resume: bool = False,
          overwrite: bool = False, on_error: str = "raise",
          checkpoint: float = 10.0) -> SweepResult:
    """Evaluate ``evaluate`` over a batch of designs, chunk by chunk, serially,
    on local processes or on Dask.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(chunk) -> dict``.  ``chunk`` is a structured numpy array of
        consecutive designs (``chunk["l1"]`` is the ``(len(chunk),)`` array of
        parameter ``l1``); the dict maps result names (str) to arrays whose
        leading axis is ``len(chunk)`` (numbers or booleans; trailing axes are
        kept).  For ``"processes"`` it must pickle by reference (a module-level
        function, or a :func:`functools.partial` of one, importable by the
        workers); for Dask anything cloudpickle can send.
    designs : structured array, dict of arrays, or (n, p) array
        One design per row: a 1-D structured array (one field per parameter),
        a mapping of parameter names to arrays of equal leading length ``n``,
        or a plain ``(n, p)`` array whose columns are named by ``names``.
    names : sequence of str, optional
        Parameter names of a plain ``(n, p)`` (or ``(n,)``, one name) array.
    chunk_size : int, optional
        Designs per task.  Default: about four chunks per worker (serial: 10
        chunks), which balances the load and keeps the per-task overhead small
        next to a chunk's work; when resuming, the file's chunk size.
    scheduler : {"serial", "processes", "dask"}, dask.distributed.Client or str
        ``"serial"``: in this process.  ``"processes"``: a local process pool
        of ``n_workers``.  ``"dask"``: the Dask client already running in this
        process if there is one (``dask.distributed.default_client()``, left
        open), else a ``LocalCluster`` of ``n_workers`` single-threaded worker
        processes, started and closed here (starting one costs seconds: for
        several sweeps, start a ``Client`` once).  A ``Client`` (left open) or a
        scheduler address such as ``"tcp://10.0.0.5:8786"`` runs the same
        tasks on that cluster.
    n_workers : int, optional
        Worker processes for ``"processes"`` and ``"dask"`` (default: the CPUs
        this process may use).  Ignored otherwise (a given Client's cluster has
        its own workers).
    progress : bool or callable
        True: a progress line on stderr (designs done/total, failures, rate,
        time left).  A callable receives a :class:`SweepProgress` after every
        chunk instead.  False: silent.
    out : path, optional
        ``.npz`` file for the results (:meth:`SweepResult.to_npz`), written at
        the end, every ``checkpoint`` seconds while running, and when the sweep
        stops at an error or an interrupt.
    resume : bool
        With ``out``: if the file exists, keep the chunks it holds as evaluated
        (every design OK) and evaluate only the others (failed or not run).
        The file's designs must equal ``designs``.
    overwrite : bool
        With ``out`` and without ``resume``: replace an existing file.  By
        default an existing results file is never replaced (a
        :class:`kic.ModelError` says so before anything runs).
    on_error : {"raise", "record"}
        ``"raise"``: the first chunk that raises stops the sweep and its
        exception propagates (with a note naming the chunk and its designs).
        ``"record"``: its designs get NaN results, status
        :attr:`SweepStatus.FAILED` and the message; the sweep goes on.
    checkpoint : float
        Seconds between saves of ``out`` while running.

    Returns
    -------
    SweepResult

    Raises
    ------
    kic.ModelError
        Designs of unequal lengths, without names, empty or of object dtype;
        an ``evaluate`` that is not callable or cannot be sent to the workers;
        a result that is not a dict of arrays with ``len(chunk)`` rows, or
        whose keys or trailing shapes change between chunks; an unknown
        ``scheduler`` or ``on_error``; ``resume`` without ``out`` or with a
        file of other designs; an existing ``out`` file without ``resume`` or
        ``overwrite``; a damaged ``out`` file with ``resume``.
    ImportError
        ``scheduler="dask"`` (or a Client/address) without Dask installed.

    Notes
    -----
    Chunks are independent tasks, so the speed-up is bounded by the number of
    cores and reduced by what each task pays besides the work: sending the
    chunk and ``evaluate`` (sent once per worker here), starting the workers
    (a ``LocalCluster`` takes seconds) and, for compiled kic kernels, loading
    them in each new worker process.  See ``docs/sweeps.md``.

    Examples
    --------
    >>> import numpy as np
    >>> from kic.sweep import sweep
    >>> def stretched_torque(chunk):          # a rod of mass m, length l, held level
    ...     return {"torque": 9.81 * chunk["m"] * chunk["l"] / 2}
    >>> designs = {"l": np.linspace(0.5, 1.0, 6), "m": np.full(6, 2.0)}
    >>> r = sweep(stretched_torque, designs, chunk_size=2, progress=False)
    >>> r.results["torque"].shape, bool(r.ok.all())
    ((6,), True)

    ``examples/sweep_example.py`` holds an importable evaluation of robot arms.
    """
    start_time = time.perf_counter()
    _check_call(evaluate, on_error, out, resume, overwrite)
    table = as_designs(designs, names)
    n = len(table)
    kind = _scheduler_kind(scheduler)
    workers = 1 if kind == "serial" else _worker_count(n_workers)
    previous = _previous(out, table) if resume else None
    chunk_size = _chunk_size(chunk_size, previous, n, kind, workers, out)
    _check_transport(evaluate, kind)

    state = _Gather(table, chunk_size, previous)
    state.result.scheduler = "dask" if kind == "dask" else kind
    state.result.n_workers = workers
    report = _Reporter(progress, state, start_time)
    saver = _Saver(out, checkpoint, state)
    todo = [k for k in range(state.n_chunks) if not state.done_chunk(k)]
    capture = on_error == "record"
    report(force=True)
    try:
        if todo:
            tasks = [(k, table[k * chunk_size:(k + 1) * chunk_size].copy()) for k in todo]
            runner = {"serial": _run_serial, "processes": _run_processes,
                      "dask": _run_dask}[kind]
            outcomes = runner(evaluate, tasks, capture, workers, scheduler, state.result)
            try:
                for k, outcome in outcomes:
                    state.take(k, outcome, capture)
                    report()
                    saver()
            finally:
                outcomes.close()        # stops the workers now, not when garbage collected
    except BaseException as exc:
        k = _CHUNK_OF.pop(id(exc), None)
        if k is not None:
            lo, hi = k * chunk_size, min((k + 1) * chunk_size, n)
            exc.add_note(f"kic.sweep: raised by chunk {k} (designs {lo} to {hi - 1}); "
                         "on_error='record' records failures and goes on")
        raise
    finally:
        state.result.wall_time = time.perf_counter() - start_time
        state.finish()
        report.close()
        saver(final=True)
    return state.result


# ----------------------------------------------------------------------------- designs

def _chunk_size(chunk_size, previous, n: int, kind: str, workers: int, out) -> int:
    """The chunk size given, or the default (the resumed file's, or a few chunks per
    worker); checked against the file resumed."""
    if chunk_size is None:
        chunk_size = (previous.chunk_size if previous is not None
                      else max(1, math.ceil(n / (10 if kind == "serial" else 4 * workers))))
    elif not (isinstance(chunk_size, (int, np.integer)) and not isinstance(chunk_size, bool)
              and chunk_size >= 1):
        raise ModelError(f"sweep: chunk_size must be a positive integer, got {chunk_size!r}")
    chunk_size = int(chunk_size)
    if previous is not None and previous.chunk_size != chunk_size:
        raise ModelError(f"sweep: resuming {os.fspath(out)!r}, written with chunk_size="
                         f"{previous.chunk_size}, with chunk_size={chunk_size}: use the same "
                         "chunk size (or leave it out)")
    return chunk_size


def _check_transport(evaluate, kind: str) -> None:
    """``evaluate`` must travel to the workers: by pickle (processes) or cloudpickle (Dask)."""
    if kind == "processes":
        _check_pickles(evaluate, pickle.dumps, "a local process pool (standard pickle)")
    elif kind == "dask":
        try:
            import cloudpickle
        except ImportError as exc:
            raise _dask_missing() from exc
        _check_pickles(evaluate, cloudpickle.dumps, "Dask workers (cloudpickle)")


def as_designs(designs, names: Sequence[str] | None = None) -> np.ndarray:
    """The designs as a 1-D structured array (one field per parameter).

    Accepts what :func:`sweep` accepts: a structured array, a mapping of names
    to arrays of equal leading length, or a plain ``(n, p)`` array with ``names``.

    Raises
    ------
    kic.ModelError
        Unequal lengths, missing or extra names, no designs, object dtypes.
    """
    if isinstance(designs, np.ndarray) and designs.dtype.names is not None:
        if names is not None:
            raise ModelError("sweep: names= is only for a plain (n, p) array; the structured "
                             "array's fields already name the parameters")
        table = designs
        if table.ndim != 1:
            raise ModelError(f"sweep: a structured array of designs must be 1-D, "
                             f"got shape {table.shape}")
    elif isinstance(designs, Mapping) or hasattr(designs, "keys"):
        if names is not None:
            raise ModelError("sweep: names= is only for a plain (n, p) array; the mapping's "
                             "keys already name the parameters")
        columns = {}
        for key in designs.keys():
            if not isinstance(key, str) or not key:
                raise ModelError(f"sweep: design parameter names must be non-empty strings, "
                                 f"got {key!r}")
            value = np.asarray(designs[key])
            if value.ndim == 0:
                raise ModelError(f"sweep: design parameter {key!r} is a scalar: give one value "
                                 "per design (np.full(n, value) for a constant)")
            columns[key] = value
        if not columns:
            raise ModelError("sweep: the designs have no parameters")
        lengths = {k: len(v) for k, v in columns.items()}
        if len(set(lengths.values())) > 1:
            told = ", ".join(f"{k!r} has {v}" for k, v in lengths.items())
            raise ModelError(f"sweep: design parameters of unequal lengths ({told}): every "
                             "parameter needs one value per design")
        n = next(iter(lengths.values()))
        table = np.empty(n, dtype=[(k, v.dtype, v.shape[1:]) for k, v in columns.items()])
        for k, v in columns.items():
            table[k] = v
    else:
        array = np.asarray(designs)
        if names is None:
            raise ModelError(f"sweep: a plain array of designs (shape {array.shape}) needs "
                             "names=[...] for its columns, or pass a dict or a structured array")
        names = list(names)
        if array.ndim == 1 and len(names) == 1:
            array = array[:, None]
        if array.ndim != 2 or array.shape[1] != len(names):
            raise ModelError(f"sweep: a plain array of designs must be (n, p) with p = "
                             f"len(names) = {len(names)}, got shape {array.shape}")
        if len(set(names)) != len(names) or not all(isinstance(s, str) and s for s in names):
            raise ModelError(f"sweep: names must be distinct non-empty strings, got {names}")
        table = np.empty(len(array), dtype=[(s, array.dtype) for s in names])
        for j, s in enumerate(names):
            table[s] = array[:, j]
    if len(table) == 0:
        raise ModelError("sweep: no designs (the batch is empty)")
    for key in table.dtype.names:
        if table.dtype[key].hasobject:
            raise ModelError(f"sweep: design parameter {key!r} has object dtype: use numbers "
                             "(or fixed-length strings)")
    return table


# ----------------------------------------------------------------------------- gathering

class _Gather:
    """Results of the finished chunks, in design order."""

    def __init__(self, table: np.ndarray, chunk_size: int, previous: SweepResult | None):
        n = len(table)
        self.n = n
        self.chunk_size = chunk_size
        self.n_chunks = math.ceil(n / chunk_size)
        self.result = SweepResult(
            designs=table, results={}, status=np.full(n, SweepStatus.NOT_RUN, np.int8),
            message=np.full(n, "", dtype=object), chunk_size=chunk_size,
            chunk_seconds=np.full(self.n_chunks, np.nan))
        self.resumed = 0
        self.chunks_finished = 0        # evaluated (OK or failed) or resumed
        if previous is not None:
            self.result.chunk_seconds[:] = previous.chunk_seconds
            keep = np.zeros(n, bool)
            for k in range(self.n_chunks):
                if np.all(previous.status[self._span(k)] == SweepStatus.OK):
                    keep[self._span(k)] = True
                else:
                    self.result.chunk_seconds[k] = np.nan
            if keep.any():
                self.result.status[keep] = SweepStatus.OK
                for key, value in previous.results.items():
                    # the dtype evaluate returned (the file holds float where NaN marks
                    # designs not yet run): a resumed sweep ends as a fresh one would
                    dtype = np.dtype(previous.result_dtypes.get(key, value.dtype))
                    store = np.zeros(value.shape, dtype)
                    store[keep] = value[keep].astype(dtype)
                    self.result.results[key] = store
                    self.result.result_dtypes[key] = dtype.str
            self.resumed = int(keep.sum())
            self.chunks_finished = sum(bool(keep[self._span(k)][0]) for k in range(self.n_chunks))
            self.result.resumed = self.resumed

    def _span(self, k: int) -> slice:
        return slice(k * self.chunk_size, min((k + 1) * self.chunk_size, self.n))

    def done_chunk(self, k: int) -> bool:
        return bool(np.all(self.result.status[self._span(k)] == SweepStatus.OK))

    def take(self, k: int, outcome: tuple, capture: bool) -> None:
        values, error, seconds = outcome
        span = self._span(k)
        self.chunks_finished += 1
        self.result.chunk_seconds[k] = seconds
        if error is None:
            try:
                self._store(span, values)
            except ModelError as exc:
                if not capture:
                    _CHUNK_OF[id(exc)] = k
                    raise
                error = f"ModelError: {exc}"
        if error is not None:
            self.result.status[span] = SweepStatus.FAILED
            self.result.message[span] = error[:_MESSAGE_LIMIT]
            for key in self.result.results:
                self._blank(key, span)
        else:
            self.result.status[span] = SweepStatus.OK

    def _store(self, span: slice, values: dict) -> None:
        results = self.result.results
        if results and set(values) != set(results):
            raise ModelError(f"sweep: evaluate returned results {sorted(values)} for designs "
                             f"{span.start} to {span.stop - 1}, but {sorted(results)} before: "
                             "every chunk must return the same names")
        for key, value in values.items():
            self.result.result_dtypes.setdefault(key, value.dtype.str)
            if key not in results:
                store = np.zeros((self.n,) + value.shape[1:], value.dtype)
                results[key] = store
                bad = self.result.status == SweepStatus.FAILED   # not-run ones: at the end
                if bad.any():
                    self._blank(key, bad)
            store = results[key]
            if value.shape[1:] != store.shape[1:]:
                raise ModelError(f"sweep: evaluate's result {key!r} has shape "
                                 f"{value.shape[1:]} per design for designs {span.start} to "
                                 f"{span.stop - 1}, but {store.shape[1:]} before")
            if not np.can_cast(value.dtype, store.dtype, "safe"):
                results[key] = store = store.astype(np.result_type(store, value))
            store[span] = value

    def _blank(self, key: str, where) -> None:
        self.result.results[key] = _blank(self.result.results[key], where)

    def finish(self) -> None:
        """Blank what never ran (results of a sweep stopped early stay NaN there)."""
        self.result = _blanked(self.result, copy=False)

    @property
    def done(self) -> int:
        return int(np.count_nonzero(self.result.status != SweepStatus.NOT_RUN))

    @property
    def failed(self) -> int:
        return int(np.count_nonzero(self.result.status == SweepStatus.FAILED))


def _blank(store: np.ndarray, where) -> np.ndarray:
    """``store`` with NaN at ``where`` (as float if it held integers or booleans)."""
    if store.dtype.kind not in "fc":
        store = store.astype(np.float64)
    store[where] = np.nan
    return store


def _blanked(result: SweepResult, copy: bool) -> SweepResult:
    """``result`` with NaN results where a design did not run and text messages."""
    results = {k: v.copy() for k, v in result.results.items()} if copy else result.results
    missing = result.status == SweepStatus.NOT_RUN
    if missing.any():
        for key in results:
            results[key] = _blank(results[key], missing)
    return SweepResult(**{**result.__dict__, "results": results,
                          "status": result.status.copy() if copy else result.status,
                          "message": _as_text(result.message)})


def _as_text(message) -> np.ndarray:
    message = np.asarray(message)
    return message.astype(str) if message.dtype == object else message


def _previous(out, table: np.ndarray) -> SweepResult | None:
    """The saved result to resume from, if ``out`` exists; it must hold these designs."""
    path = _npz_path(out)
    if not path.exists():
        return None
    previous = SweepResult.from_npz(path)
    same = (previous.designs.dtype == table.dtype and previous.designs.shape == table.shape
            and all(np.array_equal(previous.designs[k], table[k], equal_nan=table.dtype[k].kind
                                   in "fc") for k in table.dtype.names))
    if not same:
        raise ModelError(f"sweep: cannot resume from {os.fspath(path)!r}: it holds other designs "
                         f"({len(previous.designs)} of {previous.designs.dtype.names}, here "
                         f"{len(table)} of {table.dtype.names}); remove it or pass another out=")
    return previous


# ----------------------------------------------------------------------------- running

def _evaluate_chunk(evaluate, chunk: np.ndarray, capture: bool) -> tuple:
    """Run one chunk (in the worker): ``(results, error message or None, seconds)``."""
    t0 = time.perf_counter()
    try:
        values = _checked(evaluate(chunk), len(chunk))
    except Exception as exc:
        if not capture:
            raise
        return None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0
    return values, None, time.perf_counter() - t0


def _checked(values, rows: int) -> dict[str, np.ndarray]:
    if not isinstance(values, Mapping):
        raise ModelError(f"sweep: evaluate must return a dict of arrays, got "
                         f"{type(values).__name__}")
    checked = {}
    for key, value in values.items():
        if not isinstance(key, str) or not key:
            raise ModelError(f"sweep: evaluate's result names must be non-empty strings, "
                             f"got {key!r}")
        value = np.asarray(value)
        if value.ndim == 0 or value.shape[0] != rows:
            raise ModelError(f"sweep: evaluate's result {key!r} has shape {value.shape}; it "
                             f"needs one row per design of the chunk ({rows}, ...)")
        if value.dtype.kind not in "biufc":
            raise ModelError(f"sweep: evaluate's result {key!r} has dtype {value.dtype}; "
                             "results must be numbers or booleans")
        checked[key] = value
    return checked


def _run_serial(evaluate, tasks, capture, workers, scheduler, result):
    for k, chunk in tasks:
        try:
            yield k, _evaluate_chunk(evaluate, chunk, capture)
        except Exception as exc:
            _CHUNK_OF[id(exc)] = k
            raise


_WORKER_EVALUATE = None         # evaluate, installed once in each pool worker


def _install(evaluate) -> None:
    global _WORKER_EVALUATE
    _WORKER_EVALUATE = evaluate


def _pool_chunk(chunk: np.ndarray, capture: bool) -> tuple:
    return _evaluate_chunk(_WORKER_EVALUATE, chunk, capture)


def _run_processes(evaluate, tasks, capture, workers, scheduler, result):
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # evaluate (and any model it holds) goes to each worker once, not with every task
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_install, initargs=(evaluate,))
    try:
        pending = {pool.submit(_pool_chunk, chunk, capture): k for k, chunk in tasks}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                k = pending.pop(future)
                yield k, _chunk_result(future, k)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _chunk_result(future, k: int):
    """The outcome of chunk k's future; its exception remembers the chunk (the
    error then names the failed point's index in the caller's batch)."""
    try:
        return future.result()
    except Exception as exc:
        _CHUNK_OF[id(exc)] = k
        raise


def _dask_missing() -> ImportError:
    return ImportError("sweep on Dask needs dask.distributed: pip install 'kic[sweep]'")


def _run_dask(evaluate, tasks, capture, workers, scheduler, result):
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise _dask_missing() from exc
    owned = []
    try:
        running = _running_client() if scheduler == "dask" else None
        if isinstance(scheduler, Client):
            client = scheduler
        elif running is not None:
            client = running        # a cluster started by the caller: seconds saved
        elif scheduler == "dask":
            # single-threaded worker processes: numpy/numba work holds the GIL in
            # places, and one chunk per core is the unit of parallel work
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            owned.append(cluster)
            client = Client(cluster)
            owned.append(client)
        else:
            client = Client(scheduler)
            owned.append(client)
        if not owned or scheduler != "dask":
            result.n_workers = len(client.scheduler_info().get("workers", ())) or workers
        # evaluate (and any model it holds) travels once to each worker
        remote = client.scatter(evaluate, broadcast=True, hash=False)
        futures = {client.submit(_evaluate_chunk, remote, chunk, capture, pure=False): k
                   for k, chunk in tasks}
        try:
            for future in as_completed(futures):
                k = futures[future]
                yield k, _chunk_result(future, k)
        finally:
            client.cancel(list(futures))
    finally:
        for thing in reversed(owned):
            thing.close()


def _check_call(evaluate, on_error: str, out, resume: bool, overwrite: bool) -> None:
    """The arguments of :func:`sweep` that are wrong before anything runs."""
    if not callable(evaluate):
        raise ModelError(f"sweep: evaluate must be a function of a chunk of designs, "
                         f"got {type(evaluate).__name__}")
    if on_error not in ("raise", "record"):
        raise ModelError(f"sweep: on_error={on_error!r}: use 'raise' or 'record'")
    if resume and out is None:
        raise ModelError("sweep: resume=True needs out= (the file to resume from)")
    if out is not None and not (resume or overwrite) and _npz_path(out).exists():
        raise ModelError(f"sweep: {os.fspath(_npz_path(out))!r} exists: pass resume=True to "
                         "continue it, overwrite=True to replace it, or another out=")


def _running_client():
    """The Dask client this process is using already (the default one), if any."""
    try:
        from dask.distributed import default_client
        return default_client()
    except (ImportError, ValueError):       # no Dask, or no client running
        return None


def _scheduler_kind(scheduler) -> str:
    if isinstance(scheduler, str):
        if scheduler in _SCHEDULERS:
            return scheduler
        if "://" in scheduler or ":" in scheduler:
            return "dask"           # a scheduler address
        raise ModelError(f"sweep: unknown scheduler {scheduler!r}: use 'serial', 'processes', "
                         "'dask', a dask.distributed.Client or a scheduler address "
                         "('tcp://host:8786')")
    try:
        from dask.distributed import Client
    except ImportError:
        Client = None
    if Client is not None and isinstance(scheduler, Client):
        return "dask"
    raise ModelError(f"sweep: scheduler must be 'serial', 'processes', 'dask', a "
                     f"dask.distributed.Client or an address, got {type(scheduler).__name__}")


def _worker_count(n_workers) -> int:
    if n_workers is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:      # not on Linux
            return max(1, os.cpu_count() or 1)
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) \
            or n_workers < 1:
        raise ModelError(f"sweep: n_workers must be a positive integer, got {n_workers!r}")
    return int(n_workers)


def _check_pickles(evaluate, dumps, where: str) -> None:
    try:
        dumps(evaluate)
    except Exception as exc:    # pickle raises PicklingError, AttributeError, TypeError...
        name = getattr(evaluate, "__qualname__", type(evaluate).__name__)
        raise ModelError(
            f"sweep: evaluate {name!r} cannot be sent to {where}: {type(exc).__name__}: {exc}. "
            "Define it at module level in an importable module (not a lambda or a function "
            "inside another; functools.partial of a module-level function is fine), and "
            "keep open files, locks and clients out of it") from exc


# ----------------------------------------------------------------------------- reporting

class _Reporter:
    """A progress line on stderr (or a user's callback), at most ~10 lines a second."""

    def __init__(self, progress, state: _Gather, start: float):
        self.callback = progress if callable(progress) else None
        self.text = bool(progress) and self.callback is None
        self.state = state
        self.start = start
        self.last = -math.inf
        self.tty = self.text and getattr(sys.stderr, "isatty", lambda: False)()

    def _info(self) -> SweepProgress:
        s = self.state
        elapsed = time.perf_counter() - self.start
        evaluated = s.done - s.resumed
        rate = evaluated / elapsed if evaluated and elapsed > 0 else math.nan
        eta = (s.n - s.done) / rate if rate > 0 else math.nan
        return SweepProgress(s.done, s.n, s.chunks_finished, s.n_chunks, s.failed, elapsed,
                             rate, eta)

    def __call__(self, force: bool = False) -> None:
        if self.callback is not None:
            if not force:
                self.callback(self._info())
            return
        if not self.text or (force and not self.tty):   # logs: no empty first line
            return
        now = time.perf_counter()
        if not force and now - self.last < (0.1 if self.tty else 5.0):
            return
        self.last = now
        self._write(self._line(self._info()), end="\r" if self.tty else "\n")

    def _line(self, p: SweepProgress) -> str:
        r = self.state.result
        line = (f"sweep [{r.scheduler} x{r.n_workers}]: {p.done}/{p.total} designs "
                f"({100.0 * p.done / p.total:.0f}%)")
        if p.failed:
            line += f", {p.failed} failed"
        if p.rate == p.rate:
            line += f", {p.rate:.3g} designs/s"
        if p.done < p.total:
            line += f", ETA {_clock(p.eta)}" if p.eta == p.eta else ""
        else:
            line += f" in {_clock(p.elapsed)}"
        return line

    def _write(self, text: str, end: str) -> None:
        sys.stderr.write(text.ljust(79) + end if self.tty else text + end)
        sys.stderr.flush()

    def close(self) -> None:
        if self.text:
            self._write(self._line(self._info()), end="\n")


def _clock(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class _Saver:
    """Writes ``out`` every ``checkpoint`` seconds and at the end."""

    def __init__(self, out, checkpoint: float, state: _Gather):
        if out is not None and not (isinstance(checkpoint, (int, float)) and checkpoint >= 0):
            raise ModelError(f"sweep: checkpoint must be seconds >= 0, got {checkpoint!r}")
        self.out, self.checkpoint, self.state = out, checkpoint, state
        self.last = time.perf_counter()

    def __call__(self, final: bool = False) -> None:
        if self.out is None:
            return
        now = time.perf_counter()
        if final or now - self.last >= self.checkpoint:
            self.last = now
            # while running, a snapshot (NaN where not yet run); the live arrays stay as they are
            _blanked(self.state.result, copy=not final).to_npz(self.out)
