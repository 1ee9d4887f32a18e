"""kic.sweep: design sweeps in chunks, serially, on a process pool and on Dask.

The evaluation functions are defined at module level here: the pool's workers
(forked) and Dask's (spawned, with this process's sys.path, which conftest
extends with tests/) import them from this module by name.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import time

import numpy as np
import pytest

import kic
from kic.sweep import SweepProgress, SweepResult, SweepStatus, sweep

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
from sweep_example import arm_torques  # noqa: E402  (examples/sweep_example.py)

N = 23                  # not a multiple of the chunk sizes used: a short last chunk
CHUNK = 5


def designs(n: int = N) -> dict:
    i = np.arange(n)
    return {"i": i, "a": np.sin(i + 1.0), "b": np.cos(2.0 * i)}


def expected(d: dict) -> dict:
    a, b = np.asarray(d["a"]), np.asarray(d["b"])
    return {"s": a + 2.0 * b, "v": np.stack([a, b, a * b], axis=1)}


def evaluate(chunk):
    """Vectorized over the chunk; the first chunk is slow, so it finishes last on
    two workers; ``finished`` records when each chunk ended."""
    if chunk["i"][0] == 0:
        time.sleep(0.3)
    out = expected({"a": chunk["a"], "b": chunk["b"]})
    out["finished"] = np.full(len(chunk), time.time())
    out["count"] = np.ones(len(chunk), dtype=np.int64)
    return out


def evaluate_failing(chunk, bad=(7,)):
    """Raises for a chunk holding one of the designs ``bad``."""
    hit = np.intersect1d(chunk["i"], bad)
    if hit.size:
        raise ValueError(f"design {int(hit[0])} is infeasible")
    out = expected({"a": chunk["a"], "b": chunk["b"]})
    out["count"] = np.ones(len(chunk), dtype=np.int64)
    return out


def evaluate_run(chunk, run=1):
    """Tags each design with the run that evaluated it."""
    return {"s": chunk["a"] + 2.0 * chunk["b"], "run": np.full(len(chunk), run)}


def evaluate_model(chunk, arm):
    """Gravity torques of a model sent with the function, at q = (a, b)."""
    q = np.stack([chunk["a"], chunk["b"]], axis=1)
    return {"tau": arm.inverse_dynamics(q, np.zeros_like(q), np.zeros_like(q))}


def evaluate_rows(chunk):
    return {"s": np.zeros(len(chunk) + 1)}


class Counting:
    """Counts its calls (serial only: a copy in another process would count there)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __call__(self, chunk):
        self.calls += 1
        return self.inner(chunk)


def check_values(result: SweepResult, d: dict, ok=None) -> None:
    ok = np.ones(len(d["a"]), bool) if ok is None else ok
    want = expected(d)
    for key in ("s", "v"):
        np.testing.assert_allclose(result.results[key][ok], want[key][ok], rtol=0, atol=1e-15)
        assert np.isnan(result.results[key][~ok]).all()
    np.testing.assert_array_equal(result.status, np.where(ok, SweepStatus.OK,
                                                          SweepStatus.FAILED))


# ----------------------------------------------------------------------------- schedulers

def test_serial_results_in_design_order_with_a_short_last_chunk():
    d = designs()
    r = sweep(evaluate, d, chunk_size=CHUNK, progress=False)
    check_values(r, d)
    assert len(r) == N and r.names == ("i", "a", "b") and r.scheduler == "serial"
    assert r.chunk_seconds.shape == (5,) and np.all(r.chunk_seconds > 0)
    assert r.chunk_seconds[0] >= 0.3 and r.wall_time >= r.chunk_seconds.sum()
    np.testing.assert_array_equal(r.designs["i"], d["i"])
    assert r.results["count"].dtype == np.int64 and r.results["count"].sum() == N


def test_processes_match_serial_though_chunks_finish_out_of_order():
    d = designs()
    serial = sweep(evaluate, d, chunk_size=CHUNK, progress=False)
    pool = sweep(evaluate, d, chunk_size=CHUNK, scheduler="processes", n_workers=2,
                 progress=False)
    assert pool.scheduler == "processes" and pool.n_workers == 2
    for key in ("s", "v", "count"):
        np.testing.assert_array_equal(pool.results[key], serial.results[key])
    finished = pool.results["finished"]
    assert finished[0] > finished[CHUNK], "the slow first chunk should finish after the second"


def test_design_forms_agree():
    d = designs()
    table = np.column_stack([d["i"], d["a"], d["b"]])
    structured = np.zeros(N, dtype=[("i", int), ("a", float), ("b", float)])
    for k in d:
        structured[k] = d[k]
    runs = [sweep(evaluate, form, chunk_size=4, progress=False, **kw) for form, kw in
            [(d, {}), (structured, {}), (table, {"names": ["i", "a", "b"]})]]
    for r in runs:
        check_values(r, d)
    assert runs[2].designs.dtype == np.dtype([("i", float), ("a", float), ("b", float)])
    # one design parameter as a 1-D plain array
    one = sweep(lambda c: {"x": 2 * c["x"]}, np.arange(3.0), names=["x"], progress=False)
    np.testing.assert_array_equal(one.results["x"], [0.0, 2.0, 4.0])


def test_a_model_travels_with_the_function():
    import pickle

    from mechanisms import planar_two_link

    arm = planar_two_link(l1=0.7, m2=2.5)
    copy = pickle.loads(pickle.dumps(arm))
    d = designs()
    q = np.stack([d["a"], d["b"]], axis=1)
    direct = arm.inverse_dynamics(q, np.zeros_like(q), np.zeros_like(q))
    np.testing.assert_array_equal(copy.inverse_dynamics(q, 0 * q, 0 * q), direct)
    r = sweep(functools.partial(evaluate_model, arm=arm), d, chunk_size=CHUNK,
              scheduler="processes", n_workers=2, progress=False)
    np.testing.assert_allclose(r.results["tau"], direct, rtol=1e-13, atol=1e-13)


# ----------------------------------------------------------------------------- failures

def test_record_marks_the_failing_chunk_and_keeps_the_rest():
    d = designs()
    for scheduler in ("serial", "processes"):
        r = sweep(evaluate_failing, d, chunk_size=CHUNK, scheduler=scheduler, n_workers=2,
                  progress=False, on_error="record")
        ok = (d["i"] < 5) | (d["i"] >= 10)               # design 7 is in chunk 1: 5..9
        check_values(r, d, ok)
        assert np.all(r.message[~ok] == "ValueError: design 7 is infeasible")
        assert np.all(r.message[ok] == "")
        # an integer result holds NaN for the failed designs, so it becomes float
        assert r.results["count"].dtype == np.float64
        assert np.nansum(r.results["count"]) == ok.sum()


def test_raise_stops_at_the_failing_chunk_and_names_it():
    with pytest.raises(ValueError, match="design 7 is infeasible") as info:
        sweep(evaluate_failing, designs(), chunk_size=CHUNK, progress=False)
    assert any("chunk 1 (designs 5 to 9)" in note for note in info.value.__notes__)
    with pytest.raises(ValueError, match="design 7") as info:
        sweep(evaluate_failing, designs(), chunk_size=CHUNK, scheduler="processes",
              n_workers=2, progress=False)
    assert any("chunk 1 (designs 5 to 9)" in note for note in info.value.__notes__)


def test_malformed_results_raise_or_are_recorded():
    with pytest.raises(kic.ModelError, match=r"result 's' has shape \(6,\).*\(5, \.\.\.\)"):
        sweep(evaluate_rows, designs(), chunk_size=CHUNK, progress=False)
    r = sweep(evaluate_rows, designs(), chunk_size=CHUNK, progress=False, on_error="record")
    assert np.all(r.status == SweepStatus.FAILED) and r.results == {}
    assert "ModelError" in r.message[0]

    def changing(chunk):
        return {"s": chunk["a"]} if chunk["i"][0] == 0 else {"t": chunk["a"]}
    with pytest.raises(kic.ModelError, match=r"results \['t'\].*\['s'\] before"):
        sweep(changing, designs(), chunk_size=CHUNK, progress=False)
    with pytest.raises(kic.ModelError, match="must return a dict"):
        sweep(lambda c: c["a"], designs(), progress=False)


# ----------------------------------------------------------------------------- files

def test_out_writes_an_npz_that_loads_back(tmp_path):
    d = designs()
    path = tmp_path / "results.npz"
    r = sweep(evaluate_failing, d, chunk_size=CHUNK, progress=False, out=path,
              on_error="record")
    back = SweepResult.from_npz(path)
    with np.load(path, allow_pickle=False) as raw:       # plain arrays, no pickles
        assert "designs" in raw.files and "result.s" in raw.files
    assert back.designs.dtype == r.designs.dtype
    np.testing.assert_array_equal(back.designs, r.designs)
    for key in r.results:
        np.testing.assert_array_equal(back.results[key], r.results[key])
    np.testing.assert_array_equal(back.status, r.status)
    np.testing.assert_array_equal(back.message, r.message)
    np.testing.assert_array_equal(back.chunk_seconds, r.chunk_seconds)
    assert (back.chunk_size, back.wall_time, back.scheduler) == (CHUNK, r.wall_time, "serial")
    # to_npz / from_npz directly, and a path without the suffix
    written = r.to_npz(tmp_path / "again")
    assert written.name == "again.npz"
    np.testing.assert_array_equal(SweepResult.from_npz(written).results["s"], r.results["s"])
    (tmp_path / "other.npz").write_bytes(b"not a zip")
    with pytest.raises(kic.ModelError, match="cannot be read"):
        SweepResult.from_npz(tmp_path / "other.npz")


def test_resume_skips_the_chunks_in_the_file(tmp_path):
    d = designs()
    path = tmp_path / "sweep.npz"
    # a first run that stops at the chunk of design 12 (chunk 2); chunks 0 and 1 are saved
    first = Counting(functools.partial(evaluate_run, run=1))
    stopping = Counting(functools.partial(evaluate_failing, bad=(12,)))
    with pytest.raises(ValueError, match="design 12"):
        sweep(lambda c: (stopping(c), first(c))[1], d, chunk_size=CHUNK, progress=False,
              out=path)
    saved = SweepResult.from_npz(path)
    np.testing.assert_array_equal(saved.status, np.where(d["i"] < 10, SweepStatus.OK,
                                                         SweepStatus.NOT_RUN))
    assert np.isnan(saved.results["s"][10:]).all() and (stopping.calls, first.calls) == (3, 2)

    second = Counting(functools.partial(evaluate_run, run=2))
    seen: list[SweepProgress] = []
    r = sweep(second, d, chunk_size=CHUNK, progress=seen.append, out=path, resume=True)
    assert second.calls == 3                      # chunks 2, 3, 4 only
    assert [(p.done, p.chunks_done) for p in seen] == [(15, 3), (20, 4), (23, 5)]
    assert r.resumed == 10 and np.all(r.ok)
    np.testing.assert_array_equal(r.results["run"], np.where(d["i"] < 10, 1, 2))
    np.testing.assert_allclose(r.results["s"], expected(d)["s"], rtol=0, atol=1e-15)
    assert set(r.results) == {"s", "run"}
    # everything done: resuming again evaluates nothing; chunk size taken from the file
    third = Counting(functools.partial(evaluate_run, run=3))
    again = sweep(third, d, progress=False, out=path, resume=True)
    assert third.calls == 0 and again.chunk_size == CHUNK
    np.testing.assert_array_equal(again.results["run"], r.results["run"])


def test_checkpoints_while_running(tmp_path):
    path = tmp_path / "sweep.npz"
    seen = []

    def look(_progress):        # called after each chunk, before that chunk's checkpoint
        if path.exists():
            saved = SweepResult.from_npz(path)
            seen.append((int(saved.ok.sum()), int(np.isnan(saved.results["s"]).sum())))
    sweep(evaluate_run, designs(), chunk_size=CHUNK, progress=look, out=path, checkpoint=0)
    assert seen == [(5, 18), (10, 13), (15, 8), (20, 3)]
    assert SweepResult.from_npz(path).ok.all()


def test_an_interrupt_is_not_recorded_and_the_file_keeps_what_was_done(tmp_path):
    def interrupted(chunk):
        if 12 in chunk["i"]:
            raise KeyboardInterrupt
        return evaluate_run(chunk)
    path = tmp_path / "sweep.npz"
    with pytest.raises(KeyboardInterrupt):
        sweep(interrupted, designs(), chunk_size=CHUNK, progress=False, out=path,
              on_error="record")
    saved = SweepResult.from_npz(path)
    np.testing.assert_array_equal(saved.status, np.where(designs()["i"] < 10, SweepStatus.OK,
                                                         SweepStatus.NOT_RUN))


def test_resume_retries_recorded_failures(tmp_path):
    d = designs()
    path = tmp_path / "sweep.npz"
    sweep(evaluate_failing, d, chunk_size=CHUNK, progress=False, out=path, on_error="record")
    retry = Counting(functools.partial(evaluate_failing, bad=()))      # the cause fixed
    r = sweep(retry, d, chunk_size=CHUNK, progress=False, out=path, resume=True)
    assert retry.calls == 1 and np.all(r.ok)
    check_values(r, d)


def test_resume_refuses_other_designs_or_chunks(tmp_path):
    d = designs()
    path = tmp_path / "sweep.npz"
    sweep(evaluate_run, d, chunk_size=CHUNK, progress=False, out=path)
    other = {**d, "a": d["a"] + 1e-9}
    with pytest.raises(kic.ModelError, match="other designs"):
        sweep(evaluate_run, other, chunk_size=CHUNK, progress=False, out=path, resume=True)
    with pytest.raises(kic.ModelError, match="chunk_size=5, with chunk_size=4"):
        sweep(evaluate_run, d, chunk_size=4, progress=False, out=path, resume=True)
    with pytest.raises(kic.ModelError, match="resume=True needs out="):
        sweep(evaluate_run, d, progress=False, resume=True)
    # without resume an existing file is kept, unless overwrite=True says otherwise
    with pytest.raises(kic.ModelError, match="exists: pass resume=True .* overwrite=True"):
        sweep(evaluate_run, other, chunk_size=4, progress=False, out=path)
    assert SweepResult.from_npz(path).chunk_size == CHUNK
    r = sweep(evaluate_run, other, chunk_size=4, progress=False, out=path, overwrite=True)
    assert SweepResult.from_npz(path).chunk_size == 4 and r.resumed == 0


# ----------------------------------------------------------------------------- progress

def test_progress_callback_and_text_line(capsys):
    seen: list[SweepProgress] = []
    sweep(evaluate_run, designs(), chunk_size=CHUNK, progress=seen.append)
    assert [p.done for p in seen] == [5, 10, 15, 20, 23]
    assert [p.chunks_done for p in seen] == [1, 2, 3, 4, 5]
    last = seen[-1]
    assert (last.total, last.chunks_total, last.failed, last.eta) == (N, 5, 0, 0.0)
    assert last.rate > 0 and last.elapsed > 0
    sweep(evaluate_failing, designs(), chunk_size=CHUNK, on_error="record")
    err = capsys.readouterr().err
    assert "sweep [serial x1]: 23/23 designs (100%), 5 failed" in err and "designs/s" in err
    sweep(evaluate_run, designs(), progress=False)
    assert capsys.readouterr().err == ""


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("bad, kwargs, match", [
    ({"a": np.ones(3), "b": np.ones(4)}, {}, r"unequal lengths \('a' has 3, 'b' has 4\)"),
    ({"a": 1.0}, {}, "'a' is a scalar"),
    ({}, {}, "no parameters"),
    ({"a": np.ones(0)}, {}, "no designs"),
    (np.ones((4, 2)), {}, r"needs names=\[\.\.\.\]"),
    (np.ones((4, 2)), {"names": ["a"]}, r"\(n, p\) with p = len\(names\) = 1"),
    (np.ones((4, 2)), {"names": ["a", "a"]}, "distinct"),
    ({"a": np.array([None, 1], dtype=object)}, {}, "'a' has object dtype"),
    ({"a": np.ones(3)}, {"names": ["a"]}, "names= is only for a plain"),
    ({"a": np.ones(3)}, {"chunk_size": 0}, "chunk_size must be a positive integer"),
    ({"a": np.ones(3)}, {"scheduler": "threads"}, "unknown scheduler 'threads'"),
    ({"a": np.ones(3)}, {"scheduler": 3}, "got int"),
    ({"a": np.ones(3)}, {"on_error": "ignore"}, "on_error='ignore'"),
    ({"a": np.ones(3)}, {"scheduler": "processes", "n_workers": 0}, "n_workers must be"),
])
def test_bad_inputs_raise_model_error(bad, kwargs, match):
    with pytest.raises(kic.ModelError, match=match):
        sweep(evaluate_run, bad, progress=False, **kwargs)


def test_evaluate_that_cannot_reach_the_workers():
    with pytest.raises(kic.ModelError, match="evaluate must be a function"):
        sweep(42, designs(), progress=False)
    # a lambda does not pickle by reference: fine serially, refused for the process pool
    with pytest.raises(kic.ModelError, match=r"<lambda>' cannot be sent to a local process "
                                             r"pool.*module level"):
        sweep(lambda c: {"s": c["a"]}, designs(), scheduler="processes", progress=False)
    # a lock pickles neither way (cloudpickle sends lambdas, not locks); refused before
    # any cluster starts
    holding = functools.partial(evaluate_run, run=threading.Lock())
    for scheduler in ("processes", "dask"):
        with pytest.raises(kic.ModelError, match="cannot be sent.*lock"):
            sweep(holding, designs(), scheduler=scheduler, progress=False)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    with pytest.raises(ImportError, match=r"pip install 'kic\[sweep\]'"):
        sweep(evaluate_run, designs(), scheduler="dask", progress=False)


# ----------------------------------------------------------------------------- example

def test_example_arm_torques_is_the_arm_inverse_dynamics():
    from mechanisms import planar_three_link

    chunk = np.zeros(2, dtype=[("l1", float), ("m3", float)])
    chunk["l1"], chunk["m3"] = [0.6, 1.2], [2.0, 0.5]
    got = arm_torques(chunk, n_poses=50, duration=1.0)
    t = np.arange(50) / 50.0
    a, phi, w = np.array([1.0, 0.8, 0.6]), np.array([0.0, 0.5, 1.0]), 2 * np.pi
    q = a * np.sin(w * t[:, None] + phi)
    for k in range(2):
        arm = planar_three_link(l1=chunk["l1"][k], m3=chunk["m3"][k])
        # qd, qdd by central differences of q(t) (the example uses their closed forms)
        h = 1e-4
        qp, qm = a * np.sin(w * (t[:, None] + h) + phi), a * np.sin(w * (t[:, None] - h) + phi)
        tau = arm.inverse_dynamics(q, (qp - qm) / (2 * h), (qp - 2 * q + qm) / h**2)
        np.testing.assert_allclose(got["peak_torque"][k], np.abs(tau).max(axis=0), rtol=1e-6)
        np.testing.assert_allclose(got["rms_torque"][k], np.sqrt((tau**2).mean(axis=0)),
                                   rtol=1e-6)
    with pytest.raises(kic.ModelError, match=r"unknown design parameters \['l4'\]"):
        arm_torques(np.zeros(1, dtype=[("l4", float)]))
    r = sweep(arm_torques, {"l1": np.array([1.0, -1.0])}, chunk_size=1, progress=False,
              on_error="record")
    np.testing.assert_array_equal(r.status, [SweepStatus.OK, SweepStatus.FAILED])
    assert r.message[1].startswith("ModelError") and "l1" in r.message[1]


# ----------------------------------------------------------------------------- Dask

def test_dask_local_cluster_matches_serial_and_records_failures():
    pytest.importorskip("dask.distributed")
    d = designs()
    serial = sweep(evaluate_failing, d, chunk_size=CHUNK, progress=False, on_error="record")
    r = sweep(evaluate_failing, d, chunk_size=CHUNK, scheduler="dask", n_workers=2,
              progress=False, on_error="record")
    assert (r.scheduler, r.n_workers) == ("dask", 2)
    for key in ("s", "v", "count"):
        np.testing.assert_array_equal(r.results[key], serial.results[key])
    np.testing.assert_array_equal(r.status, serial.status)
    np.testing.assert_array_equal(r.message, serial.message)


def test_dask_client_is_used_and_left_open():
    distributed = pytest.importorskip("dask.distributed")
    d = designs()
    serial = sweep(evaluate, d, chunk_size=CHUNK, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout="20s") as client:
        r = sweep(evaluate, d, chunk_size=CHUNK, scheduler=client, n_workers=7, progress=False)
        assert (r.scheduler, r.n_workers) == ("dask", 2)        # the cluster's, not n_workers
        for key in ("s", "v", "count"):
            np.testing.assert_array_equal(r.results[key], serial.results[key])
        with pytest.raises(ValueError, match="design 7") as info:
            sweep(evaluate_failing, d, chunk_size=CHUNK, scheduler=client, progress=False)
        assert any("chunk 1" in note for note in info.value.__notes__)
        # a model pickled to spawned workers gives the same torques as here
        from mechanisms import planar_two_link
        arm = planar_two_link(l1=0.7, m2=2.5)
        q = np.stack([d["a"], d["b"]], axis=1)
        sent = sweep(functools.partial(evaluate_model, arm=arm), d, chunk_size=CHUNK,
                     scheduler=client, progress=False)
        np.testing.assert_allclose(sent.results["tau"], arm.inverse_dynamics(q, 0 * q, 0 * q),
                                   rtol=1e-13, atol=1e-13)
        # by the scheduler's address: a client of its own, closed after the sweep
        by_address = sweep(evaluate, d, chunk_size=CHUNK, scheduler=cluster.scheduler_address,
                           progress=False)
        np.testing.assert_array_equal(by_address.results["s"], serial.results["s"])
        assert client.status == "running"
        assert client.submit(os.getpid).result() != os.getpid()
        # scheduler="dask" takes the client that is running, starts no cluster of its own
        def no_new_cluster(*args, **kwargs):
            raise AssertionError("sweep started a LocalCluster beside a running client")
        import dask.distributed
        real = dask.distributed.LocalCluster
        dask.distributed.LocalCluster = no_new_cluster
        try:
            reused = sweep(evaluate, d, chunk_size=CHUNK, scheduler="dask", n_workers=7,
                           progress=False)
        finally:
            dask.distributed.LocalCluster = real
        assert (reused.scheduler, reused.n_workers) == ("dask", 2)
        np.testing.assert_array_equal(reused.results["s"], serial.results["s"])
        assert client.status == "running"


# ----------------------------------------------------------------------------- files kept
def test_a_resumed_sweep_keeps_integer_and_boolean_results(tmp_path):
    def typed(chunk):
        if 12 in chunk["i"]:
            raise KeyboardInterrupt
        return {"n": chunk["i"] * 2, "flag": chunk["a"] > 0}
    path = tmp_path / "typed.npz"
    with pytest.raises(KeyboardInterrupt):
        sweep(typed, designs(), chunk_size=CHUNK, progress=False, out=path)
    # the file holds NaN where designs did not run, so float there ...
    assert SweepResult.from_npz(path).results["n"].dtype.kind == "f"

    def rest(chunk):
        return {"n": chunk["i"] * 2, "flag": chunk["a"] > 0}
    r = sweep(rest, designs(), progress=False, out=path, resume=True)
    # ... and the finished sweep gives back what evaluate returned, as a fresh one does
    fresh = sweep(rest, designs(), chunk_size=CHUNK, progress=False)
    assert r.resumed > 0 and r.ok.all()
    for key in ("n", "flag"):
        assert r.results[key].dtype == fresh.results[key].dtype
        np.testing.assert_array_equal(r.results[key], fresh.results[key])
    assert SweepResult.from_npz(path).results["n"].dtype == fresh.results["n"].dtype


def test_a_damaged_file_is_a_kic_error_naming_it(tmp_path):
    path = tmp_path / "damaged.npz"
    sweep(evaluate_run, designs(), chunk_size=CHUNK, progress=False, out=path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])                  # a file cut short
    with pytest.raises(kic.ModelError, match="damaged.npz"):
        SweepResult.from_npz(path)
    with pytest.raises(kic.ModelError, match="damaged.npz"):
        sweep(evaluate_run, designs(), chunk_size=CHUNK, progress=False, out=path,
              resume=True)
    path.write_bytes(b"not a zip file at all")
    with pytest.raises(kic.ModelError, match="damaged.npz"):
        SweepResult.from_npz(path)


def test_writers_never_share_a_temporary_file(tmp_path):
    import threading
    path = tmp_path / "shared.npz"
    results = [sweep(evaluate_run, designs(), chunk_size=CHUNK, progress=False)
               for _ in range(2)]
    errors = []

    def save(r):
        try:
            for _ in range(20):
                r.to_npz(path)
        except Exception as exc:            # noqa: BLE001 - any failure is the finding
            errors.append(exc)
    threads = [threading.Thread(target=save, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    loaded = SweepResult.from_npz(path)                       # one whole file, not a mix
    np.testing.assert_array_equal(loaded.results["s"], results[0].results["s"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.npz"]   # no temporaries left
