"""Timings of kic's closed mechanisms, with Pinocchio's spanning-tree approach alongside.

Run from the repository root::

    python benchmarks/closed.py            # full run, N = 10,000 poses (~1 minute)
    python benchmarks/closed.py --quick    # N = 1,000 poses, 3 repeats (smoke test)
    python benchmarks/closed.py --no-pin   # kic alone

What is measured (microseconds per pose):

* the six leg forces of the Stewart platform (:func:`mechanisms.stewart_platform`)
  along a smooth 10,000-pose trajectory of the platform (position, velocity,
  acceleration): kic in one batched call,
  ``sp.actuator_loads(q, qd, qdd, sp.actuators)``; the same in chunks of 1,000
  poses, and one call per pose on a few poses;
* the full model in platform coordinates, ``sp.dynamics(q).I_star`` and
  ``.P_star``, batched (target: under 200 us per pose), and in chunks of 1,000;
* the two crank torques of the five-bar (:func:`mechanisms.five_bar`) along a
  smooth trajectory, batched and one call per pose;
* when ``pinocchio`` is importable: the spanning-tree approach a Pinocchio user
  would write for the Stewart platform (see :func:`build_pin_stewart`), per pose
  ``rnea`` on the open tree, the 18 x 24 closure Jacobian from frame Jacobians
  and one 24 x 24 solve for the constraint forces and the six leg forces.  The
  tree state is prepared beforehand (not timed).  Pinocchio's leg forces are
  checked against kic's on every pose before timing.

Every measurement is repeated, kic and Pinocchio interleaved in one process,
and the median of the repeats is reported (``--stat min`` for the minimum).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kic  # noqa: E402,F401  (the package under test, first on the path)
import mechanisms  # noqa: E402
import serial as _serial  # noqa: E402  (benchmarks/serial.py: the same timing method)
from serial import environment, measure  # noqa: E402

try:  # optional peer
    import pinocchio as pin  # noqa: E402
    from scipy.linalg.lapack import dgesv  # noqa: E402
except ImportError:  # pragma: no cover - depends on the environment
    pin = None

CHUNK = 1000            # chunk size of the "chunked" kic row
PER_POSE_STEWART = 20   # poses of the kic one-call-per-pose loops (slow: ms per call)
PER_POSE_FIVE_BAR = 200


# ----------------------------------------------------------------------------
# trajectories
# ----------------------------------------------------------------------------
def stewart_trajectory(N: int, h0: float = 0.6, T: float = 10.0):
    """Platform pose, rate and acceleration (N, 6) along sums of sinusoids.

    x, y, z within +-3 cm of (0, 0, h0), the three angles within +-0.1 rad;
    every coordinate at its own frequency (0.35-0.85 Hz), so no pose repeats.
    """
    t = np.linspace(0.0, T, N)[:, None]
    amp = np.array([0.03, 0.03, 0.03, 0.10, 0.08, 0.08])
    w = 2 * np.pi * np.array([0.50, 0.65, 0.35, 0.45, 0.55, 0.85])
    ph = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    q = np.array([0.0, 0.0, h0, 0.0, 0.0, 0.0]) + amp * np.sin(w * t + ph)
    qd = amp * w * np.cos(w * t + ph)
    qdd = -amp * w ** 2 * np.sin(w * t + ph)
    return q, qd, qdd


def five_bar_trajectory(N: int, T: float = 10.0):
    """Crank angles, rates and accelerations (N, 2): +-0.2 rad about (2.0, 1.1)."""
    t = np.linspace(0.0, T, N)[:, None]
    amp = np.array([0.2, 0.2])
    w = 2 * np.pi * np.array([0.6, 0.45])
    ph = np.array([0.0, 1.3])
    q = np.array([2.0, 1.1]) + amp * np.sin(w * t + ph)
    return q, amp * w * np.cos(w * t + ph), -amp * w ** 2 * np.sin(w * t + ph)


# ----------------------------------------------------------------------------
# Pinocchio: the spanning tree of the Stewart platform
# ----------------------------------------------------------------------------
def build_pin_stewart(sp):
    """The open tree a Pinocchio user builds for a 6-UPS platform.

    Formulation: the platform is a free-flyer body (its pose is the prescribed
    motion, so its tree state is known directly) and each leg is a chain from
    the ground: revolute about the base x axis and revolute about the rotated y
    axis (the U joint, at the base anchor), then a prismatic joint along the
    leg (the actuator; its coordinate is the length from the U centre to the S
    centre).  The cylinder rides on the second revolute, the rod on the
    prismatic joint.  The S joints are not modelled: each closes its loop as a
    3-row point constraint, the leg tip (rod frame origin) on the platform
    anchor.  Tree: 6 + 6 x 3 = 24 velocity coordinates, 18 closure rows,
    mobility 6.  (The alternative, S joints in the tree with the platform
    hanging from one leg, has 21 coordinates and 15 closure rows but needs the
    S joint's angles of one leg per pose; the free-flyer tree is what one
    writes for a parallel robot in Pinocchio.)

    Returns (model, tip frame ids, anchor frame ids, v-indices of the six
    prismatic joints).  Mass properties are read from kic's description of
    the same mechanism (``sp.mechanism``): same bodies, same numbers.
    """
    B, P = sp.anchors
    mech = sp.mechanism

    def inertia(body):
        link = mech.graph.nodes[body]["link"]
        return pin.Inertia(float(link.mass), np.asarray(link.com, float),
                           np.asarray(link.inertia, float))

    model = pin.Model()
    model.name = "Stewart platform (spanning tree)"
    plat = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "platform")
    model.appendBodyToJoint(plat, inertia("platform"), pin.SE3.Identity())
    tips, anchors, actuated = [], [], []
    for i in range(6):
        u1 = model.addJoint(0, pin.JointModelRX(), pin.SE3(np.eye(3), B[i]), f"leg{i}.u1")
        u2 = model.addJoint(u1, pin.JointModelRY(), pin.SE3.Identity(), f"leg{i}.u2")
        model.appendBodyToJoint(u2, inertia(f"leg{i}.cyl"), pin.SE3.Identity())
        p = model.addJoint(u2, pin.JointModelPZ(), pin.SE3.Identity(), f"leg{i}.p")
        model.appendBodyToJoint(p, inertia(f"leg{i}.rod"), pin.SE3.Identity())
        tips.append(model.addFrame(pin.Frame(f"leg{i}.tip", p, pin.SE3.Identity(),
                                             pin.FrameType.OP_FRAME)))
        anchors.append(model.addFrame(pin.Frame(f"anchor{i}", plat, pin.SE3(np.eye(3), P[i]),
                                                pin.FrameType.OP_FRAME)))
        actuated.append(model.joints[p].idx_v)
    model.gravity.linear = np.asarray(mech.gravity, float)
    return model, tips, anchors, np.array(actuated)


def pin_states(sp, q, qd, qdd):
    """Tree states (Q (N, 25), V (N, 24), A (N, 24)) for a platform motion.

    Not timed: what the user prepares from the prescribed motion.  The leg
    joints come from kic (``assemble``, ``joint_rates``; any inverse
    kinematics would do, and :func:`check_pin_states` verifies them with
    Pinocchio's own kinematics); the free flyer's state is the platform pose,
    its twist in the body frame and the derivative of that twist:
    ``v = (R^T v_o, R^T w)``, ``a = (R^T a_o - (R^T w) x (R^T v_o), R^T alpha)``.
    """
    phi = sp.assemble(q)
    phid, phidd = sp.joint_rates(q, qd, qdd)
    kin = sp.kinematics(q, order=2)
    F = kin.frame("platform")
    o, rot = kin.point("platform"), kin.rotation("platform")
    vo, ao = o.velocity(qd), o.acceleration(qd, qdd)
    w, alpha = rot.velocity(qd), rot.acceleration(qd, qdd)
    Rt = np.swapaxes(F[:, :3, :3], -1, -2)
    body = lambda x: np.einsum("nij,nj->ni", Rt, x)      # noqa: E731
    vl, wl = body(vo), body(w)
    quat = np.stack([pin.Quaternion(R).coeffs() for R in F[:, :3, :3]])    # x, y, z, w
    legs = [sp.phi_names.index(f"leg{i}.{j}") for i in range(6) for j in ("u1", "u2", "p")]
    Q = np.hstack([F[:, :3, 3], quat, phi[:, legs]])
    V = np.hstack([vl, wl, phid[:, legs]])
    A = np.hstack([body(ao) - np.cross(wl, vl), body(alpha), phidd[:, legs]])
    return [np.ascontiguousarray(x) for x in (Q, V, A)]


def check_pin_states(model, tips, anchors, Q, V, A, every: int = 1) -> float:
    """Largest closure error of the tree states by Pinocchio's kinematics:
    position, velocity and classical acceleration of each leg tip minus its
    platform anchor (m, m/s, m/s^2)."""
    data = model.createData()
    LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    worst = 0.0
    for q, v, a in zip(Q[::every], V[::every], A[::every]):
        pin.forwardKinematics(model, data, q, v, a)
        pin.updateFramePlacements(model, data)
        for t, b in zip(tips, anchors):
            worst = max(worst,
                        np.abs(data.oMf[t].translation - data.oMf[b].translation).max(),
                        np.abs(pin.getFrameVelocity(model, data, t, LWA).linear
                               - pin.getFrameVelocity(model, data, b, LWA).linear).max(),
                        np.abs(pin.getFrameClassicalAcceleration(model, data, t, LWA).linear
                               - pin.getFrameClassicalAcceleration(model, data, b, LWA).linear
                               ).max())
    return float(worst)


def pin_leg_forces(model, tips, anchors, actuated, tuned: bool = False):
    """``f(q, v, a) -> six leg forces`` by the spanning-tree equations.

    ``rnea(q, v, a) = tau_tree = J_c^T lambda + S^T f`` with ``J_c`` (18 x 24)
    the closure Jacobian (leg tip minus platform anchor, linear rows of the
    frame Jacobians in LOCAL_WORLD_ALIGNED) and S selecting the prismatic
    joints: one 24 x 24 solve for (lambda, f).  The plain version is what one
    writes first (``np.vstack`` and ``np.linalg.solve``); the tuned one fills a
    preallocated matrix and calls LAPACK's ``dgesv`` directly (4 us instead of
    8-11 us for the solve).
    """
    data = model.createData()
    LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    rnea, jacs, frame_jac = pin.rnea, pin.computeJointJacobians, pin.getFrameJacobian
    nv = model.nv
    S = np.zeros((6, nv))
    S[np.arange(6), actuated] = 1.0
    pairs = list(zip(tips, anchors))
    if not tuned:
        ST = S.T.copy()

        def forces(q, v, a):
            tau = rnea(model, data, q, v, a)
            jacs(model, data, q)
            Jc = np.vstack([frame_jac(model, data, t, LWA)[:3] - frame_jac(model, data, b, LWA)[:3]
                            for t, b in pairs])
            return np.linalg.solve(np.hstack([Jc.T, ST]), tau)[18:]
        return forces

    At = np.zeros((nv, nv))          # [J_c; S]: the transposed system matrix
    At[18:] = S
    rows = [slice(3 * k, 3 * k + 3) for k in range(6)]

    def forces(q, v, a):
        tau = rnea(model, data, q, v, a)
        jacs(model, data, q)
        for r, (t, b) in zip(rows, pairs):
            np.subtract(frame_jac(model, data, t, LWA)[:3], frame_jac(model, data, b, LWA)[:3],
                        out=At[r])
        return dgesv(At.T, tau)[2][18:]
    return forces


def pin_loop(fn, Q, V, A):
    rows = list(zip(Q, V, A))

    def run():
        for q, v, a in rows:
            fn(q, v, a)
    return run


# ----------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------
def fmt(seconds) -> str:
    if seconds is None:
        return f"{'-':>9}"
    us = seconds * 1e6
    return f"{us:9.2f}" if us < 1000 else f"{us:9.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 1,000 poses, 3 repeats")
    ap.add_argument("--repeats", type=int, default=None, help="repeats per measurement (5)")
    ap.add_argument("--stat", choices=("median", "min"), default="median")
    ap.add_argument("--no-pin", action="store_true", help="time kic alone")
    ap.add_argument("--backend", choices=("both", "numpy", "numba"), default="both",
                    help="kic kernels to time (both: numpy and, if installed, numba)")
    args = ap.parse_args(argv)
    global pin
    if args.no_pin:
        pin = _serial.pin = None
    N = 1_000 if args.quick else 10_000
    repeats = args.repeats or (3 if args.quick else 5)

    print("kic closed-mechanism benchmarks")
    print(environment(skipped=args.no_pin))
    sp = mechanisms.stewart_platform()
    fb = mechanisms.five_bar()
    q, qd, qdd = stewart_trajectory(N)
    fq, fqd, fqdd = five_bar_trajectory(N)
    acts = sp.actuators
    f_kic = sp.actuator_loads(q, qd, qdd, acts)
    print(f"\nStewart platform: {N} poses, leg forces {f_kic.min():.1f} .. {f_kic.max():.1f} N, "
          f"largest condition number {sp.condition(q).max():.1f}")
    print(f"five-bar: {N} poses, largest condition number {fb.condition(fq).max():.1f}")

    kic_cases = {
        "stewart forces, batched": (lambda: sp.actuator_loads(q, qd, qdd, acts), N),
        "stewart forces, chunks": (lambda: [sp.actuator_loads(q[s:s + CHUNK], qd[s:s + CHUNK],
                                                              qdd[s:s + CHUNK], acts)
                                            for s in range(0, N, CHUNK)], N),
        "stewart forces, per pose": (lambda: [sp.actuator_loads(q[k], qd[k], qdd[k], acts)
                                              for k in range(PER_POSE_STEWART)],
                                     PER_POSE_STEWART),
        "stewart I*, P*": (lambda: (lambda d: (d.I_star, d.P_star))(sp.dynamics(q)), N),
        "stewart I*, P*, chunks": (lambda: [(lambda d: (d.I_star, d.P_star))(
            sp.dynamics(q[s:s + CHUNK])) for s in range(0, N, CHUNK)], N),
        "five-bar torques, batched": (lambda: fb.actuator_loads(fq, fqd, fqdd, fb.actuators), N),
        "five-bar torques, per pose": (lambda: [fb.actuator_loads(fq[k], fqd[k], fqdd[k],
                                                                  fb.actuators)
                                                for k in range(PER_POSE_FIVE_BAR)],
                                       PER_POSE_FIVE_BAR),
    }
    from kic.kernels import jit as _compiled
    backends = (["numpy", "numba"] if _compiled.available else ["numpy"]) \
        if args.backend == "both" else [args.backend]
    cases = {(b, k): (fn, n, b) for b in backends for k, (fn, n) in kic_cases.items()}
    if pin is not None:
        model, tips, anchors, actuated = build_pin_stewart(sp)
        Q, V, A = pin_states(sp, q, qd, qdd)
        closure = check_pin_states(model, tips, anchors, Q, V, A, every=max(1, N // 1000))
        plain = pin_leg_forces(model, tips, anchors, actuated)
        tuned = pin_leg_forces(model, tips, anchors, actuated, tuned=True)
        f_plain = np.array([plain(*x) for x in zip(Q, V, A)])
        f_tuned = np.array([tuned(*x) for x in zip(Q, V, A)])
        scale = np.abs(f_kic).max()
        d_plain = np.abs(f_plain - f_kic).max() / scale
        d_tuned = np.abs(f_tuned - f_kic).max() / scale
        print(f"\nPinocchio tree ({model.nq} q, {model.nv} v, 18 closure rows) vs kic on all "
              f"{N} poses:")
        print(f"  tree state closure (position, velocity, acceleration) "
              f"max |error|        {closure:.2e}")
        for name, d in (("np.linalg.solve", d_plain), ("dgesv", d_tuned)):
            flag = "" if d < 1e-8 else "   <-- MISMATCH"
            print(f"  leg forces, {name:<16} max |pin - kic| / max |f|  {d:.2e}{flag}")
        cases["pin stewart, solve"] = (pin_loop(plain, Q, V, A), N)
        cases["pin stewart, dgesv"] = (pin_loop(tuned, Q, V, A), N)

    t = measure(cases, repeats, args.stat)

    print(f"\n## microseconds per pose ({args.stat} of {repeats} interleaved repeats)\n")
    head = (f"{'mechanism':<10} {'task [kic kernels]':<42} {'poses':>6} {'kic us':>9} {'pin us':>9} "
            f"{'kic/pin':>8}  target")
    print(head)
    print("-" * (len(head) + 16))
    pin_best = None
    if pin is not None:
        pin_best = min(t["pin stewart, solve"], t["pin stewart, dgesv"])

    def row(mech, task, key, poses, pin_key=None, target=""):
        for b in backends:
            tk = t[(b, key)]
            tp = t.get(pin_key) if pin_key else None
            ratio = f"{tk / tp:8.2f}" if tp else f"{'-':>8}"
            tgt = target(b) if callable(target) else target
            print(f"{mech:<10} {task + ' [' + b + ']':<42} {poses:>6} {fmt(tk)} {fmt(tp)} "
                  f"{ratio}  {tgt}")

    def ratio_target(key):
        def text(b):
            if pin is None:
                return "kic/pin <= 0.5 (needs pin)"
            r_plain = t[(b, key)] / t["pin stewart, solve"]
            r_best = t[(b, key)] / pin_best
            return (f"kic/pin <= 0.5: {'ok' if r_plain <= 0.5 else 'MISS'} vs pin as written, "
                    f"{'ok' if r_best <= 0.5 else 'MISS'} ({r_best:.2f}) vs the faster pin")
        return text

    def under_200(b):
        us = t[(b, "stewart I*, P*")] * 1e6
        return f"< 200 us: {'ok' if us < 200 else 'MISS'}"

    row("Stewart", "leg forces, one batched call", "stewart forces, batched", N,
        "pin stewart, solve" if pin else None, ratio_target("stewart forces, batched"))
    if pin is not None:
        row("Stewart", "  same vs pin with dgesv", "stewart forces, batched", N,
            "pin stewart, dgesv")
    row("Stewart", f"leg forces, chunks of {CHUNK}", "stewart forces, chunks", N,
        "pin stewart, solve" if pin else None)
    row("Stewart", "leg forces, one call per pose", "stewart forces, per pose",
        PER_POSE_STEWART, "pin stewart, solve" if pin else None)
    row("Stewart", "I*, P* in platform coords, batched", "stewart I*, P*", N, None, under_200)
    row("Stewart", f"I*, P*, chunks of {CHUNK}", "stewart I*, P*, chunks", N)
    row("five-bar", "crank torques, one batched call", "five-bar torques, batched", N)
    row("five-bar", "crank torques, one call per pose", "five-bar torques, per pose",
        PER_POSE_FIVE_BAR)
    if pin is not None:
        print("\npin: per pose rnea on the 24-DOF tree + computeJointJacobians + 12 "
              "getFrameJacobian + a 24 x 24 solve (np.linalg.solve or LAPACK dgesv), in a "
              "Python loop over the poses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
