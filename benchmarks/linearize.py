"""Linearized plant A(t), B(t) along a trajectory: kic against finite differences.

Run from the repository root::

    python benchmarks/linearize.py            # 1,000-point trajectories (~1 minute)
    python benchmarks/linearize.py --quick    # 200 points, fewer repeats (smoke test)

Three plants (mechanism + geared DC motors, :class:`kic.ActuatedSystem`):

* the PUMA 560 (``mechanisms.puma560``) with six motors (the published gear ratios,
  rotor inertias and viscous friction of ``mechanisms.puma560_drives``);
* the five-bar (``mechanisms.five_bar``) with two motors on the cranks;
* the Stewart platform (``mechanisms.stewart_platform``, modelled in platform
  coordinates) with six motors on ball screws driving the legs.

For each, along a minimum-jerk trajectory of K points (1,000 by default):

* **kic**: ``plant.state_space(traj)``, one batched call for the K points
  (nominal currents and voltages included); and the same one point per call on a
  few points;
* **finite differences**, the way a user would linearize without kic: central
  differences of the nonlinear model ``plant.rhs(t, x, v)`` (x = (q, q', i)), 2 n
  evaluations for A and 2 Na for B per point, at the nominal state and voltage
  (taken from kic; not timed).  Finite differences are slow, so they are timed on
  an evenly spaced subset of the points (the count is printed) and reported per
  point.

Printed per plant: microseconds per operating point for both, their ratio, and the
largest relative difference between kic's A, B and the finite differences on the
subset: norm-wise over the whole matrix, and over the worst block of A (rows and
columns in the blocks q, q', i, each block measured against its own norm), which
is the finite differences' own error (about 1e-8).  Target: kic at least 10x faster
than the finite differences for the Stewart platform, with no loss of accuracy.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import kic  # noqa: E402
import mechanisms  # noqa: E402


# ----------------------------------------------------------------------------
# plants and trajectories
# ----------------------------------------------------------------------------
def puma(K):
    arm = mechanisms.puma560()
    dr = mechanisms.puma560_drives()
    big = dict(resistance=1.6, inductance=4.8e-3, torque_constant=0.26, back_emf_constant=0.26)
    small = dict(resistance=3.9, inductance=2.4e-3, torque_constant=0.095,
                 back_emf_constant=0.095)
    motors = [kic.DCMotor(**(big if k < 3 else small), rotor_inertia=dr.motor_inertia[k],
                          rotor_damping=dr.viscous_friction[k]) for k in range(6)]
    plant = kic.ActuatedSystem(arm, motors, gear_ratios=dr.gear_ratio)
    traj = kic.Trajectory.quintic([0.1, -0.6, 0.4, 0.3, 0.5, -0.2],
                                  [0.7, -0.2, -0.1, -0.4, 1.0, 0.6], duration=1.0, samples=K)
    return "PUMA 560, 6 motors", plant, traj


def five_bar(K):
    fb = mechanisms.five_bar()
    motors = [kic.DCMotor(1.0, 0.2e-3, 0.035, 0.035, rotor_inertia=1e-5, rotor_damping=1e-6)
              for _ in range(2)]
    plant = kic.ActuatedSystem(fb, motors, gear_ratios=[50, 50])
    traj = kic.Trajectory.quintic([np.pi / 2 + 0.3, np.pi / 2 - 0.3],
                                  [np.pi / 2 + 0.8, np.pi / 2 + 0.1], duration=0.8, samples=K)
    return "five-bar, 2 motors", plant, traj


def stewart(K):
    sp = mechanisms.stewart_platform()
    motors = [kic.DCMotor(1.0, 1e-3, 0.1, 0.1, rotor_inertia=2e-5, rotor_damping=1e-5)
              for _ in range(6)]
    plant = kic.ActuatedSystem(sp, motors, gear_ratios=[2 * np.pi / 0.005] * 6)
    traj = kic.Trajectory.quintic([0.0, 0.0, 0.6, 0.0, 0.0, 0.0],
                                  [0.05, -0.03, 0.65, 0.1, -0.05, 0.08], duration=1.0, samples=K)
    return "Stewart platform, 6 motors", plant, traj


# ----------------------------------------------------------------------------
# finite differences of the nonlinear model
# ----------------------------------------------------------------------------
def fd_point(plant, t, x0, v0):
    """A, B at one point by central differences of plant.rhs (2 n + 2 Na calls)."""
    n, Na = x0.size, v0.size
    M = plant.model.dof
    hx = np.concatenate([np.full(M, 1e-6), np.full(M, 1e-5),
                         1e-5 * np.maximum(1.0, np.abs(x0[2 * M:]))])
    A = np.empty((n, n))
    B = np.empty((n, Na))
    for j in range(n):
        e = np.zeros(n)
        e[j] = hx[j]
        A[:, j] = (plant.rhs(t, x0 + e, v0) - plant.rhs(t, x0 - e, v0)) / (2 * hx[j])
    for j in range(Na):
        e = np.zeros(Na)
        e[j] = 1e-4
        B[:, j] = (plant.rhs(t, x0, v0 + e) - plant.rhs(t, x0, v0 - e)) / 2e-4
    return A, B


def worst_block(A, A_ref, M):
    """Largest relative difference over the 3 x 3 blocks (q, q', i) of A."""
    n = A.shape[0]
    cuts = [slice(0, M), slice(M, 2 * M), slice(2 * M, n)]
    worst = 0.0
    for rs in cuts:
        row = np.linalg.norm(A_ref[rs])
        for cs in cuts:
            ref = A_ref[rs, cs]
            norm = np.linalg.norm(ref)
            floor = norm if norm > 1e-9 * row else row
            worst = max(worst, np.linalg.norm(A[rs, cs] - ref) / floor)
    return worst


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


# ----------------------------------------------------------------------------
def run(build, K, n_fd, n_single, repeats):
    name, plant, traj = build(K)
    M = plant.model.dof
    plant.state_space(kic.Trajectory(traj.t[:2], traj.q[:2], traj.qd[:2], traj.qdd[:2],
                                     traj.qddd[:2]))                     # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ss = plant.state_space(traj)
        times.append(time.perf_counter() - t0)
    kic_us = np.median(times) / K * 1e6
    # one operating point per call
    pick = np.linspace(0, K - 1, n_single).round().astype(int)
    t0 = time.perf_counter()
    for k in pick:
        plant.state_space(kic.Trajectory(traj.t[k:k + 1], traj.q[k:k + 1], traj.qd[k:k + 1],
                                         traj.qdd[k:k + 1], traj.qddd[k:k + 1]))
    single_us = (time.perf_counter() - t0) / len(pick) * 1e6
    # finite differences on a subset
    pick = np.linspace(0, K - 1, n_fd).round().astype(int)
    nom = ss.nominal
    states = [(traj.t[k], np.concatenate([traj.q[k], traj.qd[k], nom.current[k]]),
               nom.voltage[k]) for k in pick]
    t0 = time.perf_counter()
    fd = [fd_point(plant, *s) for s in states]
    fd_us = (time.perf_counter() - t0) / len(pick) * 1e6
    errA = max(rel(ss.A[k], A) for k, (A, _) in zip(pick, fd))
    errB = max(rel(ss.B[k], B) for k, (_, B) in zip(pick, fd))
    errblk = max(worst_block(ss.A[k], A, M) for k, (A, _) in zip(pick, fd))
    n = ss.A.shape[1]
    return dict(name=name, n=n, Na=ss.B.shape[2], K=K, kic=kic_us, single=single_us,
                fd=fd_us, n_fd=len(pick), calls=2 * (n + ss.B.shape[2]), errA=errA, errB=errB,
                errblk=errblk)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 points, fewer repeats")
    args = ap.parse_args(argv)
    K = 200 if args.quick else 1000
    repeats = 1 if args.quick else 3
    plan = [(puma, 40, 20), (five_bar, 20, 10), (stewart, 8, 5)]
    if args.quick:
        plan = [(b, max(2, f // 4), max(2, s // 4)) for b, f, s in plan]
    print("# A(t), B(t) along a trajectory: kic vs central finite differences of rhs\n")
    print(f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, {platform.machine()}; K = {K} points, "
          f"kic: median of {repeats}\n")
    head = ("| plant | states | K | kic batched (us/pt) | kic one point per call (us/pt) "
            "| finite differences (us/pt) | rhs calls/pt | FD points timed | FD / kic batched "
            "| max rel. diff A | worst block of A | max rel. diff B |")
    print(head)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    results = []
    for build, n_fd, n_single in plan:
        r = run(build, K, n_fd, n_single, repeats)
        results.append(r)
        print(f"| {r['name']} | {r['n']} | {r['K']} | {r['kic']:.0f} | {r['single']:.0f} | "
              f"{r['fd']:.0f} | {r['calls']} | {r['n_fd']} | {r['fd'] / r['kic']:.0f} | "
              f"{r['errA']:.1e} | {r['errblk']:.1e} | {r['errB']:.1e} |", flush=True)
    sp = results[-1]
    ok = sp["fd"] / sp["kic"] >= 10 and sp["errblk"] < 1e-6
    print(f"\nTarget (Stewart platform): >= 10x faster than finite differences, no loss of "
          f"accuracy: {sp['fd'] / sp['kic']:.0f}x, worst block {sp['errblk']:.1e}: "
          f"{'ok' if ok else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
