"""Independent Lagrange-multiplier (KKT / DAE) oracle for closed mechanisms.

Written for the test-suite from the mechanisms' *parameters* (the conventions
stated in the builders' docstrings in ``mechanisms/closed.py``), never from kic's
closed-mechanism objects (``kic.Mechanism``, ``ClosedModel``, ``mechanisms.closed``).
Per-configuration numpy code, clarity over speed.

Formulation
-----------
Every mechanism is a set of initial coordinates ``phi`` (N,) with a mass
matrix ``M(phi)``, a bias ``b(phi, phi')`` (velocity terms plus gravity,
``+dV/dphi``), closure constraints ``c(phi) = 0`` (C rows) with Jacobian
``A = dc/dphi`` and quadratic term ``gamma = A' phi'`` (the part of ``c''``
not proportional to ``phi''``).  Actuators enter through a constant selection
``S`` (n_a x N): ``M phi'' + b = S^T tau + A^T lambda`` and ``A phi'' = -gamma``.
The independent coordinates are a constant selection ``q = Q phi``.

* Planar mechanisms (:class:`FiveBar`, :class:`FourBar`, :class:`SliderCrank`):
  *absolute* (maximal) coordinates, every rod a free planar body (centroid
  x, y and angle theta; constant diagonal M, no velocity terms), point masses
  (the five-bar's tip mass, the slider) free particles (x, y); every revolute
  is a 2-row pin constraint, the slider guide a 1-row line constraint.
  Assembly by closed-form circle intersection on the stated branch.  This
  shares no code and no formulation with kic (which works in relative joint
  coordinates of a spanning tree).
* :class:`FiveBarTree`: the same five-bar as kic's issue describes the check,
  a spanning tree of two open chains in *relative* joint angles (dynamics from
  the independent RNEA oracle ``oracles.rnea`` on ``kic.SerialChain``
  descriptions), cut at the tip joint, position loop equation ``C1 = C2``
  differentiated by hand.  Used to cross-check :class:`FiveBar`.
* :class:`StewartPlatform` (6-UPS): the platform a free rigid body whose
  generalized coordinates are its pose ``x = (x, y, z, yaw, pitch, roll)``,
  ``R = Rz Ry Rx``, written with Newton-Euler / Kane projections here; each
  leg an open U-P chain (``u1`` about base x, ``u2`` about the rotated y, ``L``
  along the leg) whose dynamics come from Kane projections written here
  (default) or from the RNEA oracle on a ``kic.SerialChain`` description
  (``leg_dynamics="rnea"``; the two agree to rounding); closure: the leg's
  S point ``b_i + L_i n_i(u1, u2)`` coincides with the platform anchor
  ``p + R a_i`` (3 rows per leg).  The S joint is massless and not modelled.
  Assembly by closed-form inverse kinematics (pose given) or Newton forward
  kinematics (leg lengths given).

Results
-------
``inverse_dynamics`` solves the KKT system for the actuator loads (for more
actuators than degrees of freedom: the minimum-norm or minimum ``tau^T W tau``
solution, ``tau = W^-1 B^T (B W^-1 B^T)^-1 r`` with ``B = N^T S^T``,
``r = N^T (M phi'' + b)``, N a basis of admissible velocities);
``forward_dynamics`` solves ``[[M, A^T], [A, 0]]``.  Energies: ``KE =
phi'^T M phi' / 2``, ``V = -sum m g . c`` (world origin as reference).
"""
from __future__ import annotations

import numpy as np

from kic.chain import Joint, Link, SerialChain   # description classes only

from . import rnea as _rnea

__all__ = ["KKTMechanism", "PlanarSystem", "FiveBar", "FiveBarTree", "FourBar",
           "SliderCrank", "StewartPlatform", "circle_intersection", "rot_zyx",
           "angular_map", "null_basis", "wrap"]


# ---------------------------------------------------------------- helpers

def merge_params(defaults: dict, params: dict) -> dict:
    """The defaults updated by params; unknown names are an error."""
    unknown = set(params) - set(defaults)
    if unknown:
        raise TypeError(f"unknown parameters {sorted(unknown)}")
    return {**defaults, **params}

def wrap(a):
    """Angle(s) wrapped to (-pi, pi]."""
    return np.pi - np.mod(np.pi - np.asarray(a, float), 2.0 * np.pi)


def _perp(v):
    """Planar rotation by +90 degrees."""
    return np.array([-v[1], v[0]])


def _unit(t):
    return np.array([np.cos(t), np.sin(t)])


def circle_intersection(P1, r1, P2, r2, what="loop"):
    """Point at distance r1 from P1 and r2 from P2, to the LEFT of P1 -> P2."""
    P1 = np.asarray(P1, float)
    P2 = np.asarray(P2, float)
    d_vec = P2 - P1
    d = float(np.hypot(*d_vec))
    if d == 0.0:
        raise ValueError(f"{what}: coincident circle centres")
    a = (r1 * r1 - r2 * r2 + d * d) / (2.0 * d)
    h2 = r1 * r1 - a * a
    if h2 < 0.0:
        raise ValueError(f"{what}: cannot be assembled (circles r={r1}, {r2} at distance {d})")
    e = d_vec / d
    return P1 + a * e + np.sqrt(h2) * _perp(e)


def null_basis(A, tol=1e-10):
    """Orthonormal basis (N, N - rank) of the null space of A, by SVD."""
    A = np.atleast_2d(A)
    _, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > tol * max(1.0, s[0] if s.size else 1.0)))
    return Vt[rank:].T


def _Rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _Ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _Rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_zyx(ang):
    """R = Rz(yaw) Ry(pitch) Rx(roll) for ang = (yaw, pitch, roll)."""
    yaw, pitch, roll = ang
    return _Rz(yaw) @ _Ry(pitch) @ _Rx(roll)


def angular_map(ang, angd=None):
    """E (3, 3) with omega = E ang' (world frame), and E' ang' if angd is given.

    omega = yaw' ez + pitch' Rz ey + roll' Rz Ry ex.
    """
    yaw, pitch, _ = ang
    ez = np.array([0.0, 0.0, 1.0])
    e2 = _Rz(yaw) @ np.array([0.0, 1.0, 0.0])
    e3 = _Rz(yaw) @ _Ry(pitch) @ np.array([1.0, 0.0, 0.0])
    E = np.column_stack([ez, e2, e3])
    if angd is None:
        return E
    yd, pd, rd = angd
    Edot_angd = pd * np.cross(yd * ez, e2) + rd * np.cross(yd * ez + pd * e2, e3)
    return E, Edot_angd


# ------------------------------------------------------------ generic KKT
class KKTMechanism:
    """Spanning-tree / free-body model plus closure constraints, solved as KKT.

    Subclasses define ``N``, ``Q`` (dof x N selection of the coordinates),
    ``actuators`` (dict name -> row of S), ``default_actuators`` (names),
    ``phi(q)``, ``mass(phi)``, ``bias(phi, phid)``, ``constraints(phi)``,
    ``jacobian(phi)``, ``gamma(phi, phid)``, ``potential(phi)``.
    """

    N: int
    Q: np.ndarray
    actuators: dict
    default_actuators: tuple

    # ---- to be provided
    def phi(self, q):
        raise NotImplementedError

    def mass(self, phi):
        raise NotImplementedError

    def bias(self, phi, phid):
        raise NotImplementedError

    def constraints(self, phi):
        raise NotImplementedError

    def jacobian(self, phi):
        raise NotImplementedError

    def gamma(self, phi, phid):
        raise NotImplementedError

    def potential(self, phi):
        raise NotImplementedError

    # ---- generic
    @property
    def dof(self):
        return self.Q.shape[0]

    def S(self, names=None):
        names = self.default_actuators if names is None else names
        return np.array([self.actuators[n] for n in names], float)

    def kinetic(self, phi, phid):
        return 0.5 * phid @ self.mass(phi) @ phid

    def _square(self, phi):
        return np.vstack([self.jacobian(phi), self.Q])

    def state(self, q, qd=None, qdd=None):
        """(phi, phi', phi'') on the closure manifold for coordinates q, q', q''."""
        phi = self.phi(q)
        J = self._square(phi)
        C = J.shape[0] - self.dof
        out = [phi]
        if qd is not None:
            phid = np.linalg.solve(J, np.concatenate([np.zeros(C), np.asarray(qd, float)]))
            out.append(phid)
            if qdd is not None:
                rhs = np.concatenate([-self.gamma(phi, phid), np.asarray(qdd, float)])
                out.append(np.linalg.solve(J, rhs))
        return tuple(out) if len(out) > 1 else phi

    def required(self, phi, phid, phidd):
        """M phi'' + b: the generalized load the actuators and constraints balance."""
        return self.mass(phi) @ phidd + self.bias(phi, phid)

    def inverse_dynamics(self, q, qd, qdd, actuators=None, weights=None,
                         return_multipliers=False):
        """Actuator loads for the motion (q, q', q'').

        With as many actuators as degrees of freedom the answer is unique; with
        more, the minimum-norm one (``weights`` None) or the minimiser of
        ``tau^T W tau`` (``weights`` a vector or a matrix W).
        """
        phi, phid, phidd = self.state(q, qd, qdd)
        f = self.required(phi, phid, phidd)
        S = self.S(actuators)
        A = self.jacobian(phi)
        Nb = null_basis(A)
        B = Nb.T @ S.T                     # (dof, n_a)
        r = Nb.T @ f
        n_a = S.shape[0]
        if n_a == Nb.shape[1]:
            tau = np.linalg.solve(B, r)
        else:
            if weights is None:
                Winv = np.eye(n_a)
            else:
                W = np.asarray(weights, float)
                Winv = np.linalg.inv(np.diag(W) if W.ndim == 1 else W)
            tau = Winv @ B.T @ np.linalg.solve(B @ Winv @ B.T, r)
        if return_multipliers:
            lam, *_ = np.linalg.lstsq(A.T, f - S.T @ tau, rcond=None)
            return tau, lam
        return tau

    def forward_dynamics(self, q, qd, tau, actuators=None, return_all=False):
        """q'' under actuator loads tau (KKT solve)."""
        phi, phid = self.state(q, qd)
        M = self.mass(phi)
        A = self.jacobian(phi)
        C = A.shape[0]
        S = self.S(actuators)
        K = np.block([[M, A.T], [A, np.zeros((C, C))]])
        rhs = np.concatenate([S.T @ np.asarray(tau, float) - self.bias(phi, phid),
                              -self.gamma(phi, phid)])
        sol = np.linalg.solve(K, rhs)
        phidd = sol[:self.N]
        qdd = self.Q @ phidd
        if return_all:
            return qdd, phi, phid, phidd, -sol[self.N:]
        return qdd

    def kinetic_energy(self, q, qd):
        phi, phid = self.state(q, qd)
        return float(self.kinetic(phi, phid))

    def potential_energy(self, q):
        return float(self.potential(self.phi(q)))

    def kkt_residual(self, q, qd, qdd, tau, actuators=None):
        """max |M phi'' + b - S^T tau - A^T lambda| with the least-squares lambda."""
        phi, phid, phidd = self.state(q, qd, qdd)
        f = self.required(phi, phid, phidd) - self.S(actuators).T @ np.asarray(tau, float)
        A = self.jacobian(phi)
        lam, *_ = np.linalg.lstsq(A.T, f, rcond=None)
        return float(np.max(np.abs(f - A.T @ lam)))


# --------------------------------------------------------- planar, absolute
class PlanarSystem(KKTMechanism):
    """Free planar bodies (rods: x, y, theta of the centroid; particles: x, y)
    joined by pin and line constraints.  Gravity (0, -g)."""

    def __init__(self, g):
        self.g = float(g)
        self.bodies = []          # dicts: name, mass, inertia (None: particle), slice
        self.pins = []            # (body_i, p_i, body_j or None, p_j)
        self.lines = []           # (body, p, value): y of the point = value
        self._n = 0

    def add_rod(self, name, mass, length):
        b = dict(name=name, mass=float(mass), inertia=float(mass) * length ** 2 / 12.0,
                 length=float(length), start=self._n, rigid=True)
        self._n += 3
        self.bodies.append(b)
        return b

    def add_particle(self, name, mass):
        b = dict(name=name, mass=float(mass), inertia=None, start=self._n, rigid=False)
        self._n += 2
        self.bodies.append(b)
        return b

    def body(self, name):
        return next(b for b in self.bodies if b["name"] == name)

    def finish(self):
        self.N = self._n
        diag = []
        for b in self.bodies:
            diag += [b["mass"], b["mass"]] + ([b["inertia"]] if b["rigid"] else [])
        self._M = np.diag(diag)

    def theta_index(self, name):
        b = self.body(name)
        assert b["rigid"]
        return b["start"] + 2

    def e(self, i):
        v = np.zeros(self.N)
        v[i] = 1.0
        return v

    # kinematics of a body point: position, Jacobian rows (2, N), quadratic term
    def point(self, phi, body, p):
        s = body["start"]
        c = phi[s:s + 2]
        if not body["rigid"]:
            return c.copy()
        th = phi[s + 2]
        R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        return c + R @ np.asarray(p, float)

    def _point_jac(self, phi, body, p):
        J = np.zeros((2, self.N))
        s = body["start"]
        J[:, s:s + 2] = np.eye(2)
        if body["rigid"]:
            th = phi[s + 2]
            R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
            J[:, s + 2] = _perp(R @ np.asarray(p, float))
        return J

    def _point_quad(self, phi, phid, body, p):
        if not body["rigid"]:
            return np.zeros(2)
        s = body["start"]
        th, thd = phi[s + 2], phid[s + 2]
        R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        return -(R @ np.asarray(p, float)) * thd * thd

    def constraints(self, phi):
        rows = []
        for bi, pi, bj, pj in self.pins:
            r = self.point(phi, bi, pi) - (np.asarray(pj, float) if bj is None
                                           else self.point(phi, bj, pj))
            rows.append(r)
        for b, p, val in self.lines:
            rows.append([self.point(phi, b, p)[1] - val])
        return np.concatenate(rows)

    def jacobian(self, phi):
        rows = []
        for bi, pi, bj, pj in self.pins:
            J = self._point_jac(phi, bi, pi)
            if bj is not None:
                J = J - self._point_jac(phi, bj, pj)
            rows.append(J)
        for b, p, _ in self.lines:
            rows.append(self._point_jac(phi, b, p)[1:2])
        return np.vstack(rows)

    def gamma(self, phi, phid):
        rows = []
        for bi, pi, bj, pj in self.pins:
            gq = self._point_quad(phi, phid, bi, pi)
            if bj is not None:
                gq = gq - self._point_quad(phi, phid, bj, pj)
            rows.append(gq)
        for b, p, _ in self.lines:
            rows.append(self._point_quad(phi, phid, b, p)[1:2])
        return np.concatenate(rows)

    def mass(self, phi):
        return self._M

    def bias(self, phi, phid):
        b = np.zeros(self.N)
        for body in self.bodies:
            b[body["start"] + 1] = body["mass"] * self.g      # +dV/dy
        return b

    def potential(self, phi):
        return float(sum(b["mass"] * self.g * phi[b["start"] + 1] for b in self.bodies))

    @staticmethod
    def _rod_coords(P, Q_):
        """(x_c, y_c, theta) of a rod from point P to point Q_."""
        d = Q_ - P
        return np.array([0.5 * (P[0] + Q_[0]), 0.5 * (P[1] + Q_[1]), np.arctan2(d[1], d[0])])


def _check_positive(**kw):
    for k, v in kw.items():
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"{k} must be finite and non-negative, got {v}")


class FiveBar(PlanarSystem):
    """Five-bar of ``mechanisms.five_bar`` in absolute coordinates.

    phi = [crank1 (x, y, th), crank2 (..), coupler1 (..), coupler2 (..), tip mass (x, y)];
    q = (theta1, theta2) absolute crank angles; actuators "crank1", "crank2"
    (torques from the ground) and "elbow1" (crank1 -> coupler1 relative torque).
    """

    defaults = dict(base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35,
                    m_crank1=1.0, m_crank2=1.0, m_coupler1=0.8, m_coupler2=0.8,
                    m_tip=0.5, g=9.81)
    nominal = np.array([2.0, 1.1])

    def __init__(self, **params):
        p = merge_params(self.defaults, params)
        _check_positive(**p)
        self.p = p
        super().__init__(p["g"])
        c1 = self.add_rod("crank1", p["m_crank1"], p["crank1"])
        c2 = self.add_rod("crank2", p["m_crank2"], p["crank2"])
        k1 = self.add_rod("coupler1", p["m_coupler1"], p["coupler1"])
        k2 = self.add_rod("coupler2", p["m_coupler2"], p["coupler2"])
        tip = self.add_particle("tip", p["m_tip"])
        self.finish()
        h = lambda b: np.array([-0.5 * b["length"], 0.0])   # proximal end  # noqa: E731
        t = lambda b: np.array([0.5 * b["length"], 0.0])    # distal end    # noqa: E731
        self.pins = [(c1, h(c1), None, (0.0, 0.0)),
                     (c2, h(c2), None, (p["base"], 0.0)),
                     (c1, t(c1), k1, h(k1)),
                     (c2, t(c2), k2, h(k2)),
                     (k1, t(k1), k2, t(k2)),
                     (k1, t(k1), tip, (0.0, 0.0))]
        i1, i2 = self.theta_index("crank1"), self.theta_index("crank2")
        j1, j2 = self.theta_index("coupler1"), self.theta_index("coupler2")
        self.Q = np.vstack([self.e(i1), self.e(i2)])
        self.actuators = {"crank1": self.e(i1), "crank2": self.e(i2),
                          "elbow1": self.e(j1) - self.e(i1),
                          "elbow2": self.e(j2) - self.e(i2)}
        self.default_actuators = ("crank1", "crank2")

    def points(self, q):
        p = self.p
        th1, th2 = q
        A1 = p["crank1"] * _unit(th1)
        A2 = np.array([p["base"], 0.0]) + p["crank2"] * _unit(th2)
        C = circle_intersection(A1, p["coupler1"], A2, p["coupler2"], "five-bar loop")
        return dict(O1=np.zeros(2), O2=np.array([p["base"], 0.0]), A1=A1, A2=A2, C=C)

    def phi(self, q):
        P = self.points(q)
        return np.concatenate([self._rod_coords(P["O1"], P["A1"]),
                               self._rod_coords(P["O2"], P["A2"]),
                               self._rod_coords(P["A1"], P["C"]),
                               self._rod_coords(P["A2"], P["C"]), P["C"]])

    def assemble(self, q):
        """Tree joint values (relative angles, radians) and the joint points."""
        phi = self.phi(q)
        t = {b["name"]: phi[b["start"] + 2] for b in self.bodies if b["rigid"]}
        out = dict(crank1=t["crank1"], elbow1=wrap(t["coupler1"] - t["crank1"]),
                   crank2=t["crank2"], elbow2=wrap(t["coupler2"] - t["crank2"]),
                   tip=wrap(t["coupler2"] - t["coupler1"]))
        out.update(self.points(q))
        return out


class FourBar(PlanarSystem):
    """Four-bar of ``mechanisms.four_bar``; q = crank angle; actuator "crank"."""

    defaults = dict(ground=0.3, crank=0.1, coupler=0.35, rocker=0.25, m_crank=0.5,
                    m_coupler=1.0, m_rocker=0.8, g=9.81)
    nominal = np.array([1.0])

    def __init__(self, **params):
        p = merge_params(self.defaults, params)
        _check_positive(**p)
        self.p = p
        super().__init__(p["g"])
        cr = self.add_rod("crank", p["m_crank"], p["crank"])
        co = self.add_rod("coupler", p["m_coupler"], p["coupler"])
        ro = self.add_rod("rocker", p["m_rocker"], p["rocker"])      # from O4 to B
        self.finish()
        h = lambda b: np.array([-0.5 * b["length"], 0.0])   # noqa: E731
        t = lambda b: np.array([0.5 * b["length"], 0.0])    # noqa: E731
        self.pins = [(cr, h(cr), None, (0.0, 0.0)),
                     (cr, t(cr), co, h(co)),
                     (co, t(co), ro, t(ro)),
                     (ro, h(ro), None, (p["ground"], 0.0))]
        i = self.theta_index("crank")
        self.Q = self.e(i)[None, :]
        self.actuators = {"crank": self.e(i),
                          "rocker": self.e(self.theta_index("rocker"))}
        self.default_actuators = ("crank",)

    def points(self, q):
        p = self.p
        th = float(np.atleast_1d(q)[0])
        A = p["crank"] * _unit(th)
        O4 = np.array([p["ground"], 0.0])
        B = circle_intersection(A, p["coupler"], O4, p["rocker"], "four-bar loop")
        return dict(O2=np.zeros(2), A=A, B=B, O4=O4)

    def phi(self, q):
        P = self.points(q)
        return np.concatenate([self._rod_coords(P["O2"], P["A"]),
                               self._rod_coords(P["A"], P["B"]),
                               self._rod_coords(P["O4"], P["B"])])

    def assemble(self, q):
        phi = self.phi(q)
        t = {b["name"]: phi[b["start"] + 2] for b in self.bodies}
        out = dict(crank=t["crank"], A=wrap(t["coupler"] - t["crank"]),
                   B=wrap(t["rocker"] - t["coupler"]), rocker=t["rocker"])
        out.update(self.points(q))
        return out


class SliderCrank(PlanarSystem):
    """Slider-crank of ``mechanisms.slider_crank``; q = crank angle; actuators "crank"
    (torque) and "slide" (force on the slider along +x)."""

    defaults = dict(crank=0.1, rod=0.3, offset=0.0, m_crank=0.5, m_rod=1.0, m_slider=2.0,
                    g=9.81)
    nominal = np.array([0.7])

    def __init__(self, **params):
        p = merge_params(self.defaults, params)
        _check_positive(**{k: v for k, v in p.items() if k != "offset"})
        self.p = p
        super().__init__(p["g"])
        cr = self.add_rod("crank", p["m_crank"], p["crank"])
        rod = self.add_rod("rod", p["m_rod"], p["rod"])
        sl = self.add_particle("slider", p["m_slider"])
        self.finish()
        h = lambda b: np.array([-0.5 * b["length"], 0.0])   # noqa: E731
        t = lambda b: np.array([0.5 * b["length"], 0.0])    # noqa: E731
        self.pins = [(cr, h(cr), None, (0.0, 0.0)),
                     (cr, t(cr), rod, h(rod)),
                     (rod, t(rod), sl, (0.0, 0.0))]
        self.lines = [(sl, (0.0, 0.0), p["offset"])]
        i = self.theta_index("crank")
        self.Q = self.e(i)[None, :]
        self.actuators = {"crank": self.e(i), "slide": self.e(sl["start"])}
        self.default_actuators = ("crank",)

    def points(self, q):
        p = self.p
        th = float(np.atleast_1d(q)[0])
        A = p["crank"] * _unit(th)
        dy = p["offset"] - A[1]
        h2 = p["rod"] ** 2 - dy * dy
        if h2 < 0:
            raise ValueError("slider-crank loop cannot be assembled")
        B = np.array([A[0] + np.sqrt(h2), p["offset"]])
        return dict(O=np.zeros(2), A=A, B=B)

    def phi(self, q):
        P = self.points(q)
        return np.concatenate([self._rod_coords(P["O"], P["A"]),
                               self._rod_coords(P["A"], P["B"]), P["B"]])

    def assemble(self, q):
        phi = self.phi(q)
        t = {b["name"]: phi[b["start"] + 2] for b in self.bodies if b["rigid"]}
        P = self.points(q)
        out = dict(crank=t["crank"], A=wrap(t["rod"] - t["crank"]), B=wrap(-t["rod"]),
                   slide=P["B"][0])
        out.update(P)
        return out


# ------------------------------------------------ five-bar as a spanning tree
def _rod_link(mass, length, name, extra_mass=0.0):
    """Planar rod along the link x axis from the joint (plus a point mass at its end)."""
    m = mass + extra_mass
    if m == 0:
        return Link(0.0, name=name)
    d = (mass * length / 2 + extra_mass * length) / m
    I = mass * length ** 2 / 12 + mass * (length / 2 - d) ** 2 + extra_mass * (length - d) ** 2
    return Link(m, com=(d, 0.0, 0.0), inertia=np.diag([0.0, I, I]), name=name)


def _trans(x, y=0.0, z=0.0):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


class FiveBarTree(KKTMechanism):
    """The five-bar as two open chains from the ground in relative joint angles
    phi = (crank1, elbow1, crank2, elbow2), cut at the tip joint: C1(phi) = C2(phi).
    Chain dynamics from the RNEA oracle; the tip mass is lumped into coupler 1."""

    def __init__(self, **params):
        p = dict(FiveBar.defaults)
        p.update(params)
        self.p = p
        grav = (0.0, -p["g"], 0.0)
        self.chains = []
        for k, (m_cr, L_cr, m_co, L_co, extra, x0) in enumerate(
                [(p["m_crank1"], p["crank1"], p["m_coupler1"], p["coupler1"], p["m_tip"], 0.0),
                 (p["m_crank2"], p["crank2"], p["m_coupler2"], p["coupler2"], 0.0, p["base"])]):
            joints = [Joint("R", (0, 0, 1), origin=_trans(x0), name=f"crank{k + 1}"),
                      Joint("R", (0, 0, 1), origin=_trans(L_cr), name=f"elbow{k + 1}")]
            links = [_rod_link(m_cr, L_cr, f"crank{k + 1}"),
                     _rod_link(m_co, L_co, f"coupler{k + 1}", extra)]
            self.chains.append(SerialChain(joints, links, gravity=grav))
        self.N = 4
        I4 = np.eye(4)
        self.Q = I4[[0, 2]]
        self.actuators = {"crank1": I4[0], "elbow1": I4[1], "crank2": I4[2], "elbow2": I4[3]}
        self.default_actuators = ("crank1", "crank2")
        self._abs = FiveBar(**params)

    def phi(self, q):
        a = self._abs.assemble(q)
        return np.array([a["crank1"], a["elbow1"], a["crank2"], a["elbow2"]])

    def _C(self, phi, k):
        p = self.p
        th, el = (phi[0], phi[1]) if k == 0 else (phi[2], phi[3])
        L, c = (p["crank1"], p["coupler1"]) if k == 0 else (p["crank2"], p["coupler2"])
        x0 = 0.0 if k == 0 else p["base"]
        return np.array([x0, 0.0]) + L * _unit(th) + c * _unit(th + el)

    def constraints(self, phi):
        return self._C(phi, 0) - self._C(phi, 1)

    def jacobian(self, phi):
        p = self.p
        A = np.zeros((2, 4))
        for k, sgn in ((0, 1.0), (1, -1.0)):
            th, el = phi[2 * k], phi[2 * k + 1]
            L, c = (p["crank1"], p["coupler1"]) if k == 0 else (p["crank2"], p["coupler2"])
            A[:, 2 * k] = sgn * (L * _perp(_unit(th)) + c * _perp(_unit(th + el)))
            A[:, 2 * k + 1] = sgn * c * _perp(_unit(th + el))
        return A

    def gamma(self, phi, phid):
        p = self.p
        g = np.zeros(2)
        for k, sgn in ((0, 1.0), (1, -1.0)):
            th, el = phi[2 * k], phi[2 * k + 1]
            thd, eld = phid[2 * k], phid[2 * k + 1]
            L, c = (p["crank1"], p["coupler1"]) if k == 0 else (p["crank2"], p["coupler2"])
            g += sgn * (-L * _unit(th) * thd ** 2 - c * _unit(th + el) * (thd + eld) ** 2)
        return g

    def mass(self, phi):
        M = np.zeros((4, 4))
        for k, ch in enumerate(self.chains):
            M[2 * k:2 * k + 2, 2 * k:2 * k + 2] = _rnea.oracle_mass_matrix(ch, phi[2 * k:2 * k + 2])
        return M

    def bias(self, phi, phid):
        return np.concatenate([_rnea.rnea(ch, phi[2 * k:2 * k + 2], phid[2 * k:2 * k + 2],
                                          np.zeros(2))
                               for k, ch in enumerate(self.chains)])

    def potential(self, phi):
        return float(sum(_rnea.oracle_potential_energy(ch, phi[2 * k:2 * k + 2])
                         for k, ch in enumerate(self.chains)))


# ------------------------------------------------------------ Stewart 6-UPS
class StewartPlatform(KKTMechanism):
    """6-UPS Stewart-Gough platform of issue 3.

    phi = [pose x (6); leg 0 (u1, u2, L); ...; leg 5 (u1, u2, L)] (N = 24).
    ``coordinates="pose"``: q = pose; ``"legs"``: q = the six leg lengths.
    Actuators: "leg0.p" .. "leg5.p" (forces along the legs) and "pose0".."pose5"
    (generalized forces conjugate to the pose coordinates).
    """

    defaults = dict(rb=0.5, rp=0.3, base_half_angle=15.0, plat_half_angle=45.0, h0=0.6,
                    m_plat=10.0, I_plat=np.diag([0.3, 0.3, 0.5]), plat_com=(0.0, 0.0, 0.05),
                    m_cyl=2.0, cyl_com=0.2, I_cyl=np.diag([0.02, 0.02, 0.002]),
                    m_rod=1.0, rod_com=-0.15, I_rod=np.diag([0.01, 0.01, 0.001]), g=9.81)

    def __init__(self, coordinates="pose", leg_dynamics="kane", **params):
        if leg_dynamics not in ("kane", "rnea"):
            raise ValueError(leg_dynamics)
        self.leg_dynamics = leg_dynamics
        p = merge_params(self.defaults, params)
        self.p = p
        for key in ("I_plat", "I_cyl", "I_rod"):
            I = np.asarray(p[key], float)
            p[key] = np.diag(I) if I.ndim == 1 else I
        self.g_vec = np.array([0.0, 0.0, -p["g"]])
        bh, ph = np.radians(p["base_half_angle"]), np.radians(p["plat_half_angle"])
        angs_b, angs_p = [], []
        for k in range(3):
            c = np.radians(120.0 * k)
            angs_b += [c - bh, c + bh]
            angs_p += [c - ph, c + ph]
        self.base_anchors = np.array([[p["rb"] * np.cos(a), p["rb"] * np.sin(a), 0.0]
                                      for a in angs_b])
        self.plat_anchors = np.array([[p["rp"] * np.cos(a), p["rp"] * np.sin(a), 0.0]
                                      for a in angs_p])
        self.nominal = np.array([0.0, 0.0, p["h0"], 0.0, 0.0, 0.0])
        self.legs = []
        for i in range(6):
            joints = [Joint("R", (1, 0, 0), origin=_trans(*self.base_anchors[i]),
                            name=f"leg{i}.u1"),
                      Joint("R", (0, 1, 0), name=f"leg{i}.u2"),
                      Joint("P", (0, 0, 1), name=f"leg{i}.p")]
            links = [Link(0.0, name=f"leg{i}.cross"),
                     Link(p["m_cyl"], com=(0, 0, p["cyl_com"]), inertia=p["I_cyl"],
                          name=f"leg{i}.cyl"),
                     Link(p["m_rod"], com=(0, 0, p["rod_com"]), inertia=p["I_rod"],
                          name=f"leg{i}.rod")]
            self.legs.append(SerialChain(joints, links, gravity=tuple(self.g_vec)))
        self.N = 24
        I24 = np.eye(24)
        self.leg_index = [6 + 3 * i + 2 for i in range(6)]
        self.actuators = {f"leg{i}.p": I24[self.leg_index[i]] for i in range(6)}
        self.actuators.update({f"pose{k}": I24[k] for k in range(6)})
        self.leg_names = tuple(f"leg{i}.p" for i in range(6))
        self.pose_names = tuple(f"pose{k}" for k in range(6))
        self.set_coordinates(coordinates)

    def set_coordinates(self, coordinates):
        if coordinates not in ("pose", "legs"):
            raise ValueError(coordinates)
        self.coordinates = coordinates
        I24 = np.eye(24)
        if coordinates == "pose":
            self.Q = I24[:6]
            self.default_actuators = self.pose_names
        else:
            self.Q = I24[self.leg_index]
            self.default_actuators = self.leg_names
        return self

    # -- leg geometry
    @staticmethod
    def leg_direction(u1, u2, order=0):
        """n(u1, u2) = Rx(u1) Ry(u2) ez and its derivatives."""
        s1, c1, s2, c2 = np.sin(u1), np.cos(u1), np.sin(u2), np.cos(u2)
        n = np.array([s2, -s1 * c2, c1 * c2])
        if order == 0:
            return n
        n1 = np.array([0.0, -c1 * c2, -s1 * c2])
        n2 = np.array([c2, s1 * s2, -c1 * s2])
        n11 = np.array([0.0, s1 * c2, -c1 * c2])
        n12 = np.array([0.0, c1 * s2, s1 * s2])
        n22 = np.array([-s2, s1 * c2, -c1 * c2])
        return n, n1, n2, n11, n12, n22

    def anchors_world(self, x):
        R = rot_zyx(x[3:])
        return x[:3] + self.plat_anchors @ R.T

    def inverse_kinematics(self, x):
        """Closed form: (u1, u2, L) of every leg (6, 3) for the pose x (branch cos u2 > 0)."""
        x = np.asarray(x, float)
        B = self.anchors_world(x)
        out = np.zeros((6, 3))
        for i in range(6):
            v = B[i] - self.base_anchors[i]
            L = float(np.linalg.norm(v))
            n = v / L
            out[i] = (np.arctan2(-n[1], n[2]), np.arcsin(np.clip(n[0], -1, 1)), L)
        return out

    def leg_jacobian(self, x):
        """J (6, 6) = dL/dx: row i = n_i^T [I, (E_j x R a_i)_j] (leg-rate map)."""
        x = np.asarray(x, float)
        R = rot_zyx(x[3:])
        E = angular_map(x[3:])
        B = self.anchors_world(x)
        J = np.zeros((6, 6))
        for i in range(6):
            v = B[i] - self.base_anchors[i]
            n = v / np.linalg.norm(v)
            r = R @ self.plat_anchors[i]
            J[i, :3] = n
            J[i, 3:] = [n @ np.cross(E[:, j], r) for j in range(3)]
        return J

    def forward_kinematics(self, a, x0=None, tol=1e-14, maxiter=50):
        """Pose with leg lengths a, by Newton from x0 (default: nominal pose)."""
        a = np.asarray(a, float)
        x = np.array(self.nominal if x0 is None else x0, float)
        for _ in range(maxiter):
            r = self.inverse_kinematics(x)[:, 2] - a
            if np.max(np.abs(r)) < tol:
                return x
            x = x - np.linalg.solve(self.leg_jacobian(x), r)
        r = self.inverse_kinematics(x)[:, 2] - a
        if np.max(np.abs(r)) > 1e-10:
            raise ValueError("Stewart forward kinematics did not converge "
                             f"(|r| = {np.max(np.abs(r))})")
        return x

    def pose_phi(self, x):
        x = np.asarray(x, float)
        return np.concatenate([x, self.inverse_kinematics(x).ravel()])

    def phi(self, q):
        if self.coordinates == "pose":
            return self.pose_phi(q)
        return self.pose_phi(self.forward_kinematics(q))

    def assemble(self, q):
        phi = self.phi(q)
        legs = phi[6:].reshape(6, 3)
        x = phi[:6]
        B = self.anchors_world(x)
        n = (B - self.base_anchors) / legs[:, 2:3]
        return dict(pose=x, u1=legs[:, 0], u2=legs[:, 1], L=legs[:, 2], B=B, n=n)

    # -- closure: S point of leg i = platform anchor i
    def constraints(self, phi):
        x = phi[:6]
        B = self.anchors_world(x)
        rows = []
        for i in range(6):
            u1, u2, L = phi[6 + 3 * i:9 + 3 * i]
            rows.append(self.base_anchors[i] + L * self.leg_direction(u1, u2) - B[i])
        return np.concatenate(rows)

    def jacobian(self, phi):
        x = phi[:6]
        R = rot_zyx(x[3:])
        E = angular_map(x[3:])
        A = np.zeros((18, 24))
        for i in range(6):
            u1, u2, L = phi[6 + 3 * i:9 + 3 * i]
            n, n1, n2, *_ = self.leg_direction(u1, u2, order=2)
            r = R @ self.plat_anchors[i]
            rows = slice(3 * i, 3 * i + 3)
            A[rows, 0:3] = -np.eye(3)
            A[rows, 3:6] = -np.column_stack([np.cross(E[:, j], r) for j in range(3)])
            A[rows, 6 + 3 * i] = L * n1
            A[rows, 7 + 3 * i] = L * n2
            A[rows, 8 + 3 * i] = n
        return A

    def gamma(self, phi, phid):
        x, xd = phi[:6], phid[:6]
        R = rot_zyx(x[3:])
        E, Ed = angular_map(x[3:], xd[3:])
        w = E @ xd[3:]
        out = np.zeros(18)
        for i in range(6):
            u1, u2, L = phi[6 + 3 * i:9 + 3 * i]
            u1d, u2d, Ld = phid[6 + 3 * i:9 + 3 * i]
            n, n1, n2, n11, n12, n22 = self.leg_direction(u1, u2, order=2)
            leg = 2 * Ld * (n1 * u1d + n2 * u2d) + L * (n11 * u1d ** 2 + 2 * n12 * u1d * u2d
                                                       + n22 * u2d ** 2)
            r = R @ self.plat_anchors[i]
            plat = np.cross(Ed, r) + np.cross(w, np.cross(w, r))
            out[3 * i:3 * i + 3] = leg - plat
        return out

    # -- platform: free rigid body, Newton-Euler projected on the pose coordinates
    def platform_load(self, x, xd, xdd, gravity=True):
        """Jc^T (m a_c - m g) + Jw^T (I alpha + w x I w): the generalized load the
        platform needs for the pose motion (x, x', x'')."""
        p = self.p
        x, xd, xdd = (np.asarray(v, float) for v in (x, xd, xdd))
        R = rot_zyx(x[3:])
        E, Ed = angular_map(x[3:], xd[3:])
        r = R @ np.asarray(p["plat_com"], float)
        Jc = np.hstack([np.eye(3), np.column_stack([np.cross(E[:, j], r) for j in range(3)])])
        Jw = np.hstack([np.zeros((3, 3)), E])
        w = E @ xd[3:]
        alpha = E @ xdd[3:] + Ed
        a_c = xdd[:3] + np.cross(alpha, r) + np.cross(w, np.cross(w, r))
        Iw = R @ p["I_plat"] @ R.T
        F = p["m_plat"] * (a_c - (self.g_vec if gravity else 0.0))
        Nm = Iw @ alpha + np.cross(w, Iw @ w)
        return Jc.T @ F + Jw.T @ Nm

    def platform_mass(self, x):
        """m Jc^T Jc + Jw^T I Jw (cross-checked against platform_load in the tests)."""
        p = self.p
        R = rot_zyx(x[3:])
        E = angular_map(x[3:])
        r = R @ np.asarray(p["plat_com"], float)
        Jc = np.hstack([np.eye(3), np.column_stack([np.cross(E[:, j], r) for j in range(3)])])
        Jw = np.hstack([np.zeros((3, 3)), E])
        Iw = R @ p["I_plat"] @ R.T
        return p["m_plat"] * Jc.T @ Jc + Jw.T @ Iw @ Jw

    def platform_energy(self, x, xd):
        p = self.p
        R = rot_zyx(x[3:])
        E = angular_map(x[3:])
        r = R @ np.asarray(p["plat_com"], float)
        w = E @ xd[3:]
        v = xd[:3] + np.cross(w, r)
        Iw = R @ p["I_plat"] @ R.T
        T = 0.5 * p["m_plat"] * v @ v + 0.5 * w @ Iw @ w
        V = -p["m_plat"] * self.g_vec @ (x[:3] + r)
        return T, V

    # -- legs: open U-P chains.  Two independent evaluations: the RNEA oracle on a
    # kic.SerialChain description ("rnea"), and Kane / Newton-Euler projections
    # written here ("kane", faster; the default).  Self-tests compare them.
    def _leg_bodies(self, s):
        """Per leg body: (mass, centroid offset r from the U centre, Jc (3, 3),
        Jw (3, 3), world inertia) at leg coordinates s = (u1, u2, L)."""
        p = self.p
        u1, u2, L = s
        RU = _Rx(u1) @ _Ry(u2)
        n = RU[:, 2]
        ex = np.array([1.0, 0.0, 0.0])
        ey1 = _Rx(u1) @ np.array([0.0, 1.0, 0.0])
        Jw = np.column_stack([ex, ey1, np.zeros(3)])
        out = []
        for m, d, I, slides in ((p["m_cyl"], p["cyl_com"], p["I_cyl"], False),
                                (p["m_rod"], L + p["rod_com"], p["I_rod"], True)):
            r = d * n
            Jc = np.column_stack([np.cross(ex, r), np.cross(ey1, r), n if slides else np.zeros(3)])
            out.append((m, r, Jc, Jw, RU @ I @ RU.T, slides))
        return out

    def leg_load_kane(self, s, sd, sdd, gravity=True):
        """Required U-P joint loads (u1, u2, L) of one leg, sum of Jc^T (m a - m g)
        + Jw^T (I alpha + w x I w) over the cylinder and the rod."""
        s, sd, sdd = (np.asarray(v, float) for v in (s, sd, sdd))
        ex = np.array([1.0, 0.0, 0.0])
        ey1 = _Rx(s[0]) @ np.array([0.0, 1.0, 0.0])
        w = sd[0] * ex + sd[1] * ey1
        alpha = sdd[0] * ex + sdd[1] * ey1 + sd[0] * sd[1] * np.cross(ex, ey1)
        Q = np.zeros(3)
        for m, r, Jc, Jw, Iw, slides in self._leg_bodies(s):
            a = np.cross(alpha, r) + np.cross(w, np.cross(w, r))
            if slides:
                n = Jc[:, 2]
                a = a + sdd[2] * n + 2.0 * sd[2] * np.cross(w, n)
            F = m * (a - (self.g_vec if gravity else 0.0))
            Q += Jc.T @ F + Jw.T @ (Iw @ alpha + np.cross(w, Iw @ w))
        return Q

    def leg_mass_kane(self, s):
        M = np.zeros((3, 3))
        for m, r, Jc, Jw, Iw, _ in self._leg_bodies(s):
            M += m * Jc.T @ Jc + Jw.T @ Iw @ Jw
        return M

    def leg_mass(self, i, s):
        if self.leg_dynamics == "rnea":
            return _rnea.oracle_mass_matrix(self.legs[i], s)
        return self.leg_mass_kane(s)

    def leg_bias(self, i, s, sd):
        if self.leg_dynamics == "rnea":
            return _rnea.rnea(self.legs[i], s, sd, np.zeros(3))
        return self.leg_load_kane(s, sd, np.zeros(3))

    def mass(self, phi):
        M = np.zeros((24, 24))
        M[:6, :6] = self.platform_mass(phi[:6])
        for i in range(6):
            s = slice(6 + 3 * i, 9 + 3 * i)
            M[s, s] = self.leg_mass(i, phi[s])
        return M

    def bias(self, phi, phid):
        b = np.zeros(24)
        b[:6] = self.platform_load(phi[:6], phid[:6], np.zeros(6))
        for i in range(6):
            s = slice(6 + 3 * i, 9 + 3 * i)
            b[s] = self.leg_bias(i, phi[s], phid[s])
        return b

    def kinetic(self, phi, phid):
        T, _ = self.platform_energy(phi[:6], phid[:6])
        for i, ch in enumerate(self.legs):
            s = slice(6 + 3 * i, 9 + 3 * i)
            T += _rnea.oracle_kinetic_energy(ch, phi[s], phid[s])
        return float(T)

    def potential(self, phi):
        _, V = self.platform_energy(phi[:6], np.zeros(6))
        for i, ch in enumerate(self.legs):
            s = slice(6 + 3 * i, 9 + 3 * i)
            V += _rnea.oracle_potential_energy(ch, phi[s])
        return float(V)

    # -- convenience in the terms
    def leg_rates(self, x, xd):
        """(a, a') from the pose motion, a_i' = n_i . v_Bi (v_Bi = p' + w x R a_i)."""
        x, xd = np.asarray(x, float), np.asarray(xd, float)
        asm = self.assemble_pose(x)
        E = angular_map(x[3:])
        w = E @ xd[3:]
        R = rot_zyx(x[3:])
        vB = xd[:3] + np.cross(w, self.plat_anchors @ R.T)
        return asm["L"], np.einsum("ij,ij->i", asm["n"], vB), vB

    def assemble_pose(self, x):
        old = self.coordinates
        try:
            self.set_coordinates("pose")
            return self.assemble(x)
        finally:
            self.set_coordinates(old)

    def leg_motion(self, x, xd, xdd):
        """(a, a', a'') of the legs for the pose motion (x, x', x'')."""
        old = self.coordinates
        try:
            self.set_coordinates("pose")
            phi, phid, phidd = self.state(x, xd, xdd)
        finally:
            self.set_coordinates(old)
        return phi[self.leg_index], phid[self.leg_index], phidd[self.leg_index]

    def actuator_forces(self, x, xd, xdd):
        """(leg forces (6,), generalized force on the pose coordinates (6,)) for a
        prescribed platform motion."""
        old = self.coordinates
        try:
            self.set_coordinates("pose")
            f_legs = self.inverse_dynamics(x, xd, xdd, actuators=self.leg_names)
            f_pose = self.inverse_dynamics(x, xd, xdd, actuators=self.pose_names)
        finally:
            self.set_coordinates(old)
        return f_legs, f_pose

    def platform_acceleration(self, x, xd, leg_forces=None, pose_force=None):
        """x'' under leg forces and/or a generalized pose force."""
        old = self.coordinates
        try:
            self.set_coordinates("pose")
            tau = np.concatenate([np.zeros(6) if leg_forces is None else leg_forces,
                                  np.zeros(6) if pose_force is None else pose_force])
            return self.forward_dynamics(x, xd, tau, actuators=self.leg_names + self.pose_names)
        finally:
            self.set_coordinates(old)
