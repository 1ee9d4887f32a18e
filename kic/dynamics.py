"""The dynamic model: effective inertia I*, inertia power P*, loads, energies.

Freeman's model of any rigid-link system in generalized coordinates q
(seed eq. 2-145)::

    T = I* q'' + q'^T P* q' + T_L

* ``I*`` (M x M, kg m^2 / kg / kg m): effective inertia, symmetric positive
  definite; kinetic energy ``q'^T I* q' / 2`` (eq. 2-139, 2-140).
* ``P*`` (M x M x M, load index first): inertia power,
  ``(q'^T P* q')_n = sum_ml q'_m P*[n, m, l] q'_l`` (eq. 2-141).  Only the part
  symmetric in its last two indices is unique; it equals the Christoffel
  symbols of the first kind of I*.
* ``T_L`` (M): the input load that balances the applied loads,
  ``-sum G^T T_applied`` (eq. 2-125, 2-147); for gravity ``+dV/dq``.

For a serial chain (eq. 2-196, 2-197), link j with mass m_j, centroid c_j and
world inertia I_j about it::

    I* = sum_j m_j G_c^T G_c + G_rot^T I_j G_rot
    P* = sum_j m_j (G_c^T o H_c) + (G_rot^T I_j) o H_rot + G_rot^T I_j ([G_rot]^T x [G_rot])

The kernels below evaluate exactly these sums, re-associated into running
(composite) sums over the links so that no H tensor is formed; the literal
formulas are the reference in the tests.
"""
from __future__ import annotations

import numpy as np

from ._array import as_batch, cross, from_batch, match_batch, spd_solve
from .errors import ModelError
from .kinematics import _Pose

__all__ = ["DynamicModel"]

_CHUNK = 1024          # configurations per block in the O(M^3) P* kernel


def _suffix(x: np.ndarray, axis: int) -> np.ndarray:
    """Running sum from the last link down (sum over j >= k)."""
    return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)


def _matvec(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(3, 3, ...) @ (3, ...) with broadcasting over the trailing axes."""
    return (A * v[None]).sum(axis=1)


class _LinkState:
    """Centroids, world inertias and composite sums of a chain at a pose."""

    def __init__(self, chain, pose: _Pose) -> None:
        R = pose.R                                               # (3,3,M,N)
        self.c = (R * chain._com.T[None, :, :, None]).sum(axis=1) + pose.p
        Il = chain._inertia.transpose(1, 2, 0)[..., None]        # (3,3,M,1)
        RI = (R[:, :, None] * Il[None]).sum(axis=1)              # R I_local
        self.I = (RI[:, None] * R[None]).sum(axis=2)             # R I_local R^T
        m = chain.masses
        self.m = m
        self.S0 = _suffix(m, 0)                                   # (M,)
        self.mc = m[None, :, None] * self.c
        self.S1 = _suffix(self.mc, 1)                             # (3,M,N)


# --------------------------------------------------------------------------
# kernels (batch last)
# --------------------------------------------------------------------------
def _inverse_dynamics(chain, pose: _Pose, qdT, qddT, gravity=True) -> np.ndarray:
    """Recursive inverse dynamics in world-frame screw coordinates, (M, N).

    Link velocities and accelerations are prefix sums of the joint screws;
    the joint loads are suffix sums of the link wrenches (O(links x M)).
    """
    sR, sv = pose.sR, pose.sv
    w = np.cumsum(sR * qdT, axis=1)
    v = np.cumsum(sv * qdT, axis=1)
    aw = np.cumsum(sR * qddT + cross(w, sR) * qdT, axis=1)
    av = np.cumsum(sv * qddT + (cross(w, sv) + cross(v, sR)) * qdT, axis=1)
    if gravity:
        av = av - chain.gravity[:, None, None]
    R = pose.R
    c = (R * chain._com.T[None, :, :, None]).sum(axis=1) + pose.p
    ac = av + cross(aw, c) + cross(w, v + cross(w, c))
    F = chain.masses[None, :, None] * ac
    # Euler's equation in link axes (constant inertia), rotated back
    wl = (R * w[:, None]).sum(axis=0)
    al = (R * aw[:, None]).sum(axis=0)
    Il = chain._inertia.transpose(1, 2, 0)[..., None]
    Nl = (Il * al[None]).sum(axis=1) + cross(wl, (Il * wl[None]).sum(axis=1))
    n0 = cross(c, F) + (R * Nl[None]).sum(axis=1)
    f_s = _suffix(F, 1)
    n_s = _suffix(n0, 1)
    return (sR * n_s + sv * f_s).sum(axis=0)


def _gravity_load(chain, pose: _Pose, state: _LinkState | None = None) -> np.ndarray:
    """+dV/dq = -sum G_c^T m g, by suffix sums of mass and first moment."""
    if state is None:
        R = pose.R
        c = (R * chain._com.T[None, :, :, None]).sum(axis=1) + pose.p
        S1 = _suffix(chain.masses[None, :, None] * c, 1)
    else:
        S1 = state.S1
    g = chain.gravity[:, None, None]
    S0 = _suffix(chain.masses, 0)[None, :, None]
    return -(pose.sR * cross(S1, g) + pose.sv * (S0 * g)).sum(axis=0)


def _potential(chain, state: _LinkState) -> np.ndarray:
    return -(chain.gravity[:, None, None] * state.mc).sum(axis=(0, 1))


def _inertia(pose: _Pose, state: _LinkState) -> np.ndarray:
    """I* (M, M, N) from composite spatial inertias about the world origin."""
    sR, sv = pose.sR, pose.sv
    c, m = state.c, state.m
    M = sR.shape[1]
    # rotational inertia of each link about the world origin: I + m(|c|^2 1 - c c^T)
    cc = c[:, None] * c[None]
    Jo = state.I - m[None, None, :, None] * cc
    Jo[0, 0] += m[:, None] * (c * c).sum(0)
    Jo[1, 1] += m[:, None] * (c * c).sum(0)
    Jo[2, 2] += m[:, None] * (c * c).sum(0)
    Jc = _suffix(Jo, 2)
    S0, S1 = state.S0[None, :, None], state.S1
    f = S0 * sv - cross(S1, sR)                 # composite momentum of each screw
    n = _matvec(Jc, sR) + cross(S1, sv)
    X = (sR[:, :, None] * n[:, None]).sum(0) + (sv[:, :, None] * f[:, None]).sum(0)
    lo, hi = np.minimum(*np.indices((M, M))), np.maximum(*np.indices((M, M)))
    return X[lo, hi]


def _power(pose: _Pose, state: _LinkState) -> np.ndarray:
    """P* (M, M, M, N), Freeman's eq. 2-197 re-associated into composite sums.

    With A_n = s^R_n, t_n the moment part of screw n, K the largest index:
    translational  A_min(a,b) . Z[max(a,b), n],
    rotational     [a<b] (A_a x A_b) . J_K A_n  +  (A_n x A_b) . J_K A_a,
    where Z collects the link mass moments (see the derivation in docs/theory.md).
    """
    N = pose.N
    out = np.empty(pose.sR.shape[1:2] * 3 + (N,))
    for lo in range(0, N, _CHUNK):
        sl = slice(lo, min(lo + _CHUNK, N))
        out[..., sl] = _power_block(pose.sR[..., sl], pose.sv[..., sl], state.m,
                                    state.c[..., sl], state.I[..., sl])
    return out


def _power_block(A, t, m, c, I) -> np.ndarray:
    M = A.shape[1]
    S0 = _suffix(m, 0)                                       # (M,)
    S1 = _suffix(m[None, :, None] * c, 1)                    # (3,M,N)
    S2 = _suffix(m[None, None, :, None] * (c[:, None] * c[None]), 2)   # (3,3,M,N)
    J = _suffix(I, 2)                                        # (3,3,M,N)
    k, n = np.indices((M, M))
    K = np.maximum(k, n)
    # Z[k, n] = sum_{j >= K} m_j (G_c[k] x G_c[n]) with G_c[x] = A_x x c + t_x
    Ak, An, tk, tn = A[:, k], A[:, n], t[:, k], t[:, n]
    S1K = S1[:, K]
    Z = (_matvec(S2[:, :, K], cross(Ak, An))
         + S1K * (Ak * tn).sum(0) - Ak * (S1K * tn).sum(0)
         + An * (tk * S1K).sum(0) - S1K * (tk * An).sum(0)
         + S0[K][None, ..., None] * cross(tk, tn))
    # JA[:, x, K] = J_K A_x
    JA = (J[:, :, None] * A[None, :, :, None]).sum(axis=1)   # (3, M_x, M_K, N)
    nn, aa, bb = np.indices((M, M, M))
    lo_ab, hi_ab = np.minimum(aa, bb), np.maximum(aa, bb)
    term1 = (A[:, lo_ab] * Z[:, hi_ab, nn]).sum(0)
    C = cross(A[:, :, None], A[:, None, :])                  # C[:, x, y] = A_x x A_y
    upper = (aa < bb)[..., None]
    term2 = (C[:, aa, bb] * JA[:, nn, np.maximum(nn, bb)]).sum(0) * upper
    term3 = (C[:, nn, bb] * JA[:, aa, np.maximum(np.maximum(nn, aa), bb)]).sum(0)
    return term1 + term2 + term3


# --------------------------------------------------------------------------
# the per-configuration model
# --------------------------------------------------------------------------
class DynamicModel:
    """Freeman's dynamic model of a system at a batch of configurations.

    Attributes are computed on first access and cached.  Arrays carry the
    leading batch axes of ``q``.

    Attributes
    ----------
    q : ndarray, shape (..., M)
    I_star : ndarray, shape (..., M, M)
        Effective inertia ``I*`` (eq. 2-139, 2-196).
    P_star : ndarray, shape (..., M, M, M)
        Inertia power ``P*``, load index first (eq. 2-141, 2-197).
    gravity_load : ndarray, shape (..., M)
        Input loads that hold the system against gravity, ``+dV/dq``.
    potential_energy : ndarray, shape (...)
        Gravitational potential energy (J).

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> arm = mechanisms.planar_two_link()
    >>> dyn = arm.dynamics([0.4, 1.1])
    >>> dyn.I_star.shape, dyn.P_star.shape
    ((2, 2), (2, 2, 2))
    >>> qd, qdd = np.array([0.7, -0.5]), np.array([0.1, 0.2])
    >>> np.allclose(dyn.torque(qd, qdd), arm.inverse_dynamics([0.4, 1.1], qd, qdd))
    True
    """

    def __init__(self, q: np.ndarray, batch: tuple) -> None:
        self.q = q
        self._batch = batch
        self._cache: dict = {}

    @property
    def dof(self) -> int:
        return self.q.shape[-1]

    def _cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    # subclasses provide these (batch last)
    def _I(self) -> np.ndarray:            # (M, M, N)
        raise NotImplementedError

    def _P(self) -> np.ndarray:            # (M, M, M, N)
        raise NotImplementedError

    def _gravity(self) -> np.ndarray:      # (M, N)
        raise NotImplementedError

    def _potential(self) -> np.ndarray:    # (N,)
        raise NotImplementedError

    def _applied(self, loads, qdT) -> np.ndarray:  # (M, N)
        raise NotImplementedError

    @property
    def I_star(self) -> np.ndarray:
        return self._cached("I", lambda: from_batch(self._I(), self._batch, 2))

    @property
    def P_star(self) -> np.ndarray:
        return self._cached("P", lambda: from_batch(self._P(), self._batch, 3))

    @property
    def gravity_load(self) -> np.ndarray:
        return self._cached("g", lambda: from_batch(self._gravity(), self._batch, 1))

    @property
    def potential_energy(self) -> np.ndarray:
        return self._cached("V", lambda: self._potential().reshape(self._batch))

    def _rates(self, x, name) -> np.ndarray:
        return match_batch(x, self.dof, self._batch, name).T.reshape(self._batch + (self.dof,))

    def kinetic_energy(self, qd) -> np.ndarray:
        """``q'^T I* q' / 2`` (J), shape (...)."""
        qd = self._rates(qd, "qd")
        return 0.5 * np.einsum("...m,...mn,...n->...", qd, self.I_star, qd)

    def velocity_term(self, qd) -> np.ndarray:
        """``q'^T P* q'`` (centrifugal and Coriolis loads), shape (..., M)."""
        qd = self._rates(qd, "qd")
        return np.einsum("...nml,...m,...l->...n", self.P_star, qd, qd)

    def load(self, loads, qd=None) -> np.ndarray:
        """``T_L`` of applied ``loads`` (:class:`kic.Loads`), shape (..., M).

        Gravity is not included (see :attr:`gravity_load`).
        """
        if loads is None:
            return np.zeros(self._batch + (self.dof,))
        qdT = None if qd is None else match_batch(qd, self.dof, self._batch, "qd")
        return from_batch(self._applied(loads, qdT), self._batch, 1)

    def torque(self, qd, qdd, loads=None) -> np.ndarray:
        """Required input loads ``I* q'' + q'^T P* q' + T_L`` incl. gravity (..., M)."""
        qdd = self._rates(qdd, "qdd")
        return (np.einsum("...mn,...n->...m", self.I_star, qdd) + self.velocity_term(qd)
                + self.gravity_load + self.load(loads, qd))

    def acceleration(self, qd, tau, loads=None) -> np.ndarray:
        """Forward dynamics ``I*^-1 (T - q'^T P* q' - T_L)`` (eq. 2-146), (..., M)."""
        tau = self._rates(tau, "tau")
        rhs = tau - self.velocity_term(qd) - self.gravity_load - self.load(loads, qd)
        return spd_solve(self.I_star, rhs, "effective inertia I*")


class ChainDynamics(DynamicModel):
    """:class:`DynamicModel` of a :class:`kic.SerialChain` (see its docs)."""

    def __init__(self, chain, q) -> None:
        qT, batch = as_batch(q, chain.dof)
        super().__init__(from_batch(qT, batch, 1), batch)
        self.chain = chain
        self._qT = qT
        self._pose = _Pose(chain, qT)
        self._state = _LinkState(chain, self._pose)

    def _I(self):
        return _inertia(self._pose, self._state)

    def _P(self):
        return _power(self._pose, self._state)

    def _gravity(self):
        return _gravity_load(self.chain, self._pose, self._state)

    def _potential(self):
        return _potential(self.chain, self._state)

    def _applied(self, loads, qdT):
        return loads._chain_load(self.chain, self._pose, self._qT, qdT, self._batch)

    def loads_energy(self, loads) -> np.ndarray:
        """Potential energy of conservative applied loads (springs, forces), (...)."""
        return loads._chain_energy(self.chain, self._pose, self._qT, self._batch) \
            .reshape(self._batch)


# --------------------------------------------------------------------------
# SerialChain entry points
# --------------------------------------------------------------------------
def chain_dynamics(chain, q) -> ChainDynamics:
    return ChainDynamics(chain, q)


def chain_inverse_dynamics(chain, q, qd, qdd, loads=None) -> np.ndarray:
    qT, batch = as_batch(q, chain.dof)
    qdT = match_batch(qd, chain.dof, batch, "qd")
    qddT = match_batch(qdd, chain.dof, batch, "qdd")
    pose = _Pose(chain, qT)
    tau = _inverse_dynamics(chain, pose, qdT, qddT)
    if loads:
        tau = tau + loads._chain_load(chain, pose, qT, qdT, batch)
    return from_batch(tau, batch, 1)


def chain_forward_dynamics(chain, q, qd, tau, loads=None) -> np.ndarray:
    qT, batch = as_batch(q, chain.dof)
    qdT = match_batch(qd, chain.dof, batch, "qd")
    tauT = match_batch(tau, chain.dof, batch, "tau")
    pose = _Pose(chain, qT)
    bias = _inverse_dynamics(chain, pose, qdT, np.zeros_like(qdT))
    if loads:
        bias = bias + loads._chain_load(chain, pose, qT, qdT, batch)
    I = _inertia(pose, _LinkState(chain, pose))
    qdd = spd_solve(np.moveaxis(I, -1, 0), (tauT - bias).T, "effective inertia I*")
    return qdd.reshape(batch + (chain.dof,))


def chain_gravity_load(chain, q) -> np.ndarray:
    qT, batch = as_batch(q, chain.dof)
    return from_batch(_gravity_load(chain, _Pose(chain, qT)), batch, 1)


def chain_kinetic_energy(chain, q, qd) -> np.ndarray:
    return ChainDynamics(chain, q).kinetic_energy(qd)


def chain_potential_energy(chain, q) -> np.ndarray:
    return ChainDynamics(chain, q).potential_energy


def _require_mass(chain) -> None:
    if chain.total_mass <= 0:
        raise ModelError(f"chain {chain.name or ''} has zero total mass: no dynamics")
