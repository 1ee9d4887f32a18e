"""Independent reference solution for the free motion of the planar five-bar
(issue 10), and the closure rank of a parallelogram four-bar (change point).

Written from the *parameters* of ``mechanisms.five_bar()`` (same names and
defaults), never from kic code: no ``kic`` import here.

Five-bar model
--------------
Two planar two-link arms hang from the ground pivots O1 = (0, 0) and
O2 = (base, 0) (m).  The state is the four *absolute* angles from +x (rad)::

    theta = (a1, b1, a2, b2)     a_k: crank k,  b_k: coupler k

Each crank is a uniform rod (mass m_ck, length l_k); coupler 1 a uniform rod
(n_1, k_1) carrying the point mass m_tip at its far end C; coupler 2 a uniform
rod (n_2, k_2).  With, per body, the mass m, the first moment s (kg m) and the
moment of inertia I_O (kg m^2) about its proximal joint, arm k has

    T_k = 1/2 (I_a + m_b l^2) a'^2 + s_b l cos(b - a) a' b' + 1/2 I_b b'^2
    V_k = g [(s_a + m_b l) sin a + s_b sin b]

(gravity g along -y), so M(theta) is block diagonal with 2x2 blocks and the
velocity and gravity terms are

    h_a = -s_b l sin(b - a) b'^2 + g (s_a + m_b l) cos a
    h_b = +s_b l sin(b - a) a'^2 + g s_b cos b.

Loop closure (2 rows, m): the two arm tips coincide,

    c(theta) = l1 e(a1) + k1 e(b1) - [O2 + l2 e(a2) + k2 e(b2)] = 0,
    J = dc/dtheta = [l1 e'(a1), k1 e'(b1), -l2 e'(a2), -k2 e'(b2)],
    J' theta' = -[l1 a1'^2 e(a1) + k1 b1'^2 e(b1) - l2 a2'^2 e(a2) - k2 b2'^2 e(b2)],

with e(x) = (cos x, sin x), e'(x) = (-sin x, cos x).  Index-1 DAE:

    M theta'' + h = J^T lambda,     J theta'' = -J' theta' - 2 alpha c' - beta^2 c

(Baumgarte terms optional).  Default stabilization: projection of positions
(Gauss-Newton, minimum norm) and velocities (mass-orthogonal) onto the
constraint manifold at the end of every interval of ``project_every`` seconds,
the integrator restarting from the projected state.

kic's joints (``model.phi_names`` of ``mechanisms.five_bar()``):
crank1 = a1, crank2 = a2, elbow1 = b1 - a1, elbow2 = b2 - a2 (relative, rad),
tip = b2 - b1 (coupler 2 relative to coupler 1).  Angles are reported
continuous (not wrapped).

The crank coordinates (crank1, crank2) are singular where the dependent block
of the closure, the columns of b1 and b2, is singular:
``det [k1 e'(b1), -k2 e'(b2)] = -k1 k2 sin(b2 - b1)``, i.e. the two couplers
aligned (``sin(tip) = 0``).  :meth:`FiveBarDAE.simulate` records its sign
changes as events.

Parallelogram four-bar
----------------------
:func:`parallelogram_closure_rank`: four revolutes around the loop
(ground pivot O2, crank-coupler A, coupler-rocker B, rocker pivot O4) in
relative angles; the planar closure Jacobian has a column ``(1, y_j/L, -x_j/L)``
per joint at (x_j, y_j) (rotation rate, then the velocity of the world origin
divided by L).  Its rank is 3 unless all four joints are collinear, which for
a parallelogram (coupler = ground, rocker = crank) happens at crank angles 0
and pi: the change point where the parallelogram and antiparallelogram
branches meet and the mobility changes (IFToMM benchmark A02).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

__all__ = ["DEFAULTS", "JOINTS", "Q_REF", "FiveBarDAE", "FiveBarSolution", "SymmetricFiveBar", "simulate_five_bar",
           "assemble_five_bar", "parallelogram_closure_jacobian", "parallelogram_closure_rank"]

#: parameters of ``mechanisms.five_bar()`` and their defaults (m, kg, m/s^2)
DEFAULTS = dict(base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35,
                m_crank1=1.0, m_crank2=1.0, m_coupler1=0.8, m_coupler2=0.8, m_tip=0.5,
                g=9.81)
#: kic's joint names, in ``model.phi_names`` order
JOINTS = ("crank1", "crank2", "elbow1", "elbow2", "tip")
#: the reference crank angles of ``mechanisms.five_bar()`` (rad)
Q_REF = (np.pi / 2 + 0.3, np.pi / 2 - 0.3)


def _e(x):
    return np.array([np.cos(x), np.sin(x)])


def _ep(x):
    return np.array([-np.sin(x), np.cos(x)])


def _merge(params):
    params = dict(params or {})
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unknown five-bar parameters {sorted(unknown)}")
    return {**DEFAULTS, **params}


@dataclass
class FiveBarSolution:
    """Trajectory at the requested times.

    ``phi``/``phid`` (n, 5): kic's joints (rad, rad/s) in :data:`JOINTS` order;
    ``theta``/``thetad`` (n, 4): the oracle's absolute angles; ``energy`` (n,)
    (J); ``residual`` (n,): |c| (m); ``crossings``: times (s) where the crank
    coordinates are singular (``sin(tip)`` changes sign); ``nfev``: right-hand
    side evaluations.
    """

    t: np.ndarray
    theta: np.ndarray
    thetad: np.ndarray
    phi: np.ndarray
    phid: np.ndarray
    energy: np.ndarray
    residual: np.ndarray
    crossings: list = field(default_factory=list)
    nfev: int = 0


class FiveBarDAE:
    """The five-bar as two arms plus a 2-row loop closure (see module notes).

    Parameters
    ----------
    params : dict, optional
        Any of :data:`DEFAULTS` (names of ``mechanisms.five_bar``).
    """

    def __init__(self, params: dict | None = None) -> None:
        p = _merge(params)
        self.p = p
        self.g = p["g"]
        self.l = (p["crank1"], p["crank2"])
        self.k = (p["coupler1"], p["coupler2"])
        self.O2 = np.array([p["base"], 0.0])
        mc = (p["m_crank1"], p["m_crank2"])
        n1, n2, mt = p["m_coupler1"], p["m_coupler2"], p["m_tip"]
        k1, k2 = self.k
        # per body: mass, first moment and inertia about the proximal joint
        self.sa = tuple(m * l / 2 for m, l in zip(mc, self.l))
        self.Ia = tuple(m * l * l / 3 for m, l in zip(mc, self.l))
        self.mb = (n1 + mt, n2)
        self.sb = (n1 * k1 / 2 + mt * k1, n2 * k2 / 2)
        self.Ib = (n1 * k1 * k1 / 3 + mt * k1 * k1, n2 * k2 * k2 / 3)

    # ------------------------------------------------------------ model
    def mass(self, th):
        M = np.zeros((4, 4))
        for k in range(2):
            a, b = th[2 * k], th[2 * k + 1]
            off = self.sb[k] * self.l[k] * np.cos(b - a)
            M[2 * k:2 * k + 2, 2 * k:2 * k + 2] = [[self.Ia[k] + self.mb[k] * self.l[k] ** 2, off],
                                                  [off, self.Ib[k]]]
        return M

    def bias(self, th, thd):
        """h: velocity terms plus gravity (+dV/dtheta), left-hand side."""
        h = np.zeros(4)
        for k in range(2):
            a, b = th[2 * k], th[2 * k + 1]
            ad, bd = thd[2 * k], thd[2 * k + 1]
            c = self.sb[k] * self.l[k] * np.sin(b - a)
            h[2 * k] = -c * bd * bd + self.g * (self.sa[k] + self.mb[k] * self.l[k]) * np.cos(a)
            h[2 * k + 1] = c * ad * ad + self.g * self.sb[k] * np.cos(b)
        return h

    def constraint(self, th):
        a1, b1, a2, b2 = th
        return (self.l[0] * _e(a1) + self.k[0] * _e(b1)
                - self.O2 - self.l[1] * _e(a2) - self.k[1] * _e(b2))

    def jacobian(self, th):
        a1, b1, a2, b2 = th
        return np.column_stack([self.l[0] * _ep(a1), self.k[0] * _ep(b1),
                                -self.l[1] * _ep(a2), -self.k[1] * _ep(b2)])

    def gamma(self, th, thd):
        """J' theta' (m/s^2)."""
        a1, b1, a2, b2 = th
        a1d, b1d, a2d, b2d = thd
        return -(self.l[0] * a1d ** 2 * _e(a1) + self.k[0] * b1d ** 2 * _e(b1)
                 - self.l[1] * a2d ** 2 * _e(a2) - self.k[1] * b2d ** 2 * _e(b2))

    def energy(self, th, thd):
        """Kinetic plus potential energy (J), V = 0 at y = 0."""
        V = sum(self.g * ((self.sa[k] + self.mb[k] * self.l[k]) * np.sin(th[2 * k])
                          + self.sb[k] * np.sin(th[2 * k + 1])) for k in range(2))
        return 0.5 * thd @ self.mass(th) @ thd + V

    def accelerations(self, th, thd, alpha=0.0, beta=0.0):
        """theta'' and lambda (N) from the KKT system (with Baumgarte terms)."""
        M, J = self.mass(th), self.jacobian(th)
        K = np.zeros((6, 6))
        K[:4, :4], K[:4, 4:], K[4:, :4] = M, -J.T, J
        rhs = np.concatenate([-self.bias(th, thd), -self.gamma(th, thd)])
        if alpha or beta:
            rhs[4:] -= 2 * alpha * (J @ thd) + beta * beta * self.constraint(th)
        x = np.linalg.solve(K, rhs)
        return x[:4], x[4:]

    def crank_determinant(self, th):
        """det of the closure's dependent block in crank coordinates (m^2);
        zero where the couplers are aligned."""
        return -self.k[0] * self.k[1] * np.sin(th[3] - th[1])

    # -------------------------------------------------------- projection
    def project(self, th, thd, tol=1e-15, max_iter=20):
        """Nearest point on c = 0 (Gauss-Newton, minimum-norm steps), then the
        mass-orthogonal projection of the rates onto J theta' = 0."""
        th = np.array(th, float)
        for _ in range(max_iter):
            c = self.constraint(th)
            if np.max(np.abs(c)) <= tol:
                break
            J = self.jacobian(th)
            th = th - J.T @ np.linalg.solve(J @ J.T, c)
        M, J = self.mass(th), self.jacobian(th)
        MiJt = np.linalg.solve(M, J.T)
        thd = np.asarray(thd, float)
        thd = thd - MiJt @ np.linalg.solve(J @ MiJt, J @ thd)
        return th, thd

    # ------------------------------------------------------ joint mapping
    @staticmethod
    def from_joints(phi, phid=None):
        """kic's joint values (5,) (and rates) -> theta (4,) (and theta').

        The tip joint is redundant (b2 - b1); it is not used."""
        phi = np.asarray(phi, float)
        th = np.array([phi[0], phi[0] + phi[2], phi[1], phi[1] + phi[3]])
        if phid is None:
            return th
        phid = np.asarray(phid, float)
        return th, np.array([phid[0], phid[0] + phid[2], phid[1], phid[1] + phid[3]])

    @staticmethod
    def to_joints(theta):
        """theta (..., 4) -> kic's joint values (..., 5) (also for rates and
        accelerations: the map is linear)."""
        th = np.asarray(theta, float)
        a1, b1, a2, b2 = np.moveaxis(th, -1, 0)
        return np.stack([a1, a2, b1 - a1, b2 - a2, b2 - b1], axis=-1)

    # ------------------------------------------------------------ solve
    def simulate(self, t_eval, phi0, phid0=None, *, method="DOP853", rtol=1e-13, atol=1e-13,
                 stabilization="projection", project_every=0.01, baumgarte=(10.0, 10.0)):
        """Integrate the free motion (no actuator loads) from kic joint values.

        Parameters
        ----------
        t_eval : array_like (n,)
            Increasing output times (s), starting at the initial time.
        phi0, phid0 : array_like (5,)
            Initial joint values (rad) and rates (rad/s) in :data:`JOINTS`
            order (rates default to rest).  Projected onto the constraints.
        method : str
            ``scipy.integrate.solve_ivp`` method.
        stabilization : {"projection", "baumgarte", "none"}
            Projection onto the manifold every ``project_every`` s (restart),
            or Baumgarte terms ``(alpha, beta)`` (1/s) in the acceleration
            constraint, or neither.

        Returns
        -------
        FiveBarSolution
        """
        t_eval = np.asarray(t_eval, float)
        th0, thd0 = self.from_joints(phi0, np.zeros(5) if phid0 is None else phid0)
        th, thd = self.project(th0, thd0)
        ab = baumgarte if stabilization == "baumgarte" else (0.0, 0.0)
        if stabilization not in ("projection", "baumgarte", "none"):
            raise ValueError(f"unknown stabilization {stabilization!r}")

        def rhs(t, y):
            acc, _ = self.accelerations(y[:4], y[4:], *ab)
            return np.concatenate([y[4:], acc])

        def singular(t, y):
            return np.sin(y[3] - y[1])

        t0, t1 = t_eval[0], t_eval[-1]
        step = project_every if stabilization == "projection" else (t1 - t0)
        edges = np.append(np.arange(t0, t1, step), t1)
        edges = edges[np.concatenate([[True], np.diff(edges) > 1e-12 * max(step, 1.0)])]
        edges[-1] = t1
        Y = np.zeros((t_eval.size, 8))
        Y[0] = np.concatenate([th, thd])
        crossings, nfev = [], 0
        y = Y[0].copy()
        for ta, tb in zip(edges[:-1], edges[1:]):
            sel = (t_eval > ta) & (t_eval <= tb)
            if tb == t1:
                sel |= t_eval == t1
            t_out = t_eval[sel]
            extra = not (t_out.size and t_out[-1] == tb)
            if extra:                               # the interval's end state is needed
                t_out = np.append(t_out, tb)
            sol = solve_ivp(rhs, (ta, tb), y, method=method, rtol=rtol, atol=atol,
                            t_eval=t_out, events=singular)
            if sol.status < 0:
                raise RuntimeError(f"five-bar oracle: {sol.message}")
            nfev += sol.nfev
            crossings += [float(t) for t in sol.t_events[0]]
            Y[sel] = sol.y[:, :-1].T if extra else sol.y.T
            y = sol.y[:, -1]
            if stabilization == "projection":
                y = np.concatenate(self.project(y[:4], y[4:]))
        theta, thetad = Y[:, :4], Y[:, 4:]
        return FiveBarSolution(
            t=t_eval, theta=theta, thetad=thetad, phi=self.to_joints(theta),
            phid=self.to_joints(thetad),
            energy=np.array([self.energy(a, b) for a, b in zip(theta, thetad)]),
            residual=np.array([np.linalg.norm(self.constraint(a)) for a in theta]),
            crossings=crossings, nfev=nfev)


def assemble_five_bar(q, params: dict | None = None, branch: str = "up") -> np.ndarray:
    """kic's joint values (5,) at crank angles q = (crank1, crank2) (rad), by
    circle intersection; "up": C to the left of the directed line A1 -> A2."""
    p = _merge(params)
    a1, a2 = q
    A1 = p["crank1"] * _e(a1)
    A2 = np.array([p["base"], 0.0]) + p["crank2"] * _e(a2)
    r1, r2 = p["coupler1"], p["coupler2"]
    d_vec = A2 - A1
    d = float(np.hypot(*d_vec))
    a = (r1 * r1 - r2 * r2 + d * d) / (2 * d)
    h2 = r1 * r1 - a * a
    if h2 < 0:
        raise ValueError(f"five-bar cannot be assembled at q = {q}")
    u = d_vec / d
    n = np.array([-u[1], u[0]]) * (1.0 if branch == "up" else -1.0)
    C = A1 + a * u + np.sqrt(h2) * n
    b1 = np.arctan2(*(C - A1)[::-1])
    b2 = np.arctan2(*(C - A2)[::-1])
    wrap = lambda x: np.pi - np.mod(np.pi - x, 2 * np.pi)      # noqa: E731
    return np.array([a1, a2, wrap(b1 - a1), wrap(b2 - a2), wrap(b2 - b1)])


def simulate_five_bar(t_eval, theta0, thetad0=None, params: dict | None = None,
                      **options) -> np.ndarray:
    """Angles of all 5 joints (n, 5) (rad), kic's names and signs
    (:data:`JOINTS`), of the free motion from joint values ``theta0`` (5,) and
    rates ``thetad0`` (5,); ``options`` go to :meth:`FiveBarDAE.simulate`."""
    return FiveBarDAE(params).simulate(t_eval, theta0, thetad0, **options).phi


# ------------------------------------------------------ parallelogram four-bar
def parallelogram_closure_jacobian(crank_angle, ground=0.3, crank=0.1,
                                   branch: str = "parallelogram") -> np.ndarray:
    """Planar closure Jacobian (..., 3, 4) of a parallelogram four-bar
    (coupler = ground, rocker = crank) in its four relative joint angles
    (O2, A, B, O4), made dimensionless by L = ground: column j is
    ``(1, y_j / L, -x_j / L)`` at the joint position (x_j, y_j).

    ``branch``: "parallelogram" (coupler parallel to the ground) or
    "antiparallelogram" (crossed); they meet at crank angles 0 and pi.
    """
    th = np.asarray(crank_angle, float)
    d, a = float(ground), float(crank)
    A = a * np.stack([np.cos(th), np.sin(th)], -1)
    O4 = np.broadcast_to([d, 0.0], A.shape)
    if branch == "parallelogram":
        B = A + O4
    elif branch == "antiparallelogram":
        # B on the circle of radius a about O4 and of radius d about A, the other
        # intersection: reflection of the parallelogram's B across the line A-O4
        Bp = A + O4
        u = (O4 - A) / np.linalg.norm(O4 - A, axis=-1, keepdims=True)
        w = Bp - A
        B = A + 2 * np.sum(w * u, -1, keepdims=True) * u - w
    else:
        raise ValueError(f"unknown branch {branch!r}")
    P = np.stack([np.zeros_like(A), A, B, O4], axis=-2) / d          # (..., 4, 2)
    return np.stack([np.ones(P.shape[:-1]), P[..., 1], -P[..., 0]], axis=-2)


def parallelogram_closure_rank(crank_angle, ground=0.3, crank=0.1,
                               branch: str = "parallelogram", rtol: float = 1e-9):
    """Rank of :func:`parallelogram_closure_jacobian` (...) and its singular
    values (..., 3): 3 away from the change point, 2 at crank angles 0, pi
    (all joints collinear).  ``rtol``: singular values below ``rtol * s_max``
    count as zero."""
    s = np.linalg.svd(parallelogram_closure_jacobian(crank_angle, ground, crank, branch),
                      compute_uv=False)
    return np.sum(s > rtol * s[..., :1], axis=-1), s


# ---------------------------------------------------------------------------
# The symmetric five-bar through its flat configuration
# ---------------------------------------------------------------------------
def _sinc(x):
    """sin(x)/x, analytic (also for the complex steps below)."""
    x = np.asarray(x)
    small = np.abs(x) < 1e-4
    xs = np.where(small, 1.0, x)
    return np.where(small, 1.0 - x * x / 6.0 + x ** 4 / 120.0, np.sin(xs) / xs)


class SymmetricFiveBar:
    """The free motion of a *symmetric* five-bar (equal cranks l, equal couplers
    k, base = 2 (k - l)) from a symmetric start: one degree of freedom, through
    the flat configuration where all five joints lie on the x axis.

    By symmetry a2 = -u, b2 = pi - v when a1 = pi + u, b1 = v (the tip on the
    axis x = base / 2), and the one closure row left,
    ``l (1 - cos u) = k (1 - cos v)``, has at u = v = 0 a double point: two
    smooth branches u = +-v w(v) cross there, w(0) = sqrt(k / l).  A motion
    arriving along one branch continues along it (a turn onto the other would
    need an impulse).  Writing ``u = v w(v)`` with
    ``w = sqrt(k / l) sinc(v / 2) / sinc(v w / 2)`` (a fixed point, solved by
    iteration) makes the branch a smooth curve theta(v); the coupler angle v is
    the coordinate, and the equation of motion is the projection of the arms'
    dynamics on the branch's tangent,

        theta_v . (M (theta_v v'' + theta_vv v'^2) + h) = 0,

    with M and h those of :class:`FiveBarDAE` (no closure forces: they do no
    work along the branch).  theta_vv by a complex step of the closed-form
    theta_v.  Nothing here assumes the crossing is regular: the reduced
    equation is smooth through it.
    """

    def __init__(self, params: dict | None = None) -> None:
        self.arms = FiveBarDAE(params)
        p = self.arms.p
        l, k = p["crank1"], p["coupler1"]
        if not (p["crank2"] == l and p["coupler2"] == k and p["m_crank1"] == p["m_crank2"]
                and abs(p["base"] - 2 * (k - l)) < 1e-12 * k):
            raise ValueError("the symmetric reduction needs equal arms and base = 2 (k - l)")
        self.l, self.k = l, k
        self.sign = 1.0

    def _w(self, v):
        l, k = self.l, self.k
        w = self.sign * np.sqrt(k / l) + 0 * v
        for _ in range(60):
            w_new = self.sign * np.sqrt(k / l) * _sinc(v / 2) / _sinc(v * w / 2)
            if np.all(np.abs(w_new - w) < 1e-16):
                return w_new
            w = w_new
        return w

    def _u_v(self, v):
        """du/dv by implicit differentiation of l (1 - cos u) = k (1 - cos v)."""
        w = self._w(v)
        return (self.k / (self.l * w)) * _sinc(v) / _sinc(v * w)

    def theta(self, v):
        u = v * self._w(v)
        return np.array([np.pi + u, v, -u, np.pi - v])

    def theta_v(self, v):
        uv = self._u_v(v)
        return np.array([uv, 1.0 + 0 * uv, -uv, -1.0 + 0 * uv])

    def theta_vv(self, v, h=1e-30):
        return np.imag(self.theta_v(v + 1j * h)) / h

    def start(self, phi0) -> float:
        """v (rad) of kic joint values phi0 on the branch (sets the branch sign)."""
        th = FiveBarDAE.from_joints(phi0)
        u = np.angle(np.exp(1j * (th[0] - np.pi)))
        v = np.angle(np.exp(1j * th[1]))
        self.sign = np.sign(u / v)
        if np.max(np.abs(self.theta(v) - np.array([th[0], th[1], th[2], th[3]])
                         - np.round((self.theta(v) - th) / (2 * np.pi)) * 2 * np.pi)) > 1e-9:
            raise ValueError("phi0 is not a symmetric configuration of this five-bar")
        return float(v)

    def simulate(self, t_eval, phi0, rtol=1e-13, atol=1e-14) -> FiveBarSolution:
        """The motion from rest at phi0 (kic joint values), as FiveBarSolution."""
        t_eval = np.asarray(t_eval, float)
        v0 = self.start(phi0)

        def rhs(t, y):
            v, vd = y
            tv, tvv = self.theta_v(v), self.theta_vv(v)
            th = self.theta(v)
            M = self.arms.mass(th)
            h = self.arms.bias(th, tv * vd)
            vdd = -tv @ (M @ tvv * vd * vd + h) / (tv @ M @ tv)
            return [vd, vdd]

        sol = solve_ivp(rhs, (t_eval[0], t_eval[-1]), [v0, 0.0], method="DOP853", rtol=rtol,
                        atol=atol, t_eval=t_eval)
        if sol.status < 0:
            raise RuntimeError(f"symmetric five-bar oracle: {sol.message}")
        theta = np.array([self.theta(v) for v in sol.y[0]])
        thetad = np.array([self.theta_v(v) * vd for v, vd in sol.y.T])
        return FiveBarSolution(
            t=t_eval, theta=theta, thetad=thetad, phi=FiveBarDAE.to_joints(theta),
            phid=FiveBarDAE.to_joints(thetad),
            energy=np.array([self.arms.energy(a, b) for a, b in zip(theta, thetad)]),
            residual=np.array([np.linalg.norm(self.arms.constraint(a)) for a in theta]),
            crossings=[], nfev=sol.nfev)
