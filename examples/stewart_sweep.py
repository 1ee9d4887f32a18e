"""Stewart platform design sweep: anchor radii and half-angles against leg forces
and conditioning, with a Pareto plot.

Designs: a grid of base and platform anchor radii ``rb``, ``rp`` (m) and
half-angles of the anchor pairs (rad).  For each design (``kic.sweep``
evaluates them chunk by chunk, serially, on processes or on Dask):

* the poses: a fixed random set of platform poses about the home pose
  (0, 0, 0.6 m): +/-0.08 m in x, y, +/-0.05 m in z, +/-10 degrees in each angle;
* leg forces (N) for 12 platform accelerations at each pose (+/-2 m/s^2 along
  each axis, +/-5 rad/s^2 about each, at rest), by
  ``model.actuator_loads(..., on_failure="nan")``: a singular design gives NaN
  and a status per pose, not an exception (failures as data);
* the conditioning of the actuation over the poses
  (``kic.indices.task_conditioning``, dimensionless, scale-invariant);
* the fraction of poses outside the legs' stroke (0.5 to 0.8 m,
  ``model.geometry.status``).

Objectives (both minimised): the peak |leg force| over poses and accelerations,
and the actuator stroke the poses need (longest minus shortest leg length, m):
a wide, well-conditioned platform needs less force but longer strokes.  The
worst condition number over the poses is recorded too.  Designs with equal half-angles
are singular everywhere (the legs meet in pairs at the platform's anchors'
angles; Fichter's singularity family): their forces are NaN and their
condition infinite, and they are off the plot.  The Pareto plot
(``kic.plot.tradeoff``) goes into ``--out`` (default ``examples/out/``).

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
import kic.indices  # noqa: E402
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


def evaluate(chunk, n_poses: int = 200) -> dict:
    """Per design of the chunk: ``peak_force`` (N), ``worst_condition``,
    ``mean_inverse_condition`` (the global conditioning index over the poses),
    ``stroke_needed`` (m, longest minus shortest leg length over the poses),
    ``failed`` (fraction of pose-accelerations without a force: singular),
    ``outside_stroke`` (fraction of poses)."""
    P = poses(n_poses)
    A = accelerations()
    q = np.repeat(P, len(A), axis=0)              # (n_poses * 12, 6)
    qdd = np.tile(A, (n_poses, 1))
    out = {k: np.full(len(chunk), np.nan) for k in
           ("peak_force", "worst_condition", "mean_inverse_condition", "failed",
            "outside_stroke", "stroke_needed")}
    for i, d in enumerate(chunk):
        sp = mechanisms.stewart_platform(**{k: float(d[k]) for k in NAMES}, stroke=STROKE)
        f, status = sp.actuator_loads(q, np.zeros(6), qdd, sp.actuators, on_failure="nan")
        ok = status == kic.Status.OK
        out["failed"][i] = 1.0 - ok.mean()
        out["peak_force"][i] = np.abs(f[ok]).max() if ok.all() else np.nan
        cond = kic.indices.task_conditioning(sp, P)
        out["worst_condition"][i] = np.max(cond.condition)
        out["mean_inverse_condition"][i] = np.mean(cond.inverse_condition)
        out["outside_stroke"][i] = np.mean(sp.geometry.status(P) == kic.Status.OUTSIDE_LIMITS)
        L = sp.geometry.leg_lengths(P)
        out["stroke_needed"][i] = L.max() - L.min()
    return out


def pareto_plot(result, out: Path) -> Path:
    """The trade-off of peak leg force and the stroke needed, front labelled."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import kic.plot
    out.mkdir(parents=True, exist_ok=True)
    d = result.designs
    labels = [f"{rb:.2f}/{rp:.2f} m, {np.degrees(a):.0f}/{np.degrees(b):.0f} deg"
              for rb, rp, a, b in zip(d["rb"], d["rp"], d["base_half_angle"],
                                      d["plat_half_angle"])]
    res = result.results
    ax = kic.plot.tradeoff(res["peak_force"], res["stroke_needed"] * 1e3,
                           labels=("peak |leg force| (N)", "stroke needed (mm)"), annotate=labels,
                           title=f"Stewart platform: {len(d)} designs "
                                 "(rb/rp, base/platform half-angles)")
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
    result = kic.sweep.sweep(partial(evaluate, n_poses=n_poses), designs,
                             scheduler=a.scheduler, n_workers=a.workers,
                             out=a.out / "stewart_sweep.npz", overwrite=True)
    took = time.perf_counter() - start
    n, res = len(result), result.results
    singular = np.isnan(res["peak_force"])
    print(f"{n} designs x {n_poses} poses x 12 accelerations in {took:.1f} s "
          f"({took / n * 1e3:.1f} ms per design, scheduler {a.scheduler})")
    print(f"{int(singular.sum())} designs singular somewhere (no leg forces there: "
          f"failures as data); outside the stroke: up to "
          f"{np.nanmax(res['outside_stroke']) * 100:.0f} % of the poses")
    best = int(np.nanargmin(np.where(singular, np.nan, res["peak_force"])))
    d = result.designs[best]
    print(f"least peak leg force: {res['peak_force'][best]:.1f} N at rb {d['rb']:.2f} m, "
          f"rp {d['rp']:.2f} m, half-angles {np.degrees(d['base_half_angle']):.0f} / "
          f"{np.degrees(d['plat_half_angle']):.0f} deg (worst condition "
          f"{res['worst_condition'][best]:.1f})")
    print("wrote", pareto_plot(result, a.out))
    print("wrote", a.out / "stewart_sweep.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
