"""Five-bar design optimization: the link lengths that trace a task circle with the
smallest peak crank torque.

The task: the tip C runs once round a circle of diameter 0.1 m centred at
(0.1, 0.45) m in 0.5 s (100 points, constant speed), in the working mode
elbows (-1, +1) and the assembly mode tip side +1 (elbows out, the tip above
the base: ``mechanisms.five_bar`` modes).  The design variables are the base,
crank and coupler lengths (the linkage symmetric: both cranks alike, both
couplers alike); masses scale with length (cranks 4 kg/m, couplers 2.29 kg/m,
the defaults' densities) and the tip mass stays 0.5 kg.

For each design: the closed-form inverse kinematics of the task
(``model.geometry.inverse`` and ``inverse_rates``), the crank torques by
``model.inverse_dynamics(..., on_failure="nan")`` (failures as data, no
exception), and the conditioning of the tip task by
``kic.indices.point_conditioning``.  The objective is the peak |torque| (N m)
plus a penalty:

* 100 N m + 100 N m x the fraction of task points that failed (out of reach,
  in another mode, singular);
* 10 N m x (1 - min inverse condition / 0.2) where the task Jacobian's inverse
  condition drops below 0.2 (a condition number above 5) somewhere on the circle.

``scipy.optimize.differential_evolution`` searches the lengths and prints a
progress line per generation; the optimum is drawn (``kic.plot.draw``) with
the task circle and its torque profile plotted, into ``--out`` (default
``examples/out/``).

Run::

    python examples/five_bar_optimization.py --quick     # ~10-20 s
    python examples/five_bar_optimization.py             # the full search
    python examples/five_bar_optimization.py --batch     # each generation one design batch
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                 # run from a fresh clone without installing
    sys.path.insert(0, str(ROOT))

import kic  # noqa: E402
import kic.indices  # noqa: E402
import mechanisms  # noqa: E402

#: the task: centre (m), diameter (m), period (s), points
CENTRE, DIAMETER, PERIOD, POINTS = (0.1, 0.45), 0.1, 0.5, 100
MODE = (-1, 1, 1)                       # (elbow1, elbow2, tip side)
#: design variables and their bounds (m)
NAMES = ("base", "crank", "coupler")
BOUNDS = [(0.05, 0.4), (0.1, 0.45), (0.1, 0.6)]
CRANK_DENSITY, COUPLER_DENSITY = 4.0, 0.8 / 0.35       # kg/m
MIN_INVERSE_CONDITION = 0.2
FAIL_PENALTY, CONDITION_PENALTY = 100.0, 10.0           # N m


def task(points: int = POINTS, centre=CENTRE, diameter: float = DIAMETER,
         period: float = PERIOD):
    """Times t (n,) (s), tip positions, velocities and accelerations (n, 2)
    (m, m/s, m/s^2) of the circle traced once at constant speed."""
    t = np.linspace(0.0, period, points, endpoint=False)
    w, r = 2 * np.pi / period, diameter / 2
    u = np.stack([np.cos(w * t), np.sin(w * t)], -1)
    v = np.stack([-np.sin(w * t), np.cos(w * t)], -1)
    return t, np.asarray(centre) + r * u, r * w * v, -r * w * w * u


def build(x, mode=MODE) -> kic.ClosedModel:
    """The five-bar of design x = (base, crank, coupler) (m) in ``mode``."""
    base, crank, coupler = (float(v) for v in x)
    return mechanisms.five_bar(base=base, crank1=crank, crank2=crank, coupler1=coupler,
                               coupler2=coupler, m_crank1=CRANK_DENSITY * crank,
                               m_crank2=CRANK_DENSITY * crank,
                               m_coupler1=COUPLER_DENSITY * coupler,
                               m_coupler2=COUPLER_DENSITY * coupler, mode=mode)


def evaluate(x, path=None, mode=MODE) -> dict:
    """Everything about design x along the task: a dict with ``objective``
    (N m), ``peak`` (N m, NaN if a point failed), ``tau`` (n, 2), ``q`` (n, 2),
    ``status`` (n,) (:class:`kic.Status`), ``inverse_condition`` (n,),
    ``model``."""
    t, X, Xd, Xdd = task() if path is None else path
    n = len(t)
    try:
        model = build(x, mode)
    except kic.ModelError:              # the mode does not exist for these lengths
        return dict(objective=FAIL_PENALTY * 2, peak=np.nan, status=np.ones(n, int),
                    model=None)
    geo = model.geometry
    q, status = geo.inverse(X)
    ok = status == kic.Status.OK
    tau = np.full((n, 2), np.nan)
    inv = np.full(n, np.nan)
    if ok.any():
        qd, qdd = geo.inverse_rates(q[ok], X[ok], Xd[ok], Xdd[ok])
        tau[ok], st = model.inverse_dynamics(q[ok], qd, qdd, on_failure="nan")
        status[ok] = st
        ok = status == kic.Status.OK
    if ok.any():
        cond = kic.indices.point_conditioning(model, q[ok], "coupler1", (geo.coupler1, 0, 0))
        inv[ok] = cond.inverse_condition
    failed = 1.0 - ok.mean()
    peak = float(np.nanmax(np.abs(tau))) if ok.any() else np.nan
    objective = (0.0 if np.isnan(peak) else peak)
    if failed:
        objective += FAIL_PENALTY * (1.0 + failed)
    worst = float(np.nanmin(inv)) if ok.any() else 0.0
    if worst < MIN_INVERSE_CONDITION:
        objective += CONDITION_PENALTY * (1.0 - worst / MIN_INVERSE_CONDITION)
    return dict(objective=objective, peak=peak if not failed else np.nan, tau=tau, q=q,
                status=status, inverse_condition=inv, model=model)


def objective(x) -> float:
    """The scalar the optimizer minimises (N m)."""
    return evaluate(x)["objective"]


def objectives(X) -> np.ndarray:
    """The same objective for many designs at once: ``X`` (3, S) (m), one column
    per design (differential evolution's ``vectorized=True`` layout); one design
    batch (``mechanisms.five_bar_designs``, no model built per design) and the
    task on it (``mechanisms.five_bar_task``), failures as data.  Returns (S,)."""
    base, crank, coupler = np.asarray(X, dtype=float).reshape(3, -1)
    batch = mechanisms.five_bar_designs(
        base=base, crank1=crank, crank2=crank, coupler1=coupler, coupler2=coupler,
        m_crank1=CRANK_DENSITY * crank, m_crank2=CRANK_DENSITY * crank,
        m_coupler1=COUPLER_DENSITY * coupler, m_coupler2=COUPLER_DENSITY * coupler,
        mode=MODE)
    _, tip, tip_rate, tip_acc = task()
    out = mechanisms.five_bar_task(batch, tip, tip_rate, tip_acc)
    ok = out.status == kic.Status.OK                                   # (S, n)
    any_ok = ok.any(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        peak = np.where(any_ok, np.nanmax(np.where(ok[..., None], np.abs(out.torques),
                                                   -np.inf), axis=(1, 2)), np.nan)
        worst = np.where(any_ok, np.nanmin(np.where(ok, 1.0 / out.condition, np.inf),
                                           axis=1), 0.0)
    failed = 1.0 - ok.mean(axis=1)
    value = np.where(np.isnan(peak), 0.0, peak)
    value = value + np.where(failed > 0, FAIL_PENALTY * (1.0 + failed), 0.0)
    value = value + np.where(worst < MIN_INVERSE_CONDITION,
                             CONDITION_PENALTY * (1.0 - worst / MIN_INVERSE_CONDITION), 0.0)
    return value


class Progress:
    """One line per generation: generation, evaluations, best objective and design."""

    def __init__(self, stream=sys.stdout):
        self.generation, self.start, self.stream = 0, time.perf_counter(), stream
        self.evaluations = 0

    def count(self, x) -> float:
        self.evaluations += 1
        return objective(x)

    def count_batch(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float).reshape(3, -1)
        self.evaluations += X.shape[1]
        return objectives(X)

    def __call__(self, intermediate_result) -> None:
        self.generation += 1
        r = intermediate_result
        design = ", ".join(f"{n} {v:.4f}" for n, v in zip(NAMES, r.x))
        print(f"generation {self.generation:3d}: {self.evaluations:5d} designs, best "
              f"{r.fun:8.4f} N m ({design} m), {time.perf_counter() - self.start:6.1f} s",
              file=self.stream, flush=True)


def optimize(popsize: int = 15, maxiter: int = 60, seed: int = 1, stream=sys.stdout,
             batch: bool = False):
    """Differential evolution over (base, crank, coupler): (scipy result, Progress).
    With ``batch`` each generation is one design batch (``vectorized=True``; the
    population is updated once per generation, scipy's ``updating="deferred"``,
    so the search differs from the one-design-at-a-time run)."""
    from scipy.optimize import differential_evolution
    progress = Progress(stream)
    fun = progress.count_batch if batch else progress.count
    extra = dict(vectorized=True, updating="deferred") if batch else {}
    res = differential_evolution(fun, BOUNDS, popsize=popsize, maxiter=maxiter,
                                 seed=seed, tol=1e-6, polish=False, callback=progress,
                                 init="sobol", **extra)
    return res, progress


def plots(x, out: Path, result: dict | None = None) -> list[Path]:
    """The optimum drawn at the start of the task with the circle, and its crank
    torque profile: two PNG files in ``out``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import kic.plot
    out.mkdir(parents=True, exist_ok=True)
    r = evaluate(x) if result is None else result
    model, t = r["model"], task()[0]
    X = task()[1]
    ax = kic.plot.draw(model, r["q"][0], title="five-bar optimum: base {:.3f}, crank {:.3f}, "
                       "coupler {:.3f} m".format(*x))
    ax.plot(X[:, 0], X[:, 1], color="#2471a3", lw=1.2, label="task circle")
    ax.legend(frameon=False, loc="upper left")
    files = [out / "five_bar_optimum.png"]
    ax.figure.savefig(files[0], dpi=110, bbox_inches="tight")
    plt.close(ax.figure)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for k in range(2):
        ax.plot(t, r["tau"][:, k], label=f"crank {k + 1}")
    ax.axhline(r["peak"], color="0.6", lw=0.8, ls="--")
    ax.axhline(-r["peak"], color="0.6", lw=0.8, ls="--")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("crank torque (N m)")
    ax.set_title(f"torques along the task circle, peak {r['peak']:.3f} N m")
    ax.grid(True, color="0.9")
    ax.legend(frameon=False)
    files.append(out / "five_bar_torques.png")
    fig.savefig(files[1], dpi=110, bbox_inches="tight")
    plt.close(fig)
    return files


def time_per_design(x=(0.2, 0.25, 0.35), repeat: int = 20) -> float:
    """Seconds per design evaluation (build, inverse kinematics, torques,
    conditioning along the 100 task points), best of a few runs."""
    evaluate(x)
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeat):
            evaluate(x)
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a small search (a few seconds)")
    p.add_argument("--out", type=Path, default=ROOT / "examples" / "out",
                   help="folder for the plots (default examples/out/)")
    p.add_argument("--popsize", type=int, default=None)
    p.add_argument("--maxiter", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch", action="store_true",
                   help="evaluate each generation as one design batch (kic.DesignBatch; "
                        "compiled, about 10x faster per design with numba)")
    a = p.parse_args(argv)
    popsize = a.popsize or (4 if a.quick else 15)
    maxiter = a.maxiter or (6 if a.quick else 60)
    default = evaluate((0.2, 0.25, 0.35))
    print(f"task: circle of {DIAMETER} m diameter at {CENTRE} m in {PERIOD} s, {POINTS} "
          f"points, mode (elbow1, elbow2, tip side) = {MODE}")
    print(f"default five-bar (0.2, 0.25, 0.35 m): peak crank torque {default['peak']:.4f} N m, "
          f"worst inverse condition {np.nanmin(default['inverse_condition']):.3f}")
    print(f"cost per design: {time_per_design(repeat=5 if a.quick else 20) * 1e3:.2f} ms "
          "(build + inverse kinematics + torques + conditioning, 100 points)")
    res, progress = optimize(popsize, maxiter, a.seed, batch=a.batch)
    best = evaluate(res.x)
    modes = best["model"].geometry.modes(best["model"].assemble(best["q"]))
    assert np.all(modes == MODE), "the optimum left the requested mode"
    print(f"optimum after {progress.evaluations} designs: base {res.x[0]:.4f}, crank "
          f"{res.x[1]:.4f}, coupler {res.x[2]:.4f} m; peak crank torque {best['peak']:.4f} N m "
          f"(objective {res.fun:.4f}), worst inverse condition "
          f"{np.nanmin(best['inverse_condition']):.3f}, every point in mode {MODE}")
    for f in plots(res.x, a.out, best):
        print("wrote", f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
