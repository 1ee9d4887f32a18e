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
(the model evaluation's ``track`` for the warm start, then
:meth:`kic.ClosedModel.forward_dynamics` with ``start=phi``) for actuators at the
model's coordinates: ``q'' = FD(q, q', G^T C_M i - B q')`` and
``L i' = v - R i - C_E a'``.  It cannot include the reflected rotor inertia (that
needs I*), so it does less than ``ActuatedSystem.rhs``, which solves
``(I* + G^T I_r G) q'' = ...`` exactly.  For the Stewart platform in platform
coordinates its rhs time is printed alone (a hand-written rhs would need the
motors' inertia reflected through ``G^a_q``: the rows below time the pieces).

Printed: microseconds of CPU time per call (median of repeats of calibrated
loops; CPU time, not wall time: the machine may be shared) and the
ratio rhs / hand-written (target: <= 2).

**Stewart platform, one pose** (issue 19, item 2), in platform coordinates with
the six legs' prismatic joints as actuators, Pinocchio's nearest call beside
(its free-flyer tree of ``benchmarks/closed.py`` with six point constraints,
the tree state prepared beforehand and not timed, as in ``single_pose.py``):

* ``actuator_jacobian`` (``G^a_q``, assembly from a warm start included, as a
  control loop calls it; target <= 30 us) beside
  ``computeJointJacobians`` of the assembled tree (no closure: a lower bound);
* ``joint_rates`` (phi' and phi'' of every joint, assembly included; <= 30 us)
  beside ``forwardKinematics`` with velocity and acceleration of the tree state
  (the state given, no closure: a lower bound);
* forward dynamics under leg forces, ``forward_dynamics(q, q', f,
  actuators=legs)`` (<= 30 us) beside ``constraintDynamics`` with the forces at
  the legs' tree joints (the same question; its answer checked against kic's);
* a 1 kHz control step from the last step's state and joint values: the
  assembly (``assemble(q, start=phi)``), ``actuator_jacobian`` and forward
  dynamics under leg forces there (``start=phi``) and one explicit Euler step
  (<= 50 us) beside ``computeJointJacobians`` + ``constraintDynamics`` +
  ``integrate``.
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
        found = model.evaluation.track(q, warm["phi"])     # the lean warm-started assembly
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
        t0 = time.process_time()
        for _ in range(n):
            fn()
        dt = time.process_time() - t0
        n *= 2
    n //= 2
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        times.append((time.process_time() - t0) / n)
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


def stewart_one_pose(repeats: int) -> list:
    """(name, kic us, peer us or NaN, peer call, target us) of the Stewart rows."""
    kic.set_backend("numba")
    sp = mechanisms.stewart_platform()
    legs = sp.actuators
    q = np.array([0.01, -0.02, 0.62, 0.05, -0.03, 0.04])
    qd = np.array([0.02, 0.01, -0.03, 0.05, 0.02, -0.04])
    f = sp.actuator_loads(q, qd, np.zeros(6), legs) + np.array([5.0, -3.0, 2.0, -4.0, 1.0, 3.0])
    h = 1e-3
    state = {"k": 0}

    def step():
        # a control loop: from the last step's state and joint values (the warm
        # start of each assembly), back to the first state every 100 steps (0.1 s)
        if state["k"] % 100 == 0:
            state.update(q=q, qd=qd, phi=np.asarray(sp.assemble(q)))
        state["k"] += 1
        x, xd = state["q"], state["qd"]
        phi = sp.assemble(x, start=state["phi"])
        sp.actuator_jacobian(x, legs, start=phi)            # what a controller uses
        xdd = sp.forward_dynamics(x, xd, f, actuators=legs, start=phi)
        state.update(q=x + h * xd, qd=xd + h * xdd, phi=phi)

    warm = np.asarray(sp.assemble(q)) + 1e-4      # a control loop's last joint values
    rows = [("actuator_jacobian (warm start)",
             lambda: sp.actuator_jacobian(q, legs, start=warm), 30.0),
            ("joint_rates (phi', phi'')", lambda: sp.joint_rates(q, qd, np.zeros(6)), 30.0),
            ("forward dynamics under leg forces",
             lambda: sp.forward_dynamics(q, qd, f, actuators=legs), 30.0),
            ("1 kHz step (assembly, G^a, FD, Euler)", step, 50.0)]
    peers = [(float("nan"), "(Pinocchio not installed)")] * len(rows)
    try:
        import pinocchio as pin
        sys.path.insert(0, str(HERE))
        import closed as closed_bench                       # benchmarks/closed.py
        from pin_model import point_constraints
    except ImportError:
        pin = None
    if pin is not None:
        model, tips, anchors, actuated = closed_bench.build_pin_stewart(sp)
        cmodels, cdatas = point_constraints(model, list(zip(tips, anchors)))
        data = model.createData()
        pin.initConstraintDynamics(model, data, cmodels, cdatas)
        Q, V, _ = (x[0] for x in closed_bench.pin_states(sp, q[None], qd[None],
                                                          np.zeros((1, 6))))
        T = np.zeros(model.nv)
        T[actuated] = f
        A0 = np.zeros(model.nv)
        cdyn, jacs, fk, integrate = (pin.constraintDynamics, pin.computeJointJacobians,
                                     pin.forwardKinematics, pin.integrate)
        # the same question: kic's accelerations as a tree state equal Pinocchio's
        qdd = sp.forward_dynamics(q, qd, f, actuators=legs)
        A = closed_bench.pin_states(sp, q[None], qd[None], qdd[None])[2][0]
        A_pin = cdyn(model, data, Q, V, T, cmodels, cdatas)
        err = np.abs(A - A_pin).max() / np.abs(A_pin).max()
        if not err < 1e-8:
            sys.exit(f"forward dynamics under leg forces differs from constraintDynamics: {err}")

        def pin_step():
            jacs(model, data, Q)
            a = cdyn(model, data, Q, V, T, cmodels, cdatas)
            return integrate(model, Q, h * V), V + h * a

        peers = [(per_call(lambda: jacs(model, data, Q), repeats), "computeJointJacobians"),
                 (per_call(lambda: fk(model, data, Q, V, A0), repeats),
                  "forwardKinematics (q, v, a)"),
                 (per_call(lambda: cdyn(model, data, Q, V, T, cmodels, cdatas), repeats),
                  "constraintDynamics"),
                 (per_call(pin_step, repeats), "jacobians + constraintDynamics + integrate")]
    return [(name, per_call(fn, repeats), peer, peer_name, target)
            for (name, fn, target), (peer, peer_name) in zip(rows, peers)]


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
    if "numba" in backends:
        print("\nStewart platform, one pose (numba; us per call, median)")
        print(f"{'job':36s} {'kic':>8s} {'target':>7s} {'verdict':>8s} {'peer':>8s}  peer call")
        for name, k, peer, peer_name, target in stewart_one_pose(repeats):
            verdict = "met" if k <= target else "not met"
            print(f"{name:36s} {k:8.1f} {target:7.0f} {verdict:>8s} {peer:8.1f}  {peer_name}")


if __name__ == "__main__":
    main()
