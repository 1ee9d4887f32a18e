"""Andrews' squeezing mechanism: seven bodies, three loops, a spring (issue 21, item 4).

The seven-body mechanism of Schiehlen's multibody benchmark collection, as Hairer
and Wanner state it (Solving Ordinary Differential Equations II, section VII.7;
also the "andrews" problem of the IVP test set): a crank (body 1, angle beta)
driven by a constant torque, a coupler (body 2, theta relative to it) whose far
end E is a hinge shared with three more bodies: a triangle (body 3, gamma) pivoted
at B and pulled by a spring from its point D to the fixed point C, and two
two-link arms pivoted at A (bodies 5 and 4: delta and phi; bodies 7 and 6:
epsilon and omega).  No gravity (the mechanism moves in a horizontal plane).
One degree of freedom, three loops closing at E; the crank turns 2.5 times in
0.03 s.

Two formulations of the same motion, integrated side by side:

* kic: the mechanism built with ``kic.Mechanism`` from the published geometry
  and constants (:func:`andrews_model`), the spring as ``kic.Loads`` and the
  torque as a constant ``tau``, ``kic.simulate`` in the crank angle;
* by hand (:class:`HandCoded`): the seven angles, each centre of mass and the
  hinge points written out as sums of rotating vectors, the mass matrix and
  velocity terms from their Jacobians, the six closure equations with their
  Jacobian, and the index-1 system ``[M G^T; G 0] [q''; lambda] = [Q - c; -g'']``
  solved at every evaluation (``numpy.linalg.solve``), integrated by
  ``scipy.integrate.solve_ivp`` (DOP853, the same tolerances).

Printed: the wall time of each (min of ``--repeats``, interleaved), their
ratio (target <= 3), the final state of each and their difference, and the
test set's published end state (t = 0.03 s) for both.

Run::

    python benchmarks/seven_body_spring.py [--repeats 3] [--rtol 1e-10]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import kic  # noqa: E402

# the published constants (SI units: kg, kg m^2, m, N/m, N m)
m1, m2, m3, m4, m5, m6, m7 = .04325, .00365, .02373, .00706, .07050, .00706, .05498
i1, i2, i3, i4, i5, i6, i7 = 2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5
xa, ya, xb, yb, xc, yc = -.06934, -.00227, -.03635, .03273, .014, .072
d, da, e, ea, rr, ra, l0 = 28e-3, 115e-4, 2e-2, 1421e-5, 7e-3, 92e-5, 7785e-5
ss, sa, sb, sc, sd, ta, tb = 35e-3, 1874e-5, 1043e-5, 18e-3, 2e-2, 2308e-5, 916e-5
u, ua, ub, zf, zt, fa, mom, c0 = 4e-2, 1228e-5, 449e-5, 2e-2, 4e-2, 1421e-5, 33e-3, 4530.0

NAMES = ["beta", "theta", "gamma", "phi", "delta", "omega", "epsilon"]
#: consistent initial angles (rad), at rest (the test set's)
Q0 = np.array([-0.0617138900142764496358948458001, 0.0,
               0.455279819163070380255912382449, 0.222668390165885884674473185609,
               0.487364979543842550225598953530, -0.222668390165885884674473185609,
               1.23054744454982119249735015568])
T_END = 0.03
#: the test set's end state at 0.03 s (its reference solution, RADAU5 at tight tolerances)
Q_END_PUBLISHED = np.array([.1581077119629904e2, -.1575637105984298e2, .4082224013073101e-1,
                            -.5347301163226948, .5244099658805304, .5347301163226948,
                            .1048080741042263e1])


def _frame(x=0.0, y=0.0) -> np.ndarray:
    T = np.eye(4)
    T[:2, 3] = (x, y)
    return T


def _disc(m: float, izz: float, x: float, y: float) -> dict:
    """A planar body: mass, centre (m) and an inertia with Izz (a valid tensor)."""
    return dict(mass=m, com=(x, y, 0.0), inertia=np.diag([izz / 2, izz / 2, izz]))


def andrews_model() -> kic.ClosedModel:
    """The mechanism in kic's generic API, in the crank angle beta.

    Each body's frame turns with its absolute angle in the published variables
    (body 1: beta; 2: beta + theta; 3: gamma; 5: delta; 4: phi + delta;
    7: epsilon; 6: omega + epsilon), so that the tree joints' values are the
    published angles; the hinge E closes the three loops (cut joints E3, E4, E6
    on the coupler)."""
    mech = kic.Mechanism(gravity=(0.0, 0.0, 0.0), name="Andrews' squeezing mechanism")
    mech.add_body("b1", **_disc(m1, i1, ra, 0.0))
    mech.add_body("b2", **_disc(m2, i2, -da, 0.0))
    mech.add_body("b3", **_disc(m3, i3, sa, sb))
    mech.add_body("b4", **_disc(m4, i4, 0.0, -(e - ea)))
    mech.add_body("b5", **_disc(m5, i5, ta, tb))
    mech.add_body("b6", **_disc(m6, i6, zf - fa, 0.0))
    mech.add_body("b7", **_disc(m7, i7, ua, ub))
    mech.add_joint("beta", "R", "ground", "b1")
    mech.add_joint("theta", "R", "b1", "b2", origin=_frame(rr))
    mech.add_joint("gamma", "R", "ground", "b3", origin=_frame(xb, yb))
    mech.add_joint("delta", "R", "ground", "b5", origin=_frame(xa, ya))
    mech.add_joint("phi", "R", "b5", "b4", origin=_frame(zt))
    mech.add_joint("epsilon", "R", "ground", "b7", origin=_frame(xa, ya))
    mech.add_joint("omega", "R", "b7", "b6", origin=_frame(0.0, -u))
    # the hinge E at the coupler's far end, shared by bodies 3, 4 and 6
    mech.add_joint("E3", "R", "b2", "b3", origin=_frame(-d), child_origin=_frame(0.0, -ss))
    mech.add_joint("E4", "R", "b2", "b4", origin=_frame(-d), child_origin=_frame(0.0, -e))
    mech.add_joint("E6", "R", "b2", "b6", origin=_frame(-d), child_origin=_frame(zf))
    beta, theta, gamma, phi, delta, omega, epsilon = Q0
    ref = dict(zip(NAMES, Q0))
    ref.update(E3=gamma - beta - theta, E4=phi + delta - beta - theta,
               E6=omega + epsilon - beta - theta)
    return mech.model(["beta"], reference=ref, cuts=["E3", "E4", "E6"], name="Andrews")


def andrews_loads() -> kic.Loads:
    """The spring from D on the triangle (body 3) to the fixed point C."""
    return kic.Loads().spring_between("b3", (sd, -sc, 0.0), None, (xc, yc, 0.0),
                                      stiffness=c0, rest_length=l0)


class HandCoded:
    """The index-1 equations of the mechanism written out in its seven angles.

    Every point is a sum of rotating vectors ``c R(a . q + p) (1, 0)`` (``a`` a
    row of integers over the angles), so its Jacobian and its velocity-product
    acceleration follow term by term; the equations of motion
    ``M q'' + sum m J^T (J' q') = Q`` with the closure ``g(q) = 0`` (E reached from
    O, from B and twice from A: six equations) and its Lagrange multipliers,
    solved per evaluation as one linear system."""

    # absolute angles of the bodies in the seven angles (beta, theta, gamma, phi,
    # delta, omega, epsilon)
    ABS = {1: [1, 0, 0, 0, 0, 0, 0], 2: [1, 1, 0, 0, 0, 0, 0], 3: [0, 0, 1, 0, 0, 0, 0],
           4: [0, 0, 0, 1, 1, 0, 0], 5: [0, 0, 0, 0, 1, 0, 0], 6: [0, 0, 0, 0, 0, 1, 1],
           7: [0, 0, 0, 0, 0, 0, 1]}

    def __init__(self) -> None:
        A = {k: np.array(v, float) for k, v in self.ABS.items()}
        off = lambda x, y: (np.hypot(x, y), np.arctan2(y, x))        # noqa: E731
        # centres of mass: (fixed point, [(length, body, phase)])
        self.centres = [
            (m1, i1, 1, (0, 0), [(*off(ra, 0), 1)]),
            (m2, i2, 2, (0, 0), [(rr, 0.0, 1), (*off(-da, 0), 2)]),
            (m3, i3, 3, (xb, yb), [(*off(sa, sb), 3)]),
            (m4, i4, 4, (xa, ya), [(zt, 0.0, 5), (*off(0, -(e - ea)), 4)]),
            (m5, i5, 5, (xa, ya), [(*off(ta, tb), 5)]),
            (m6, i6, 6, (xa, ya), [(*off(0, -u), 7), (*off(zf - fa, 0), 6)]),
            (m7, i7, 7, (xa, ya), [(*off(ua, ub), 7)]),
        ]
        # the hinge E reached four ways; closure: O-way minus each other way
        self.e_from_o = ((0, 0), [(rr, 0.0, 1), (*off(-d, 0), 2)])
        self.e_other = [((xb, yb), [(*off(0, -ss), 3)]),
                        ((xa, ya), [(zt, 0.0, 5), (*off(0, -e), 4)]),
                        ((xa, ya), [(*off(0, -u), 7), (*off(zf, 0), 6)])]
        self.spring_point = ((xb, yb), [(*off(sd, -sc), 3)])
        self.A = A

    def _point(self, spec, q, qd):
        """Position (2,), Jacobian (2, 7) and J' q' (2,) of a sum of rotating vectors."""
        (x0, y0), terms = spec
        p = np.array([x0, y0], float)
        J = np.zeros((2, 7))
        c = np.zeros(2)
        for length, phase, body in terms:
            a = self.A[body]
            ang = a @ q + phase
            w = a @ qd
            cs, sn = np.cos(ang), np.sin(ang)
            p += length * np.array([cs, sn])
            J += length * np.outer([-sn, cs], a)
            c += -length * w * w * np.array([cs, sn])
        return p, J, c

    def rhs(self, t, x):
        q, qd = x[:7], x[7:]
        M = np.zeros((7, 7))
        rhs = np.zeros(7)
        for m, inertia, body, fixed, terms in self.centres:
            _, J, c = self._point((fixed, terms), q, qd)
            a = self.A[body]
            M += m * J.T @ J + inertia * np.outer(a, a)
            rhs -= m * J.T @ c
        rhs[0] += mom                                   # the drive on the crank
        P, J, _ = self._point(self.spring_point, q, qd)
        arm = P - np.array([xc, yc])
        length = np.hypot(*arm)
        rhs += J.T @ (-c0 * (length - l0) * arm / length)
        _, Jo, co = self._point(self.e_from_o, q, qd)
        G = np.zeros((6, 7))
        gamma = np.zeros(6)
        for k, spec in enumerate(self.e_other):
            _, Jk, ck = self._point(spec, q, qd)
            G[2 * k:2 * k + 2] = Jo - Jk
            gamma[2 * k:2 * k + 2] = -(co - ck)
        K = np.zeros((13, 13))
        K[:7, :7], K[:7, 7:], K[7:, :7] = M, G.T, G
        sol = np.linalg.solve(K, np.concatenate([rhs, gamma]))
        return np.concatenate([qd, sol[:7]])

    def closure(self, q) -> np.ndarray:
        z = np.zeros(7)
        po = self._point(self.e_from_o, q, z)[0]
        return np.concatenate([po - self._point(s, q, z)[0] for s in self.e_other])

    def simulate(self, t_end: float, rtol: float, atol: float, t_eval=None):
        from scipy.integrate import solve_ivp
        return solve_ivp(self.rhs, (0.0, t_end), np.concatenate([Q0, np.zeros(7)]),
                         method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval)


def kic_simulate(model, t_end: float, rtol: float, atol: float, t_eval=None,
                 loads=None) -> kic.Simulation:
    return kic.simulate(model, (0.0, t_end), Q0[:1], [0.0], tau=[mom],
                        loads=andrews_loads() if loads is None else loads, rtol=rtol,
                        atol=atol, t_eval=t_eval)


def angles_of(model, phi) -> np.ndarray:
    """The seven published angles from kic's joint values (K, N)."""
    return phi[..., model.joint_indices(NAMES)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=1e-10)
    args = ap.parse_args(argv)
    rtol, atol = args.rtol, args.rtol * 1e-2
    hand = HandCoded()
    assert np.abs(hand.closure(Q0)).max() < 1e-12, "inconsistent initial angles"
    model = andrews_model()
    loads = andrews_loads()
    kic_simulate(model, 1e-3, rtol, atol, loads=loads)                  # warm up
    best = {"kic": np.inf, "hand": np.inf}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        sim = kic_simulate(model, T_END, rtol, atol, loads=loads)
        best["kic"] = min(best["kic"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref = hand.simulate(T_END, rtol, atol)
        best["hand"] = min(best["hand"], time.perf_counter() - t0)
    q_kic = angles_of(model, sim.phi[-1])
    qd_kic = model.joint_rates(sim.q[-1], sim.qd[-1], start=sim.phi[-1])[
        model.joint_indices(NAMES)]
    q_hand, qd_hand = ref.y[:7, -1], ref.y[7:, -1]
    ratio = best["kic"] / best["hand"]
    print(f"Andrews' squeezing mechanism (7 bodies, 3 loops, a spring), {T_END:g} s, "
          f"rtol {rtol:g}, atol {atol:g}; min of {args.repeats}, interleaved")
    print(f"  hand-coded index-1 equations (solve_ivp DOP853): {best['hand'] * 1e3:8.1f} ms, "
          f"{ref.nfev} evaluations")
    print(f"  kic.simulate (Mechanism, Loads, tau):            {best['kic'] * 1e3:8.1f} ms, "
          f"{sim.nfev} evaluations = {ratio:.2f} x (target <= 3: "
          f"{'met' if ratio <= 3 else 'NOT met'})")
    print("  final angles (rad):  " + " ".join(f"{n}={v:.10f}" for n, v in zip(NAMES, q_kic)))
    print(f"  kic - hand-coded: angles {np.abs(q_kic - q_hand).max():.1e} rad, rates "
          f"{np.abs(qd_kic - qd_hand).max():.1e} rad/s")
    print(f"  against the test set's end state: kic {np.abs(q_kic - Q_END_PUBLISHED).max():.1e}"
          f" rad, hand-coded {np.abs(q_hand - Q_END_PUBLISHED).max():.1e} rad")
    return 0


if __name__ == "__main__":
    sys.exit(main())
