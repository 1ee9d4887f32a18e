"""Per-design cost of design studies: today's loop (build + evaluate one model per
design) against a design batch (:mod:`kic.designs`: one structure, the designs'
numbers in a stack of float buffers, one compiled call).

Run from the repository root::

    python benchmarks/designs.py            # 200 five-bar designs, 30 Stewart designs
    python benchmarks/designs.py --quick    # 40 and 6 designs, 200 Stewart poses
    python benchmarks/designs.py --backend numba

What is measured (milliseconds per design, the minimum of the repeats; CPU time of
one process):

* five-bar: the task of ``examples/five_bar_optimization.py`` (a 0.1 m circle,
  100 points in 0.5 s): inverse kinematics, crank rates and accelerations,
  crank torques (I*, P*, gravity) and the conditioning of the tip task per
  point.  Today: ``evaluate(x)`` of the example (``five_bar()`` build,
  ``geometry.inverse``/``inverse_rates``, ``inverse_dynamics(on_failure="nan")``,
  ``kic.indices.point_conditioning``) per design.  Batch:
  ``mechanisms.five_bar_designs`` (the writer) + ``mechanisms.five_bar_task``.
  Target: <= 1 ms per design.
* Stewart platform: 1,000 poses x 12 platform accelerations at rest, the six leg
  forces and the actuation's condition number.  Today: ``stewart_platform()`` +
  ``actuator_loads(..., on_failure="nan")`` on the 12,000 rows, per design.
  Batch: ``mechanisms.stewart_designs`` + ``batch.loads(poses, 0,
  accelerations=A)`` (per pose I* and the bias once, the 12 accelerations by
  matrix-vector products).  Target: <= 5 ms per design.

With the numpy backend a design batch evaluates each design's model (built on
demand) through the public API: the figure shows that path, not a fast one.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "examples"))

import kic  # noqa: E402
import mechanisms  # noqa: E402
from mechanisms import five_bar_task  # noqa: E402

import five_bar_optimization as fbo  # noqa: E402  (examples/: today's evaluation)

TARGET_FIVE_BAR, TARGET_STEWART = 1.0, 5.0        # ms per design


def best_of(fn, repeats: int) -> float:
    """Minimum CPU time of this process (s) of ``fn()`` over the repeats (the
    work is single-threaded; CPU time is less disturbed by other load)."""
    best = np.inf
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def five_bar_designs_random(D: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo, hi = np.array(fbo.BOUNDS).T
    return lo + rng.uniform(size=(D, 3)) * (hi - lo)


def five_bar_batch(X: np.ndarray):
    base, crank, coupler = X.T
    batch = mechanisms.five_bar_designs(
        base=base, crank1=crank, crank2=crank, coupler1=coupler, coupler2=coupler,
        m_crank1=fbo.CRANK_DENSITY * crank, m_crank2=fbo.CRANK_DENSITY * crank,
        m_coupler1=fbo.COUPLER_DENSITY * coupler, m_coupler2=fbo.COUPLER_DENSITY * coupler,
        mode=fbo.MODE)
    _, tip, tip_rate, tip_acc = fbo.task()
    return five_bar_task(batch, tip, tip_rate, tip_acc)


def stewart_params(D: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return dict(rb=rng.uniform(0.4, 0.6, D), rp=rng.uniform(0.2, 0.4, D),
                base_half_angle=np.radians(rng.uniform(5, 25, D)),
                plat_half_angle=np.radians(rng.uniform(15, 55, D)))


def stewart_poses(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    half = np.array([0.08, 0.08, 0.05, *np.radians([10.0, 10.0, 10.0])])
    P = np.array([0, 0, 0.6, 0, 0, 0]) + rng.uniform(-1, 1, (n, 6)) * half
    a = np.diag([2.0, 2.0, 2.0, 5.0, 5.0, 5.0])
    return P, np.concatenate([a, -a])


def stewart_today(prm: dict, P, A) -> None:
    q = np.repeat(P, len(A), axis=0)
    qdd = np.tile(A, (len(P), 1))
    for d in range(len(prm["rb"])):
        sp = mechanisms.stewart_platform(**{k: float(v[d]) for k, v in prm.items()})
        sp.actuator_loads(q, np.zeros(6), qdd, sp.actuators, on_failure="nan")


def stewart_batch(prm: dict, P, A):
    batch = mechanisms.stewart_designs(**prm)
    return batch.loads(P, np.zeros(6), accelerations=A)


def row(what: str, seconds: float, D: int, target: float | None) -> str:
    ms = seconds / D * 1e3
    goal = "" if target is None else f"   target <= {target:.0f} ms: " + \
        ("met" if ms <= target else "NOT met")
    return f"  {what:<44s} {ms:9.3f} ms per design{goal}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--backend", choices=("numba", "numpy", "both"), default="both")
    a = p.parse_args(argv)
    D5, DS, n_poses = (40, 6, 200) if a.quick else (200, 30, 1000)
    repeats = 2 if a.quick else 3
    backends = ["numba", "numpy"] if a.backend == "both" else [a.backend]
    X = five_bar_designs_random(D5)
    prm = stewart_params(DS)
    P, A = stewart_poses(n_poses)
    print(f"kic design batches: five-bar {D5} designs x 100 task points; Stewart {DS} designs "
          f"x {n_poses} poses x 12 accelerations ({'quick' if a.quick else 'full'} run)")
    for backend in backends:
        try:
            kic.set_backend(backend)
        except ImportError:
            print(f"backend {backend}: not available")
            continue
        print(f"backend {kic.get_backend()}:")
        five_bar_batch(X[:2])                       # compile / warm up
        stewart_batch({k: v[:2] for k, v in prm.items()}, P[:5], A)
        Dn5 = D5 if backend == "numba" else min(D5, 20)
        Dns = DS if backend == "numba" else min(DS, 3)
        today5 = best_of(lambda: [fbo.evaluate(x) for x in X[:Dn5]], repeats)
        batch5 = best_of(lambda: five_bar_batch(X), repeats)
        print(row("five-bar, today's loop (examples' evaluate)", today5, Dn5, TARGET_FIVE_BAR))
        print(row("five-bar, design batch (writer + task)", batch5, D5, TARGET_FIVE_BAR))
        print(f"  {'':44s} {today5 / Dn5 / (batch5 / D5):9.1f} x faster")
        todayS = best_of(lambda: stewart_today({k: v[:Dns] for k, v in prm.items()}, P, A),
                         1 if backend == "numpy" else repeats)
        batchS = best_of(lambda: stewart_batch({k: v[:Dns] for k, v in prm.items()}, P, A),
                         1 if backend == "numpy" else repeats)
        print(row("Stewart, today's loop (build + actuator_loads)", todayS, Dns, TARGET_STEWART))
        print(row("Stewart, design batch (writer + loads)", batchS, Dns, TARGET_STEWART))
        print(f"  {'':44s} {todayS / batchS:9.1f} x faster")
    kic.set_backend("auto")
    return 0


if __name__ == "__main__":
    sys.exit(main())
