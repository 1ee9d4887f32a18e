"""The motor-driven plant's right-hand side: ``ActuatedSystem.rhs`` against a
hand-written rhs over the model's one-pose forward dynamics.

Run from the repository root::

    python benchmarks/drives.py             # both backends (numpy, numba)
    python benchmarks/drives.py --quick     # fewer repeats
    KIC_BACKEND=numpy python benchmarks/drives.py --backend numpy

Plants (state x = (q, q', i), voltages v):

* the five-bar haptic device: ``mechanisms.five_bar()`` in its crank angles, two
  24 V DC motors through 12:1 capstans (rotor inertia reflected);
* the Stewart platform in its leg lengths (``actuator_model()``), six motors on
  5 mm ball screws;
* the Stewart platform in platform coordinates with the same motors on the legs
  (``G^a_q`` and ``a''`` at ``q'' = 0`` per pose).

**The hand-written rhs** is what a user writes around the public one-pose calls
(:meth:`kic.ClosedModel.track` for the warm start, then
:meth:`kic.ClosedModel.forward_dynamics` with ``start=phi``) for actuators at the
model's coordinates: ``q'' = FD(q, q', G^T C_M i - B q')`` and
``L i' = v - R i - C_E a'``.  It cannot include the reflected rotor inertia (that
needs I*), so it does less than ``ActuatedSystem.rhs``, which solves
``(I* + G^T I_r G) q'' = ...`` exactly.  For the Stewart platform in platform
coordinates there is no hand-written counterpart (no public one-pose ``G^a_q``
on the compiled path); its rhs time is printed alone.

Printed: microseconds per call (median of repeats of calibrated loops) and the
ratio rhs / hand-written (target: <= 2).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import kic  # noqa: E402
import mechanisms  # noqa: E402


def haptic_five_bar():
    fb = mechanisms.five_bar()
    motors = [kic.DCMotor(1.0, 0.2e-3, 0.035, 0.035, rotor_inertia=1e-5, rotor_damping=1e-6,
                          name=side, voltage_limit=24.0) for side in ("left", "right")]
    plant = kic.ActuatedSystem(fb, motors, gear_ratios=[12.0, 12.0])
    q = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])
    return plant, q, np.array([0.4, -0.3])


def stewart(legs: bool):
    sp = mechanisms.stewart_platform()
    model = sp.actuator_model() if legs else sp
    motors = [kic.DCMotor(1.0, 1e-3, 0.1, 0.1, rotor_inertia=2e-5, rotor_damping=1e-5,
                          name=f"leg{k}") for k in range(6)]
    plant = kic.ActuatedSystem(model, motors, joints=sp.actuators,
                               gear_ratios=[2 * np.pi / 0.005] * 6)
    q0 = np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.0])
    if legs:
        phi = sp.assemble(q0)
        q = np.asarray(phi)[sp.joint_indices(sp.actuators)]
        qd = 0.01 * np.ones(6)
    else:
        q, qd = q0, np.array([0.01, -0.02, 0.01, 0.05, -0.03, 0.02])
    return plant, q, qd


def hand_written(plant):
    """The rhs a user writes over track + forward_dynamics(start=phi)."""
    model = plant.model
    S = np.zeros((plant.n_motors, model.dof))
    for a, j in enumerate(plant.joint_names):
        S[a, model.coordinate_names.index(j)] = 1.0
    CM, CE, R, L, B = (S.T @ plant.C_M, plant.C_E @ S, np.diag(plant.R), np.diag(plant.L),
                       S.T @ plant.B_r @ S)
    M = model.dof
    warm = {"phi": np.asarray(model.assemble(model.reference), float)}

    def rhs(t, x, v):
        q, qd, i = x[:M], x[M:2 * M], x[2 * M:]
        found = model.track(q, warm["phi"])
        if found is not None:
            warm["phi"] = found[0]
        qdd = model.forward_dynamics(q, qd, CM @ i - B @ qd, start=warm["phi"])
        di = (v - R * i - CE @ qd) / L
        return np.concatenate([qd, qdd, di])

    return rhs


def per_call(fn, repeats: int) -> float:
    fn()
    n, dt = 1, 0.0
    while dt < 0.02:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        n *= 2
    n //= 2
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return float(np.median(times)) * 1e6


def run(backend: str, repeats: int) -> list:
    kic.set_backend(backend)
    rows = []
    for name, build, has_hand in (("five-bar haptic (cranks)", haptic_five_bar, True),
                                  ("Stewart in leg lengths", lambda: stewart(True), True),
                                  ("Stewart in platform pose", lambda: stewart(False), False)):
        plant, q, qd = build()
        x = np.concatenate([q, qd, 0.1 * np.ones(plant.n_motors)])
        v = np.linspace(-2.0, 3.0, plant.n_motors)
        rhs_time = per_call(lambda: plant.rhs(0.0, x, v), repeats)
        hand_time = ratio = float("nan")
        if has_hand:
            hand = hand_written(plant)
            hand_time = per_call(lambda: hand(0.0, x, v), repeats)
            ratio = rhs_time / hand_time
        rows.append((backend, name, rhs_time, hand_time, ratio))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--backend", choices=["numpy", "numba", "both"], default="both")
    args = ap.parse_args()
    repeats = 3 if args.quick else 7
    backends = ["numpy", "numba"] if args.backend == "both" else [args.backend]
    rows = []
    for b in backends:
        rows += run(b, repeats)
    print(f"{'backend':8s} {'plant':28s} {'rhs (us)':>10s} {'hand (us)':>10s} {'ratio':>7s}")
    for backend, name, r, h, ratio in rows:
        print(f"{backend:8s} {name:28s} {r:10.1f} {h:10.1f} {ratio:7.2f}")


if __name__ == "__main__":
    main()
