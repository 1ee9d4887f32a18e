"""One pose at a time: kic against Pinocchio, side by side (issue 8, item 5; the
one-pose targets of issue 21, item 3).

Run from the repository root::

    python benchmarks/single_pose.py                  # both kic backends, ~3 minutes
    python benchmarks/single_pose.py --quick          # fewer repeats, shorter paths (< 1 min)
    python benchmarks/single_pose.py --backend numba  # one kic backend

Every job is timed for kic (with each backend, ``kic.set_backend``) and for
its peer in the same process, interleaved (each repeat runs every case in
turn, so drift affects both), in CPU time (``time.process_time``), the best of
the repeats; the ratio kic / peer is printed beside its target:

* PUMA 560, one configuration: ``inverse_dynamics`` vs ``pinocchio.rnea``
  (target <= 1.2), ``forward_dynamics`` vs ``pinocchio.aba`` (<= 1.2);
* five-bar, one pose: ``forward_dynamics`` in the crank angles vs
  ``pinocchio.constraintDynamics`` on the tree of its two arms with a point
  constraint at the closing revolute (<= 3); the crank torques,
  ``inverse_dynamics``, vs the tree ``rnea`` at the full joint state plus the
  projection onto the cranks through the closure Jacobian (one dense solve;
  <= 2);
* Stewart platform, one pose: ``forward_dynamics`` in the platform pose vs
  ``constraintDynamics`` on the free-flyer tree of ``closed.py`` with six
  point constraints (<= 2); the leg forces, ``actuator_loads``, vs the tree
  ``rnea`` plus ``dgesv`` (``closed.pin_leg_forces``; <= 1.5);
* passive simulation for 2 s at rtol 1e-9 (atol 1e-11): the five-bar,
  ``kic.simulate`` (its default method, DOP853, which runs a closed model's
  free motion in compiled code under numba), vs
  ``scipy.integrate.solve_ivp(method="LSODA")`` over ``constraintDynamics`` of
  the tree state (<= 5); the PUMA 560 vs LSODA over ``aba`` (<= 2).  LSODA is
  the peer's faster choice here (DOP853 over ``constraintDynamics`` takes
  about 1.3x as long: 470 evaluations against LSODA's 444), and kic's DOP853
  is the more accurate (final state 2e-9 from an rtol-1e-13 solution, LSODA's
  6e-8);
* a five-bar and a Stewart platform built with ``kic.Mechanism`` exactly as
  the builders of ``mechanisms/closed.py`` build them but without a guess
  function: assembly of a 1,000-pose path in one call vs the builder's model
  (closed-form guess) on the same path, each on the backend of its row (<= 2).

Before anything is timed, every pair is checked to compute the same thing
(accelerations, loads, trajectories, joint values); the script stops on a
mismatch.  Pinocchio is called from Python, as a Python user would, with its
tree states prepared beforehand (not timed): kic's rows include their closure
at position, velocity and acceleration level.
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kic  # noqa: E402
import mechanisms  # noqa: E402
from mechanisms.geometry import angle, circle_meet, wrap  # noqa: E402,F401  (see noguess_*)

try:
    import pinocchio as pin  # noqa: E402
    from scipy.integrate import solve_ivp  # noqa: E402
    from scipy.linalg.lapack import dgesv  # noqa: E402
    import closed as closed_bench  # noqa: E402  (benchmarks/closed.py)
    from pin_model import build_pin_model, build_pin_tree, point_constraints  # noqa: E402
    from serial import environment  # noqa: E402
except ImportError as err:  # pragma: no cover - depends on the environment
    sys.exit(f"single_pose.py needs pinocchio and scipy (pip install -e '.[bench]'): {err}")

RTOL, ATOL, T_SIM = 1e-9, 1e-11, 2.0
# Pinocchio's proximal settings for the five-bar: its planar point constraint has an
# identically zero row (z), so the KKT system is singular without regularization (mu = 0
# gives NaN); the proximal iterations converge to the exact constrained acceleration.
FIVE_BAR_PROX = (1e-12, 1e-8, 20)     # accuracy, mu, max_iter


# ----------------------------------------------------------------------------
# timing: CPU time, interleaved, best of the repeats
# ----------------------------------------------------------------------------
def _clock(fn, loops: int) -> float:
    t0 = time.process_time()
    for _ in range(loops):
        fn()
    return (time.process_time() - t0) / loops


def measure(cases: dict, repeats: int, budget: float) -> dict:
    """CPU seconds per call of each case: the best of ``repeats`` interleaved samples.

    ``cases`` maps a key to ``(fn, backend)``; ``backend`` (or None for a peer)
    is set with ``kic.set_backend`` before each sample.  Each sample runs a
    case back to back for about ``budget`` seconds (at least one call).
    """
    def use(backend):
        if backend is not None:
            kic.set_backend(backend)

    loops = {}
    for key, (fn, backend) in cases.items():
        use(backend)
        fn()                                   # warm-up (JIT, caches)
        t = _clock(fn, 1)
        loops[key] = max(1, min(100_000, int(budget / max(t, 1e-7))))
    best = {key: np.inf for key in cases}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for key, (fn, backend) in cases.items():
                use(backend)
                best[key] = min(best[key], _clock(fn, loops[key]))
    finally:
        if gc_was:
            gc.enable()
    return best


# ----------------------------------------------------------------------------
# the jobs
# ----------------------------------------------------------------------------
@dataclass
class Job:
    """One row: kic's call, the peer's call, the target on kic / peer."""

    group: str
    name: str
    kic: Callable[[], object]
    peer: Callable[[], object]
    peer_name: str
    target: float
    check: Callable[[], dict]          # name -> (relative difference, tolerance)
    slow: bool = False                 # seconds per call: fewer repeats
    peer_is_kic: bool = False          # the peer is kic too: timed on the same backend


def rel(a, b) -> float:
    """max |a - b| / max |b|."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


# ---------------------------------------------------------------- PUMA 560
def puma_jobs(slow_repeats_ok=True) -> list[Job]:
    chain = mechanisms.puma560()
    model = build_pin_model(chain)
    data = model.createData()
    rng = np.random.default_rng(8)
    q, qd, qdd = (rng.uniform(lo, hi, 6) for lo, hi in ((-np.pi, np.pi), (-1, 1), (-1, 1)))
    tau = chain.inverse_dynamics(q, qd, qdd) + rng.normal(size=6)
    rnea, aba = pin.rnea, pin.aba

    def check_id():
        return {"rnea vs inverse_dynamics": (rel(chain.inverse_dynamics(q, qd, qdd),
                                                  rnea(model, data, q, qd, qdd)), 1e-10)}

    def check_fd():
        return {"aba vs forward_dynamics": (rel(chain.forward_dynamics(q, qd, tau),
                                                 aba(model, data, q, qd, tau)), 1e-10)}

    # passive simulation from rest in a general configuration, under gravity
    q0 = np.array([0.3, -0.6, 0.9, 0.2, -0.4, 0.1])
    qd0 = np.zeros(6)
    zero = np.zeros(6)

    def pin_rhs(t, x):
        return np.concatenate([x[6:], aba(model, data, x[:6], x[6:], zero)])

    def kic_sim():
        return kic.simulate(chain, (0.0, T_SIM), q0, qd0, rtol=RTOL, atol=ATOL)

    def pin_sim():
        return solve_ivp(pin_rhs, (0.0, T_SIM), np.concatenate([q0, qd0]), method="LSODA",
                         rtol=RTOL, atol=ATOL)

    def check_sim():
        s, p = kic_sim(), pin_sim()
        xk = np.concatenate([s.q[-1], s.qd[-1]])
        return {"final state, kic.simulate vs LSODA(aba)": (rel(xk, p.y[:, -1]), 1e-6)}

    return [
        Job("PUMA 560", "inverse dynamics, one configuration",
            lambda: chain.inverse_dynamics(q, qd, qdd), lambda: rnea(model, data, q, qd, qdd),
            "rnea", 1.2, check_id),
        Job("PUMA 560", "forward dynamics, one configuration",
            lambda: chain.forward_dynamics(q, qd, tau), lambda: aba(model, data, q, qd, tau),
            "aba", 1.2, check_fd),
        Job("PUMA 560", f"passive simulation, {T_SIM:g} s",
            kic_sim, pin_sim, "LSODA over aba", 2.0, check_sim, slow=True),
    ]


# ---------------------------------------------------------------- five-bar
def five_bar_tree(fb):
    """Pinocchio tree of the five-bar's two arms, its point closure and helpers."""
    model, names, closures = build_pin_tree(fb.mechanism, ["tip"])
    cmodels, cdatas = point_constraints(model, closures)
    data = model.createData()
    pin.initConstraintDynamics(model, data, cmodels, cdatas)
    idx = [fb.phi_names.index(n) for n in names]           # tree v order -> phi
    cranks = [names.index(n) for n in fb.coordinate_names]  # the cranks in tree v order
    return model, data, names, closures, cmodels, cdatas, idx, cranks


def five_bar_jobs() -> list[Job]:
    fb = mechanisms.five_bar()
    model, data, names, closures, cmodels, cdatas, idx, cranks = five_bar_tree(fb)
    prox = pin.ProximalSettings(*FIVE_BAR_PROX)
    q = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])          # the builder's reference
    qd, qdd, tau = np.array([0.4, -0.3]), np.array([1.0, 2.0]), np.array([0.3, -0.2])
    phi = fb.assemble(q)
    phid, phidd = fb.joint_rates(q, qd, qdd)
    Q, V, A = (np.ascontiguousarray(x[idx]) for x in (phi, phid, phidd))
    T = np.zeros(model.nv)
    T[cranks] = tau
    cdyn, rnea = pin.constraintDynamics, pin.rnea

    def pin_fd():
        return cdyn(model, data, Q, V, T, cmodels, cdatas, prox)

    # crank torques by the tree: rnea(Q, V, A) = Jc^T lambda + S^T tau, Jc the in-plane
    # (x, y) rows of the closing point's velocity, one 4 x 4 solve
    LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    jacs, frame_jac = pin.computeJointJacobians, pin.getFrameJacobian
    (fa, fbk), = closures
    At = np.zeros((model.nv, model.nv))               # [Jc; S]: the transposed system
    At[2 + np.arange(2), cranks] = 1.0

    def pin_torques():
        t = rnea(model, data, Q, V, A)
        jacs(model, data, Q)
        np.subtract(frame_jac(model, data, fa, LWA)[:2], frame_jac(model, data, fbk, LWA)[:2],
                    out=At[:2])
        return dgesv(At.T, t)[2][2:]

    def check_fd():
        a = pin_fd()
        qdd_k = fb.forward_dynamics(q, qd, tau)
        _, phidd_k = fb.joint_rates(q, qd, qdd_k)
        return {"constraintDynamics vs forward_dynamics (cranks)": (rel(qdd_k, a[cranks]), 1e-8),
                "  same, every tree joint (via joint_rates)": (rel(phidd_k[idx], a), 1e-8)}

    def check_id():
        return {"tree rnea + solve vs inverse_dynamics": (rel(fb.inverse_dynamics(q, qd, qdd),
                                                              pin_torques()), 1e-10)}

    sim = five_bar_simulation(fb, model, data, cmodels, cdatas, prox, idx, cranks)
    return [
        Job("five-bar", "forward dynamics, one pose", lambda: fb.forward_dynamics(q, qd, tau),
            pin_fd, "constraintDynamics", 3.0, check_fd),
        Job("five-bar", "crank torques, one pose", lambda: fb.inverse_dynamics(q, qd, qdd),
            pin_torques, "tree rnea + closure solve", 2.0, check_id),
        sim,
    ]


def five_bar_equilibrium(fb):
    """A stable equilibrium of the passive five-bar (arms hanging down).

    The builder's ("up") assembly has a minimum of the potential energy with
    both cranks pointing down, at a condition number of about 8.5, far from
    the couplers' stretched singularity.
    """
    from scipy.optimize import minimize
    energy = lambda x: float(fb.dynamics(x).potential_energy)  # noqa: E731
    res = minimize(energy, [-1.7, -1.4], jac=lambda x: fb.dynamics(x).gravity_load,
                   method="BFGS", options=dict(gtol=1e-10))
    return res.x


def five_bar_simulation(fb, model, data, cmodels, cdatas, prox, idx, cranks) -> Job:
    """2 s of free motion about the hanging equilibrium (0.15 rad away, at rest)."""
    q0 = five_bar_equilibrium(fb) + np.array([0.15, -0.15])
    qd0 = np.zeros(2)
    phi0 = fb.assemble(q0)
    x0 = np.concatenate([phi0[idx], np.zeros(model.nv)])
    zero = np.zeros(model.nv)
    cdyn, nq = pin.constraintDynamics, model.nq

    def pin_rhs(t, x):
        return np.concatenate([x[nq:], cdyn(model, data, x[:nq], x[nq:], zero, cmodels, cdatas,
                                            prox)])

    def kic_sim():
        return kic.simulate(fb, (0.0, T_SIM), q0, qd0, rtol=RTOL, atol=ATOL)

    def pin_sim():
        return solve_ivp(pin_rhs, (0.0, T_SIM), x0, method="LSODA", rtol=RTOL, atol=ATOL)

    def check():
        s, p = kic_sim(), pin_sim()
        xk = np.concatenate([s.q[-1], s.qd[-1]])
        xp = p.y[:, -1][np.r_[cranks, nq + np.asarray(cranks)]]
        cond = float(fb.condition(s.q).max())
        return {"final crank state, kic.simulate vs LSODA(constraintDynamics)":
                (rel(xk, xp), 1e-6),
                f"  (largest condition number along the motion: {cond:.1f}; "
                f"cranks swing {np.ptp(s.q, axis=0).round(2).tolist()} rad)": (0.0, 1.0)}

    return Job("five-bar", f"passive simulation, {T_SIM:g} s", kic_sim, pin_sim,
               "LSODA over constraintDynamics", 5.0, check, slow=True)


# ---------------------------------------------------------------- Stewart platform
def stewart_jobs() -> list[Job]:
    sp = mechanisms.stewart_platform()
    acts = sp.actuators
    model, tips, anchors, actuated = closed_bench.build_pin_stewart(sp)
    cmodels, cdatas = point_constraints(model, list(zip(tips, anchors)))
    data = model.createData()
    pin.initConstraintDynamics(model, data, cmodels, cdatas)
    q = np.array([0.01, -0.02, 0.62, 0.05, -0.03, 0.04])
    qd = np.array([0.02, 0.01, -0.03, 0.05, 0.02, -0.04])
    qdd = np.array([0.1, -0.2, 0.3, -0.1, 0.2, 0.1])
    f = sp.actuator_loads(q, qd, qdd, acts) + np.array([5.0, -3.0, 2.0, -4.0, 1.0, 3.0])
    tau_q = sp.actuator_jacobian(q, acts).T @ f         # the leg forces in platform coordinates
    Q, V, A = (x[0] for x in closed_bench.pin_states(sp, q[None], qd[None], qdd[None]))
    T = np.zeros(model.nv)
    T[actuated] = f
    cdyn = pin.constraintDynamics
    legs = closed_bench.pin_leg_forces(model, tips, anchors, actuated, tuned=True)

    def pin_fd():
        return cdyn(model, data, Q, V, T, cmodels, cdatas)

    def check_fd():
        qdd_k = sp.forward_dynamics(q, qd, tau_q)
        _, _, A_k = closed_bench.pin_states(sp, q[None], qd[None], qdd_k[None])
        closure = closed_bench.check_pin_states(model, tips, anchors, Q[None], V[None], A[None])
        return {"constraintDynamics vs forward_dynamics (tree accelerations)":
                (rel(A_k[0], pin_fd()), 1e-8),
                "  tree state closes the loops (position, velocity, acceleration)":
                (closure, 1e-12)}

    def check_legs():
        return {"tree rnea + dgesv vs actuator_loads": (rel(legs(Q, V, A),
                                                            sp.actuator_loads(q, qd, qdd, acts)),
                                                        1e-10)}

    return [
        Job("Stewart", "forward dynamics, one pose", lambda: sp.forward_dynamics(q, qd, tau_q),
            pin_fd, "constraintDynamics", 2.0, check_fd),
        Job("Stewart", "leg forces, one pose",
            lambda: sp.actuator_loads(q, qd, qdd, actuators=acts), lambda: legs(Q, V, A),
            "tree rnea + dgesv", 1.5, check_legs),
    ]


# ---------------------------------------------------------------- no guess function
def noguess_five_bar(base=0.2, l1=0.25, l2=0.25, k1=0.35, k2=0.35, m1=1.0, m2=1.0, n1=0.8,
                     n2=0.8, mt=0.5, g=9.81):
    """``mechanisms.five_bar()`` built as a user would, without a guess function.

    The construction is the builder's (mechanisms/closed.py), with the same
    defaults; only ``guess=`` is left out of ``mech.model``.
    """
    from kic import composite_body as composite
    from mechanisms._common import rod_inertia, translation

    def rod_body(mech, name, m, L, extra=()):
        parts = [(m, np.array([L / 2, 0.0, 0.0]), rod_inertia(m, L, 0))]
        parts += [(mp, np.array([x, 0.0, 0.0]), np.zeros((3, 3))) for mp, x in extra]
        M, c, I = composite(parts)
        mech.add_body(name, mass=M, com=c, inertia=I)

    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="five-bar")
    rod_body(mech, "crank1", m1, l1)
    rod_body(mech, "crank2", m2, l2)
    rod_body(mech, "coupler1", n1, k1, extra=[(mt, k1)])
    rod_body(mech, "coupler2", n2, k2)
    mech.add_joint("crank1", "R", "ground", "crank1")
    mech.add_joint("crank2", "R", "ground", "crank2", origin=translation(base))
    mech.add_joint("elbow1", "R", "crank1", "coupler1", origin=translation(l1))
    mech.add_joint("elbow2", "R", "crank2", "coupler2", origin=translation(l2))
    mech.add_joint("tip", "R", "coupler1", "coupler2", origin=translation(k1),
                   child_origin=translation(k2))
    # the reference: the builder's, a sketch a user can read off a drawing
    ref = dict(zip(["crank1", "crank2", "elbow1", "elbow2", "tip"],
                   mechanisms.five_bar().assemble([np.pi / 2 + 0.3, np.pi / 2 - 0.3])))
    return mech.model(["crank1", "crank2"], reference=ref, name="five-bar")


def noguess_stewart():
    """``mechanisms.stewart_platform()`` built without a guess function (defaults)."""
    from mechanisms._common import translation
    sp = mechanisms.stewart_platform()
    B, P = sp.anchors
    src = sp.mechanism
    mech = kic.Mechanism(gravity=src.gravity, name="Stewart platform")

    def body(name):
        link = src.graph.nodes[name]["link"]
        mech.add_body(name, mass=link.mass, com=link.com, inertia=link.inertia)

    body("platform")
    for i in range(6):
        body(f"leg{i}.cyl")
        body(f"leg{i}.rod")
        mech.add_joint(f"leg{i}.u", "U", "ground", f"leg{i}.cyl", origin=translation(*B[i]),
                       axes=[(1, 0, 0), (0, 1, 0)])
        mech.add_joint(f"leg{i}.p", "P", f"leg{i}.cyl", f"leg{i}.rod", axis=(0, 0, 1))
        mech.add_joint(f"leg{i}.s", "S", f"leg{i}.rod", "platform",
                       child_origin=translation(*P[i]))
    phi0 = sp.assemble([0.0, 0.0, 0.6, 0.0, 0.0, 0.0])
    ref = {n: float(v) for n, v in zip(sp.phi_names, phi0) if n.startswith("leg")}
    return mech.model([kic.BodyPose("platform")], reference=ref, name="Stewart platform")


def noguess_jobs(n_poses: int) -> list[Job]:
    """Assembly of a smooth path in one call: no guess function vs the builder's."""
    jobs = []
    for label, builder, user, path in (
            ("five-bar", mechanisms.five_bar, noguess_five_bar,
             closed_bench.five_bar_trajectory(1000, T=20.0)[0]),
            ("Stewart", mechanisms.stewart_platform, noguess_stewart,
             closed_bench.stewart_trajectory(1000, T=20.0)[0])):
        ref_model, mine = builder(), user()
        path = np.ascontiguousarray(path[:n_poses])
        order = [ref_model.phi_names.index(n) for n in mine.phi_names]

        def check(mine=mine, ref_model=ref_model, path=path, order=order):
            a, b = mine.assemble(path), ref_model.assemble(path)[:, order]
            d = float(np.abs(np.angle(np.exp(1j * (a - b)))).max())   # equal up to 2 pi
            return {f"{label}: every joint, no guess vs closed-form guess (rad, m)": (d, 1e-9)}

        jobs.append(Job(label, f"assembly of {n_poses} poses, no guess function",
                        lambda m=mine, p=path: m.assemble(p),
                        lambda m=ref_model, p=path: m.assemble(p),
                        "kic builder (closed-form guess)", 2.0, check, slow=True,
                        peer_is_kic=True))
    return jobs


# ----------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------
def fmt(seconds: float) -> str:
    us = seconds * 1e6
    if us < 1e3:
        return f"{us:.2f} us" if us < 100 else f"{us:.0f} us"
    if us < 1e6:
        return f"{us / 1e3:.1f} ms"
    return f"{us / 1e6:.2f} s"


def validate(jobs, backends) -> bool:
    print("\nkic vs peer before timing (relative difference, tolerance):")
    ok = True
    for b in backends:
        kic.set_backend(b)
        for job in jobs:
            for name, (d, tol) in job.check().items():
                bad = not d <= tol
                ok &= not bad
                if name.startswith("  ("):
                    print(f"  [{b:5}] {job.group:<9}{name}")
                    continue
                print(f"  [{b:5}] {job.group:<9}{name:<66} {d:9.1e}  <= {tol:.0e}"
                      + ("   <-- MISMATCH" if bad else ""))
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="3 repeats (1 for the slow jobs), 100-pose paths: a smoke test")
    ap.add_argument("--repeats", type=int, default=None, help="repeats (default 7; quick 3)")
    ap.add_argument("--backend", choices=("both", "numba", "numpy"), default="both")
    ap.add_argument("--poses", type=int, default=None,
                    help="poses of the assembly path (default 1000; quick 100)")
    args = ap.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 7)
    slow_repeats = 1 if args.quick else 3
    budget = 0.01 if args.quick else 0.05
    n_poses = args.poses or (100 if args.quick else 1000)
    backends = ["numba", "numpy"] if args.backend == "both" else [args.backend]
    try:
        kic.set_backend("numba")
    except ImportError:
        if "numba" in backends:
            print("numba is not installed: numpy backend only")
            backends = ["numpy"]

    print("kic single-pose benchmarks against Pinocchio (issue 8, item 5)")
    print(environment())
    cpu = time.process_time()
    jobs = puma_jobs() + five_bar_jobs() + stewart_jobs() + noguess_jobs(n_poses)
    if not validate(jobs, backends):
        print("\nkic and the peer disagree: nothing timed (the ratios would compare "
              "different computations)")
        return 1

    fast = {}
    slow = {}
    for i, job in enumerate(jobs):
        target = slow if job.slow else fast
        for b in backends:
            target[(i, b)] = (job.kic, b)
            if job.peer_is_kic:
                target[(i, "peer", b)] = (job.peer, b)
        if not job.peer_is_kic:
            target[(i, "peer")] = (job.peer, None)
    t = measure(fast, repeats, budget)
    t.update(measure(slow, slow_repeats, 0.0))

    print(f"\nCPU time per call (time.process_time), best of {repeats} interleaved repeats "
          f"({slow_repeats} for simulations and assembly paths)")
    for b in backends:
        print(f"\n## kic backend: {b}\n")
        head = (f"| {'job':<47} | {'kic':>9} | {'peer':>9} | {'peer call':<30} | {'ratio':>7} "
                f"| {'target':>6} | verdict |")
        print(head)
        print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
        met = 0
        for i, job in enumerate(jobs):
            tk, tp = t[(i, b)], t[(i, "peer", b) if job.peer_is_kic else (i, "peer")]
            r = tk / tp
            ok = r <= job.target
            met += ok
            print(f"| {job.group + ' ' + job.name:<47} | {fmt(tk):>9} | {fmt(tp):>9} | "
                  f"{job.peer_name:<30} | {r:7.1f} | <= {job.target:<3g} | "
                  f"{'met' if ok else 'not met':<7} |")
        print(f"\n{met} of {len(jobs)} targets met with the {b} backend")
    print(f"\n(total CPU time of this run: {time.process_time() - cpu:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
