"""Stewart platform design sweep: anchor radii and half-angles against leg forces,
conditioning and the legs' stroke, with a Pareto plot.

Designs: a grid of base and platform anchor radii ``rb``, ``rp`` (m) and
half-angles of the anchor pairs (rad).  ``kic.sweep`` hands the designs over
chunk by chunk (serially, on processes or on Dask); each chunk is one design
batch (``mechanisms.stewart_designs``: the structure built once, no model per
design) evaluated in one call:

* the task: a fixed random set of platform poses about the home pose
  (0, 0, 0.6 m): +/-0.08 m in x, y, +/-0.05 m in z, +/-10 degrees in each angle;
* leg forces (N) for 12 platform accelerations at each pose (+/-2 m/s^2 along
  each axis, +/-5 rad/s^2 about each, at rest), and the actuation's condition
  number (dimensionless, with the design's characteristic length), by
  ``batch.loads(..., accelerations=A)``.  Failures are data: a pose whose legs
  leave their stroke (0.5 to 0.8 m, the prismatic joints' limits) is
  ``OUTSIDE_LIMITS``, a singular one ``SINGULAR_LOAD``; both give NaN, never
  an exception.

Per design: the fraction of the task's poses it can do (``feasible``: every leg
inside its stroke, not singular), the fractions outside the stroke and
singular, the peak |leg force| and worst condition over the poses it can do,
and the leg lengths the task needs (shortest, longest, and the stroke
``longest - shortest``, m, whether or not the legs have it).

A design is *feasible* when it does every pose of the task.  The headline is
the feasible design of least peak leg force; the Pareto plot (peak force
against the stroke needed, ``kic.plot.tradeoff``, into ``--out``, default
``examples/out/``) shows the feasible designs.  Designs with equal half-angles
are singular everywhere (the legs meet in pairs at the platform's anchors'
angles; Fichter's singularity family); designs whose anchors are far apart
need legs longer than 0.8 m at the tilted poses.

Run::

    python examples/stewart_sweep.py --quick           # a few seconds
    python examples/stewart_sweep.py --scheduler dask --workers 2
"""
from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                 # run from a fresh clone without installing
    sys.path.insert(0, str(ROOT))

import kic  # noqa: E402
import kic.sweep  # noqa: E402
import mechanisms  # noqa: E402

NAMES = ("rb", "rp", "base_half_angle", "plat_half_angle")
STROKE = (0.5, 0.8)                       # m
HOME = np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.0])


def poses(n: int, seed: int = 0) -> np.ndarray:
    """n platform poses (n, 6) (m, rad) about the home pose; the first is home."""
    rng = np.random.default_rng(seed)
    half = np.array([0.08, 0.08, 0.05, *np.radians([10.0, 10.0, 10.0])])
    P = HOME + rng.uniform(-1.0, 1.0, (n, 6)) * half
    P[0] = HOME
    return P


def accelerations() -> np.ndarray:
    """The 12 platform accelerations (12, 6): +/-2 m/s^2 along x, y, z and
    +/-5 rad/s^2 about yaw, pitch, roll."""
    a = np.diag([2.0, 2.0, 2.0, 5.0, 5.0, 5.0])
    return np.concatenate([a, -a])


def grid(quick: bool = False) -> dict:
    """The designs: every combination of the parameter values (a dict of arrays)."""
    if quick:
        values = ([0.4, 0.55], [0.25, 0.35], np.radians([10.0, 25.0]),
                  np.radians([25.0, 45.0]))
    else:
        values = ([0.4, 0.5, 0.6], [0.2, 0.3, 0.4], np.radians([5.0, 15.0, 25.0]),
                  np.radians([15.0, 35.0, 55.0]))
    mesh = np.meshgrid(*values, indexing="ij")
    return {n: m.ravel() for n, m in zip(NAMES, mesh)}


RESULTS = ("feasible", "outside_stroke", "singular", "peak_force", "worst_condition",
           "shortest_leg", "longest_leg", "stroke_needed")


def evaluate(chunk, n_poses: int = 200) -> dict:
    """Per design of the chunk (one design batch, one call): ``feasible``,
    ``outside_stroke``, ``singular`` (fractions of the poses: doable, a leg
    outside its stroke, singular actuation), ``peak_force`` (N, the peak |leg
    force| over the doable poses and the accelerations), ``worst_condition``
    (over the doable poses), ``shortest_leg``, ``longest_leg`` and
    ``stroke_needed`` (m, the leg lengths the task needs, stroke or not)."""
    P = poses(n_poses)
    batch = mechanisms.stewart_designs(**{k: chunk[k] for k in NAMES}, stroke=STROKE)
    res = batch.loads(P, np.zeros(6), accelerations=accelerations())
    ok = res.status == kic.Status.OK                                 # (D, n)
    # the legs' closed-form inverse kinematics: the lengths the task asks for
    lengths = batch.guess(batch.parameters, P[None])[..., leg_columns(batch)]   # (D, n, 6)
    forces = np.where(ok[..., None, None], np.abs(res.actuator_loads), -np.inf)
    condition = np.where(ok, res.actuation_condition, -np.inf)
    peak, worst = forces.max(axis=(1, 2, 3)), condition.max(axis=1)
    return {"feasible": ok.mean(axis=1),
            "outside_stroke": np.mean(res.status == kic.Status.OUTSIDE_LIMITS, axis=1),
            "singular": np.mean(res.status == kic.Status.SINGULAR_LOAD, axis=1),
            "peak_force": np.where(ok.any(axis=1), peak, np.nan),
            "worst_condition": np.where(ok.any(axis=1), worst, np.nan),
            "shortest_leg": lengths.min(axis=(1, 2)),
            "longest_leg": lengths.max(axis=(1, 2)),
            "stroke_needed": lengths.max(axis=(1, 2)) - lengths.min(axis=(1, 2))}


def leg_columns(batch) -> list:
    """Indices of the legs' prismatic joints (their lengths, m) in the batch's joints."""
    return [i for i, name in enumerate(batch.plan.phi_names) if name.endswith(".p")]


def everywhere_singular(res) -> np.ndarray:
    """Designs (bool) singular at every pose of the task inside the stroke."""
    return (res["singular"] > 0) & (res["singular"] + res["outside_stroke"] == 1.0)


def pareto_plot(result, out: Path) -> Path:
    """The trade-off of peak leg force and the stroke needed over the feasible
    designs, front labelled."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import kic.plot
    out.mkdir(parents=True, exist_ok=True)
    res = result.results
    feasible = res["feasible"] == 1.0
    d = result.designs[feasible]
    labels = [f"{rb:.2f}/{rp:.2f} m, {np.degrees(a):.0f}/{np.degrees(b):.0f} deg"
              for rb, rp, a, b in zip(d["rb"], d["rp"], d["base_half_angle"],
                                      d["plat_half_angle"])]
    ax = kic.plot.tradeoff(res["peak_force"][feasible], res["stroke_needed"][feasible] * 1e3,
                           labels=("peak |leg force| (N)", "stroke needed (mm)"),
                           annotate=labels,
                           title=f"Stewart platform: the {len(d)} feasible of {len(result)} "
                                 f"designs (rb/rp, base/platform half-angles)")
    path = out / "stewart_pareto.png"
    ax.figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(ax.figure)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="16 designs x 30 poses")
    p.add_argument("--out", type=Path, default=ROOT / "examples" / "out",
                   help="folder for the plot and the results (default examples/out/)")
    p.add_argument("--scheduler", default="serial", help="serial, processes or dask")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--poses", type=int, default=None)
    a = p.parse_args(argv)
    n_poses = a.poses or (30 if a.quick else 200)
    designs = grid(a.quick)
    a.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # a chunk is one design batch: serially, one chunk of all designs (its set-up
    # once); with workers, kic.sweep's chunks (about four per worker)
    chunk = len(designs["rb"]) if a.scheduler == "serial" else None
    result = kic.sweep.sweep(partial(evaluate, n_poses=n_poses), designs, chunk_size=chunk,
                             scheduler=a.scheduler, n_workers=a.workers,
                             out=a.out / "stewart_sweep.npz", overwrite=True)
    took = time.perf_counter() - start
    n, res = len(result), result.results
    feasible = res["feasible"] == 1.0
    print(f"{n} designs x {n_poses} poses x 12 accelerations in {took:.1f} s "
          f"({took / n * 1e3:.1f} ms per design, scheduler {a.scheduler})")
    print(f"{int(feasible.sum())} designs feasible (every pose inside the "
          f"{STROKE[0]}-{STROKE[1]} m stroke, none singular); "
          f"{int(np.sum(everywhere_singular(res)))} designs singular at every pose inside "
          f"the stroke; "
          f"{int(np.sum(res['outside_stroke'] > 0))} designs with poses outside the stroke "
          f"(up to {res['outside_stroke'].max() * 100:.0f} % of the poses)")
    if not feasible.any():
        print("no feasible design: widen the stroke or the grid")
        return 1
    best = int(np.argmin(np.where(feasible, res["peak_force"], np.inf)))
    d = result.designs[best]
    print(f"least peak leg force of the feasible designs: {res['peak_force'][best]:.1f} N "
          f"at rb {d['rb']:.2f} m, rp {d['rp']:.2f} m, half-angles "
          f"{np.degrees(d['base_half_angle']):.0f} / {np.degrees(d['plat_half_angle']):.0f} deg "
          f"(legs {res['shortest_leg'][best]:.3f} to {res['longest_leg'][best]:.3f} m, "
          f"worst condition {res['worst_condition'][best]:.1f})")
    print("wrote", pareto_plot(result, a.out))
    print("wrote", a.out / "stewart_sweep.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
