"""More independent oracles for closed mechanisms (issue 3): the Bricard 6R
loop, two planar arms holding an object, and the redundant planar arm.

Written for the test-suite from the mechanisms' *parameters* and the
conventions documented in ``mechanisms/closed.py`` (joint placements, branch
choices), never from kic's closed-mechanism objects (``kic.Mechanism``,
``ClosedModel``).  Serial dynamics come from the independent RNEA oracle
(``oracles.rnea``) reading ``kic.SerialChain`` *descriptions* only.

* :class:`Bricard` -- orthogonal Bricard 6R loop in relative joint angles
  ``phi = (j1, ..., j6)``: one open chain from the ground through j1..j6
  (bodies b1..b5 uniform rods along their common normals, the link after j6 is
  the ground itself and massless here), the closure "frame after j6 times
  ``Rx(alpha_6) Tx(a)`` is the ground frame", 6 rows (orientation error
  ``vex(R - R^T)/2`` and position) of rank 5.  The rank deficiency is handled
  here by projecting the rows on the range of the closure Jacobian (left
  singular vectors, :class:`ReducedKKT`); assembly by the oracle's own
  Gauss-Newton on the 7 x 6 system ``[c(phi); phi_1 - q]`` with continuation in
  j1 from a symmetric assembly it finds itself.
* :class:`TwoArmObject` -- absolute planar coordinates (every rod and the
  object a free planar body, pins between them), as ``lagrange.PlanarSystem``;
  coordinates q = the object's centroid and angle, actuators the shoulder and
  (relative) elbow torques; closed-form assembly on the stated elbow branches.
* :class:`RedundantArm` -- the three-link arm in joint angles (RNEA oracle) and
  an explicit transfer to the augmented coordinates ``(x, y, phi)`` of the tip
  frame written here: ``T_q = J^-T tau``, ``I*_q = J^-T M J^-1``; the task-space
  inertia ``(G M^-1 G^T)^-1`` of the tip position.
"""
from __future__ import annotations

import numpy as np

from kic.chain import Joint, Link, SerialChain   # description classes only

from . import rnea as _rnea
from .rnea import _hom
from .lagrange import (KKTMechanism, PlanarSystem, circle_intersection, merge_params,
                       null_basis)

__all__ = ["ReducedKKT", "Bricard", "TwoArmObject", "RedundantArm", "range_rows"]


# ---------------------------------------------------------------- helpers
def _Rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _Rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])



def _vex(W):
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def range_rows(A, tol=1e-10):
    """U_r (C, r): orthonormal basis of the range of A (left singular vectors)."""
    U, s, _ = np.linalg.svd(np.atleast_2d(A))
    r = int(np.sum(s > tol * max(1.0, s[0])))
    return U[:, :r]


# --------------------------------------------------- rank-deficient closures
class ReducedKKT(KKTMechanism):
    """KKT with closure rows projected on the range of A at every configuration.

    ``A_r = U_r^T A`` and ``gamma_r = U_r^T gamma`` (U_r the left singular
    vectors of the nonzero singular values) are independent and span the same
    admissible motions; the multipliers of the reduced system are unique.
    """

    def reduced(self, phi, phid=None):
        A = self.jacobian(phi)
        U = range_rows(A)
        if phid is None:
            return U.T @ A
        return U.T @ A, U.T @ self.gamma(phi, phid)

    def state(self, q, qd=None, qdd=None):
        phi = self.phi(q)
        Ar = self.reduced(phi)
        J = np.vstack([Ar, self.Q])
        C = Ar.shape[0]
        out = [phi]
        if qd is not None:
            phid = np.linalg.solve(J, np.concatenate([np.zeros(C), np.asarray(qd, float)]))
            out.append(phid)
            if qdd is not None:
                _, gr = self.reduced(phi, phid)
                out.append(np.linalg.solve(J, np.concatenate([-gr, np.asarray(qdd, float)])))
        return tuple(out) if len(out) > 1 else phi

    def forward_dynamics(self, q, qd, tau, actuators=None, return_all=False):
        phi, phid = self.state(q, qd)
        M = self.mass(phi)
        Ar, gr = self.reduced(phi, phid)
        C = Ar.shape[0]
        S = self.S(actuators)
        K = np.block([[M, Ar.T], [Ar, np.zeros((C, C))]])
        rhs = np.concatenate([S.T @ np.asarray(tau, float) - self.bias(phi, phid), -gr])
        sol = np.linalg.solve(K, rhs)
        phidd = sol[:self.N]
        if return_all:
            return self.Q @ phidd, phi, phid, phidd, -sol[self.N:]
        return self.Q @ phidd


# ----------------------------------------------------------------- Bricard
class Bricard(ReducedKKT):
    """Orthogonal Bricard 6R loop of ``mechanisms.bricard`` (a, m, g).

    Modified-DH placement: joint k+1's frame is joint k's (moved) frame times
    ``Rx(alpha_k) Tx(a)``, alpha = (+90, -90, +90, -90, +90, -90) deg, zero
    offsets; joint 1 at the ground origin, axis +z; the loop closes when joint
    6's moved frame times ``Rx(alpha_6) Tx(a)`` is the ground frame.  Body b_k
    (k = 1..5) moves with joint k: a uniform slender rod from its joint along
    the body x axis (the common normal) to the next joint, centroid at a/2,
    ``m a^2/12`` about the two transverse axes, zero about its own.  Gravity
    (0, 0, -g).  phi = (j1..j6), q = j1, actuators "j1".."j6" (joint torques).
    """

    defaults = dict(a=0.3, m=1.0, g=9.81)
    twist = np.array([np.pi / 2, -np.pi / 2] * 3)
    # the first assembly is looked for near these values (j1 = j3 = j5, j2 = j4 = j6)
    start = (-1.35, -1.75)

    def __init__(self, **params):
        p = merge_params(self.defaults, params)
        self.p = p
        a, m = float(p["a"]), float(p["m"])
        self.link = [_hom(_Rx(t)) @ _hom(p=(a, 0.0, 0.0)) for t in self.twist]
        joints = [Joint("R", (0, 0, 1), origin=np.eye(4) if k == 0 else self.link[k - 1],
                        name=f"j{k + 1}") for k in range(6)]
        I = np.diag([0.0, m * a * a / 12.0, m * a * a / 12.0])
        links = [Link(m, com=(a / 2, 0.0, 0.0), inertia=I, name=f"b{k + 1}")
                 for k in range(5)] + [Link(0.0, name="ground-side")]
        self.chain = SerialChain(joints, links, gravity=(0.0, 0.0, -p["g"]))
        self.N = 6
        I6 = np.eye(6)
        self.Q = I6[:1]
        self.actuators = {f"j{k + 1}": I6[k] for k in range(6)}
        self.default_actuators = ("j1",)
        self._sym = None            # symmetric assembly found by Newton (lazy)
        self._cache = {}

    # -- kinematics of the open chain j1..j6 written here
    def frames(self, phi):
        """World frames after each joint's motion (6, 4, 4) and the closing frame."""
        T = np.eye(4)
        out = []
        for k in range(6):
            T = T @ (np.eye(4) if k == 0 else self.link[k - 1]) @ _hom(_Rz(phi[k]))
            out.append(T)
        return np.array(out), T @ self.link[5]

    def constraints(self, phi):
        _, E = self.frames(phi)
        R = E[:3, :3]
        return np.concatenate([0.5 * _vex(R - R.T), E[:3, 3]])

    def _axes(self, phi):
        F, E = self.frames(phi)
        return F[:, :3, 2], F[:, :3, 3], E[:3, 3]

    def jacobian(self, phi):
        """Rows: angular velocity of the closing frame, velocity of its origin."""
        z, p, pe = self._axes(phi)
        A = np.zeros((6, 6))
        for k in range(6):
            A[:3, k] = z[k]
            A[3:, k] = np.cross(z[k], pe - p[k])
        return A

    def gamma(self, phi, phid):
        """A' phi': angular and linear acceleration of the closing frame at phi'' = 0."""
        z, p, pe = self._axes(phi)
        w = np.zeros(3)              # angular velocity of the body carrying joint k's axis
        vp = np.zeros((6, 3))        # velocity of the joint origins p_k
        for k in range(6):
            for j in range(k):
                vp[k] += np.cross(z[j], p[k] - p[j]) * phid[j]
        ve = sum(np.cross(z[j], pe - p[j]) * phid[j] for j in range(6))
        g = np.zeros(6)
        for k in range(6):
            zd = np.cross(w, z[k])                         # d z_k / dt
            g[:3] += zd * phid[k]
            g[3:] += (np.cross(zd, pe - p[k]) + np.cross(z[k], ve - vp[k])) * phid[k]
            w = w + z[k] * phid[k]
        return g

    # -- assembly: Gauss-Newton on [c(phi); phi_1 - q] (7 x 6, consistent)
    def newton(self, q, phi0, tol=1e-14, maxiter=60):
        phi = np.array(phi0, float)
        phi[0] = float(np.atleast_1d(q)[0])
        for _ in range(maxiter):
            r = self.constraints(phi)
            if np.max(np.abs(r)) < tol:
                return phi
            J = self.jacobian(phi)
            phi = phi - np.linalg.lstsq(np.vstack([J, np.eye(6)[:1]]),
                                        np.concatenate([r, [0.0]]), rcond=None)[0]
        r = self.constraints(phi)
        if np.max(np.abs(r)) > 1e-12:
            raise ValueError(f"Bricard loop does not close at j1 = {q}: |c| = {np.max(np.abs(r))}")
        return phi

    def symmetric_assembly(self):
        """The assembly at j1 = ``start[0]`` found by Newton from (j1, j2, j1, j2,
        j1, j2) = ``start`` (the loop then closes with j1 = j3 = j5, j2 = j4 = j6)."""
        if self._sym is None:
            self._sym = self.newton(self.start[0], np.tile(self.start, 3))
        return self._sym

    def phi(self, q):
        """Assembly at j1 = q by continuation from the symmetric assembly (steps of
        at most 0.02 rad), then Newton to |c| < 1e-14."""
        q = float(np.atleast_1d(q)[0])
        key = round(q, 15)
        if key in self._cache:
            return self._cache[key].copy()
        phi = self.symmetric_assembly().copy()
        n = max(1, int(np.ceil(abs(q - phi[0]) / 0.02)))
        for t in np.linspace(phi[0], q, n + 1)[1:]:
            phi = self.newton(t, phi)
        self._cache[key] = phi
        return phi.copy()

    # -- dynamics of the open chain (RNEA oracle)
    def mass(self, phi):
        return _rnea.oracle_mass_matrix(self.chain, phi)

    def bias(self, phi, phid):
        return _rnea.rnea(self.chain, phi, phid, np.zeros(6))

    def kinetic(self, phi, phid):
        return float(_rnea.oracle_kinetic_energy(self.chain, phi, phid))

    def potential(self, phi):
        return float(_rnea.oracle_potential_energy(self.chain, phi))


# ----------------------------------------------------- two arms, one object
class TwoArmObject(PlanarSystem):
    """Two planar 2R arms holding a bar through revolute grips (``two_arm_object``).

    Arm A's shoulder at (0, 0), arm B's at (base, 0); links uniform rods; the
    object a uniform bar of length ``width`` with its frame at the centre (x
    along the bar), grip A at its -width/2 end, grip B at +width/2.  Branches:
    arm A with a positive elbow angle (elbow to the right of the line from its
    shoulder to its grip), arm B with a negative one (to the left).
    phi = [armA1, armA2, armB1, armB2, object] (x, y, theta each), q = object's
    (x, y, theta); actuators "a1", "b1" (shoulder torques), "a2", "b2" (elbow
    torques, relative) and "x", "y", "yaw" (generalized loads on q).
    """

    defaults = dict(base=0.6, a1=0.4, a2=0.35, b1=0.4, b2=0.35, width=0.2, m_a1=1.5,
                    m_a2=1.0, m_b1=1.5, m_b2=1.0, m_obj=2.0, g=9.81)
    nominal = np.array([0.3, 0.45, 0.0])

    def __init__(self, **params):
        p = merge_params(self.defaults, params)
        self.p = p
        super().__init__(p["g"])
        A1 = self.add_rod("armA1", p["m_a1"], p["a1"])
        A2 = self.add_rod("armA2", p["m_a2"], p["a2"])
        B1 = self.add_rod("armB1", p["m_b1"], p["b1"])
        B2 = self.add_rod("armB2", p["m_b2"], p["b2"])
        ob = self.add_rod("object", p["m_obj"], p["width"])
        self.finish()
        h = lambda b: np.array([-0.5 * b["length"], 0.0])   # noqa: E731
        t = lambda b: np.array([0.5 * b["length"], 0.0])    # noqa: E731
        self.pins = [(A1, h(A1), None, (0.0, 0.0)),
                     (A1, t(A1), A2, h(A2)),
                     (A2, t(A2), ob, h(ob)),
                     (B1, h(B1), None, (p["base"], 0.0)),
                     (B1, t(B1), B2, h(B2)),
                     (B2, t(B2), ob, t(ob))]
        th = {n: self.theta_index(n) for n in ("armA1", "armA2", "armB1", "armB2", "object")}
        s = ob["start"]
        self.Q = np.vstack([self.e(s), self.e(s + 1), self.e(s + 2)])
        self.actuators = {"a1": self.e(th["armA1"]),
                          "a2": self.e(th["armA2"]) - self.e(th["armA1"]),
                          "b1": self.e(th["armB1"]),
                          "b2": self.e(th["armB2"]) - self.e(th["armB1"]),
                          "x": self.e(s), "y": self.e(s + 1), "yaw": self.e(s + 2)}
        self.arm_actuators = ("a1", "a2", "b1", "b2")
        self.default_actuators = ("x", "y", "yaw")

    def points(self, q):
        p = self.p
        x, y, th = q
        u = np.array([np.cos(th), np.sin(th)])
        c = np.array([x, y])
        GA, GB = c - 0.5 * p["width"] * u, c + 0.5 * p["width"] * u
        OA, OB = np.zeros(2), np.array([p["base"], 0.0])
        EA = circle_intersection(GA, p["a2"], OA, p["a1"], "arm A")   # right of OA -> GA
        EB = circle_intersection(OB, p["b1"], GB, p["b2"], "arm B")   # left of OB -> GB
        return dict(OA=OA, EA=EA, GA=GA, OB=OB, EB=EB, GB=GB, centre=c)

    def phi(self, q):
        P = self.points(np.asarray(q, float))
        return np.concatenate([self._rod_coords(P["OA"], P["EA"]),
                               self._rod_coords(P["EA"], P["GA"]),
                               self._rod_coords(P["OB"], P["EB"]),
                               self._rod_coords(P["EB"], P["GB"]),
                               np.asarray(q, float)])

    def joint_angles(self, q):
        """(a1, a2, b1, b2, gripA, gripB): relative angles (rad), wrapped."""
        phi = self.phi(q)
        t = {b["name"]: phi[b["start"] + 2] for b in self.bodies}
        w = lambda x: np.pi - np.mod(np.pi - x, 2 * np.pi)   # noqa: E731
        return np.array([t["armA1"], w(t["armA2"] - t["armA1"]), t["armB1"],
                         w(t["armB2"] - t["armB1"]), w(t["object"] - t["armA2"]),
                         w(t["object"] - t["armB2"])])

    def actuator_rates(self, q, names=None):
        """G^a_q (n_a, 3): actuator rates per unit object rate (admissible motions)."""
        names = self.arm_actuators if names is None else names
        S = self.S(names)
        return np.column_stack([S @ self.state(q, e)[1] for e in np.eye(3)])

    def internal_directions(self, q, names=None):
        """Null space of B = N^T S^T (actuator loads that produce no motion)."""
        names = self.arm_actuators if names is None else names
        phi = self.phi(q)
        return null_basis(null_basis(self.jacobian(phi)).T @ self.S(names).T)


# ------------------------------------------------------ redundant planar arm
class RedundantArm:
    """Planar 3R arm of ``redundant_planar_arm`` in joint angles (RNEA oracle).

    Joint 1 at the origin, joints 2 and 3 at the ends of links 1 and 2, axes
    +z, relative angles; links uniform rods of lengths l1, l2, l3 from their
    joints; gravity (0, -g, 0).  Augmented coordinates ``X = (x, y, phi)``: the
    tip (end of link 3) and the absolute angle of link 3.  Elbow branch:
    ``"down"`` a negative j2, ``"up"`` a positive one (the builder's first
    guess).
    """

    defaults = dict(l1=0.5, l2=0.4, l3=0.3, m1=2.0, m2=1.5, m3=1.0, g=9.81)

    def __init__(self, elbow="down", **params):
        p = merge_params(self.defaults, params)
        self.p = p
        self.elbow = elbow
        self.l = np.array([p["l1"], p["l2"], p["l3"]], float)
        m = [p["m1"], p["m2"], p["m3"]]
        origins = [np.eye(4), _hom(p=(self.l[0], 0, 0)), _hom(p=(self.l[1], 0, 0))]
        joints = [Joint("R", (0, 0, 1), origin=origins[k], name=f"j{k + 1}") for k in range(3)]
        links = [Link(m[k], com=(self.l[k] / 2, 0.0, 0.0),
                      inertia=np.diag([0.0, 1.0, 1.0]) * m[k] * self.l[k] ** 2 / 12.0,
                      name=f"link{k + 1}") for k in range(3)]
        self.chain = SerialChain(joints, links, gravity=(0.0, -p["g"], 0.0))

    # -- kinematics written here
    def fk(self, th):
        """(x, y, phi) of the tip frame."""
        a = np.cumsum(th)
        return np.array([self.l @ np.cos(a), self.l @ np.sin(a), a[-1]])

    def tip(self, th):
        return self.fk(th)[:2]

    def jacobian(self, th):
        """J = d(x, y, phi)/d theta (3, 3)."""
        a = np.cumsum(th)
        J = np.zeros((3, 3))
        for k in range(3):
            J[0, k] = -np.sum(self.l[k:] * np.sin(a[k:]))
            J[1, k] = np.sum(self.l[k:] * np.cos(a[k:]))
            J[2, k] = 1.0
        return J

    def jdot_thd(self, th, thd):
        """J' theta' (3,)."""
        a = np.cumsum(th)
        ad = np.cumsum(thd)
        return np.array([-np.sum(self.l * np.cos(a) * ad ** 2),
                         -np.sum(self.l * np.sin(a) * ad ** 2), 0.0])

    def hessian(self, th):
        """H[p, m, n] = d^2 X_p / d theta_m d theta_n (3, 3, 3)."""
        a = np.cumsum(th)
        H = np.zeros((3, 3, 3))
        for m_ in range(3):
            for n in range(3):
                k = max(m_, n)
                H[0, m_, n] = -np.sum(self.l[k:] * np.cos(a[k:]))
                H[1, m_, n] = -np.sum(self.l[k:] * np.sin(a[k:]))
        return H

    def ik(self, X):
        """Joint angles for X = (x, y, phi) on the elbow branch."""
        x, y, ph = X
        l1, l2, l3 = self.l
        W = np.array([x, y]) - l3 * np.array([np.cos(ph), np.sin(ph)])
        c2 = (W @ W - l1 * l1 - l2 * l2) / (2 * l1 * l2)
        if abs(c2) > 1:
            raise ValueError(f"redundant arm: wrist {W} out of reach")
        t2 = np.arccos(c2) * (1.0 if self.elbow == "up" else -1.0)
        t1 = np.arctan2(W[1], W[0]) - np.arctan2(l2 * np.sin(t2), l1 + l2 * np.cos(t2))
        t3 = ph - t1 - t2
        wrap = lambda v: np.pi - np.mod(np.pi - v, 2 * np.pi)   # noqa: E731
        return np.array([wrap(t1), wrap(t2), wrap(t3)])

    def joint_motion(self, X, Xd, Xdd):
        th = self.ik(X)
        J = self.jacobian(th)
        thd = np.linalg.solve(J, Xd)
        thdd = np.linalg.solve(J, np.asarray(Xdd, float) - self.jdot_thd(th, thd))
        return th, thd, thdd

    # -- dynamics: joint model (RNEA oracle) and the transfer to X
    def joint_torques(self, th, thd, thdd):
        return _rnea.rnea(self.chain, th, thd, thdd)

    def joint_mass(self, th):
        return _rnea.oracle_mass_matrix(self.chain, th)

    def inverse_dynamics(self, X, Xd, Xdd):
        """T_X = J^-T tau (virtual work tau . dtheta = T_X . dX)."""
        th, thd, thdd = self.joint_motion(X, Xd, Xdd)
        return np.linalg.solve(self.jacobian(th).T, self.joint_torques(th, thd, thdd))

    def mass(self, X):
        th = self.ik(X)
        Ji = np.linalg.inv(self.jacobian(th))
        return Ji.T @ self.joint_mass(th) @ Ji

    def forward_dynamics(self, X, Xd, T):
        """X'' under the generalized loads T on (x, y, phi)."""
        th = self.ik(X)
        J = self.jacobian(th)
        thd = np.linalg.solve(J, Xd)
        tau = J.T @ np.asarray(T, float)
        thdd = _rnea.oracle_forward_dynamics(self.chain, th, thd, tau)
        return J @ thdd + self.jdot_thd(th, thd)

    def task_inertia(self, th):
        """(G M^-1 G^T)^-1 of the tip position, G = the first two rows of J."""
        G = self.jacobian(th)[:2]
        return np.linalg.inv(G @ np.linalg.solve(self.joint_mass(th), G.T))

    def energy(self, th, thd):
        return (_rnea.oracle_kinetic_energy(self.chain, th, thd),
                _rnea.oracle_potential_energy(self.chain, th))
