"""Design sweeps: speed-up against the number of workers, side by side in one run.

Each design is a planar three-link arm (link lengths and masses varied); its
evaluation is the inverse dynamics along a 2 s trajectory at ``--poses``
instants, peak and RMS torques kept.  Timed in one process, interleaved:

* ``serial``                       -- the reference;
* ``processes`` x1, x2, ...        -- a local process pool started per call;
* ``dask`` with a running client   -- the cluster started once, before the timing;
* ``dask`` starting its cluster    -- what one call costs when it starts a LocalCluster.

Prints wall-clock seconds (best of ``--repeats``) and the speed-up over serial.
On this 2-core machine the ideal is 2x; the start-up of a LocalCluster (seconds)
is why a running client should be reused for repeated sweeps.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import kic
from kic.sweep import sweep


def evaluate(chunk, n_poses: int = 2000) -> dict:
    """Peak and RMS joint torques (N m) of planar three-link arms on one trajectory."""
    t = np.linspace(0.0, 2.0, n_poses)
    w = 2 * np.pi / 2.0
    a, ph = np.array([1.0, 0.8, 0.6]), np.array([0.0, 0.5, 1.0])
    q = a * np.sin(w * t[:, None] + ph)
    qd = a * w * np.cos(w * t[:, None] + ph)
    qdd = -a * w * w * np.sin(w * t[:, None] + ph)
    peak, rms = np.empty((len(chunk), 3)), np.empty((len(chunk), 3))
    for k, d in enumerate(chunk):
        links = [kic.Link(float(d[f"m{i}"]), com=(float(d[f"l{i}"]) / 2, 0, 0),
                          inertia=np.diag([0.0, 1.0, 1.0]) * float(d[f"m{i}"])
                          * float(d[f"l{i}"]) ** 2 / 12) for i in (1, 2, 3)]
        T = [np.eye(4) for _ in range(3)]
        for i in (1, 2):
            T[i][0, 3] = float(d[f"l{i}"])
        joints = [kic.Joint("R", (0, 0, 1), T[i]) for i in range(3)]
        arm = kic.SerialChain(joints, links, gravity=(0, -9.81, 0))
        tau = arm.inverse_dynamics(q, qd, qdd)
        peak[k], rms[k] = np.abs(tau).max(0), np.sqrt((tau ** 2).mean(0))
    return {"peak_torque": peak, "rms_torque": rms}


def designs(n: int) -> dict:
    rng = np.random.default_rng(0)
    return {f"l{i}": rng.uniform(0.3, 0.8, n) for i in (1, 2, 3)} | \
        {f"m{i}": rng.uniform(0.5, 3.0, n) for i in (1, 2, 3)}


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--designs", type=int, default=400)
    p.add_argument("--poses", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="100 designs x 500 poses, 1 repeat")
    a = p.parse_args(argv)
    if a.quick:
        a.designs, a.poses, a.repeats = 100, 500, 1
    from functools import partial
    fn, d = partial(evaluate, n_poses=a.poses), designs(a.designs)
    cores = len(os.sched_getaffinity(0))
    print(f"{a.designs} designs x {a.poses} poses, {cores} cores, backend {kic.get_backend()}, "
          f"best of {a.repeats} (wall s)")
    rows = {"serial": lambda: sweep(fn, d, progress=False)}
    for w in sorted({1, 2, cores}):
        rows[f"processes x{w}"] = (lambda w=w: sweep(fn, d, scheduler="processes",
                                                     n_workers=w, progress=False))
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        Client = None
    sweep(fn, d, progress=False)                          # warm the kernels' cache
    serial = best(rows.pop("serial"), a.repeats)
    print(f"  {'serial':28s} {serial:7.2f} s   1.00x")
    for name, run in rows.items():
        s = best(run, a.repeats)
        print(f"  {name:28s} {s:7.2f} s   {serial / s:4.2f}x")
    if Client is None:
        print("  (dask not installed: pip install 'kic[sweep]')")
        return
    for w in sorted({1, 2, cores}):
        with LocalCluster(n_workers=w, threads_per_worker=1, dashboard_address=None) as cl, \
                Client(cl):
            sweep(fn, d, scheduler="dask", progress=False)            # warm the workers
            s = best(lambda: sweep(fn, d, scheduler="dask", progress=False), a.repeats)
        print(f"  {f'dask, running client x{w}':28s} {s:7.2f} s   {serial / s:4.2f}x")
    s = best(lambda: sweep(fn, d, scheduler="dask", n_workers=cores, progress=False), 1)
    print(f"  {f'dask, cluster started x{cores}':28s} {s:7.2f} s   {serial / s:4.2f}x   "
          "(start-up included)")


if __name__ == "__main__":
    main()
