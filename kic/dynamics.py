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

import math

import numpy as np

from ._array import as_batch, blocks, cross, from_batch, match_batch, spd_solve, suffix_sum
from . import _compiled, _scalar
from .backend import compiled_data
from .errors import ModelError, located
from .kinematics import _Pose, link_motion, point_acceleration

__all__ = ["DynamicModel"]

def _matvec(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(3, 3, ...) @ (3, ...) with broadcasting over the trailing axes."""
    return (A * v[None]).sum(axis=1)


class _LinkState:
    """Centroids, world inertias and composite sums of a chain at a pose."""

    def __init__(self, chain, pose: _Pose) -> None:
        R = pose.R                                               # (3,3,M,N)
        self.c = np.einsum("ijmn,jm->imn", R, chain._com.T) + pose.p
        RI = np.einsum("ikmn,mkl->ilmn", R, chain._inertia)      # R I_local
        self.I = np.einsum("ilmn,jlmn->ijmn", RI, R)             # R I_local R^T
        m = chain.masses
        self.m = m
        self.S0 = suffix_sum(m, 0)                                   # (M,)
        self.mc = m[None, :, None] * self.c
        self.S1 = suffix_sum(self.mc, 1)                             # (3,M,N)


# --------------------------------------------------------------------------
# kernels (batch last)
# --------------------------------------------------------------------------
def _inverse_dynamics(chain, pose: _Pose, qdT, qddT, gravity=True, motion=None) -> np.ndarray:
    """Recursive inverse dynamics in world-frame screw coordinates, (M, N).

    Link velocities and accelerations are prefix sums of the joint screws;
    the joint loads are suffix sums of the link wrenches (O(links x M)).
    ``motion`` may give the velocity part already computed, ``link_motion(pose,
    qdT)`` (w, v and the velocity-product accelerations); the q'' terms are added.
    """
    sR, sv = pose.sR, pose.sv
    kc = compiled_data(chain)
    if kc is not None:
        if motion is None:
            motion = link_motion(pose, qdT)
        return _compiled.loads_from_motion(kc, pose.Fc, sR, sv, motion, qddT, gravity)
    if motion is None:
        w, v, aw, av = link_motion(pose, qdT, qddT, chain.gravity if gravity else None)
    else:
        from ._array import prefix_sum
        w, v, aw, av = motion
        dv = sv * qddT
        if gravity:
            dv[:, 0] -= chain.gravity[:, None]
        aw = aw + prefix_sum(sR * qddT)
        av = av + prefix_sum(dv)
    R = pose.R
    c = np.einsum("ijmn,jm->imn", R, chain._com.T)
    c += pose.p
    F = point_acceleration(w, v, aw, av, c)
    F *= chain.masses[None, :, None]
    # Euler's equation in link axes (constant inertia, one BLAS product per link),
    # rotated back; link-axis vectors are laid out (M, 3, N)
    wl = np.einsum("ijmn,imn->mjn", R, w)
    al = np.einsum("ijmn,imn->mjn", R, aw)
    Il = chain._inertia
    Nl = cross(wl, np.matmul(Il, wl), axis=1)
    Nl += np.matmul(Il, al)
    n0 = np.einsum("ijmn,mjn->imn", R, Nl)
    n0 += cross(c, F)
    f_s = suffix_sum(F)
    n_s = suffix_sum(n0)
    return np.einsum("imn,imn->mn", sR, n_s) + np.einsum("imn,imn->mn", sv, f_s)


def _gravity_load(chain, pose: _Pose, state: _LinkState | None = None) -> np.ndarray:
    """+dV/dq = -sum G_c^T m g, by suffix sums of mass and first moment."""
    if state is None:
        R = pose.R
        c = (R * chain._com.T[None, :, :, None]).sum(axis=1) + pose.p
        S1 = suffix_sum(chain.masses[None, :, None] * c, 1)
    else:
        S1 = state.S1
    g = chain.gravity[:, None, None]
    S0 = suffix_sum(chain.masses, 0)[None, :, None]
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
    Jc = suffix_sum(Jo, 2)
    S0, S1 = state.S0[None, :, None], state.S1
    f = S0 * sv - cross(S1, sR)                 # composite momentum of each screw
    n = _matvec(Jc, sR) + cross(S1, sv)
    X = np.einsum("imn,ikn->mkn", sR, n) + np.einsum("imn,ikn->mkn", sv, f)
    lo, hi = np.minimum(*np.indices((M, M))), np.maximum(*np.indices((M, M)))
    return X[lo, hi]


def _power(pose: _Pose, state: _LinkState) -> np.ndarray:
    """P* (M, M, M, N), Freeman's eq. 2-197 re-associated into composite sums.

    With A_n = s^R_n, t_n the moment part of screw n and K the largest index:
    translational  A_min(a,b) . Z[max(a,b), n],
    rotational     [a<b] (A_a x A_b) . J_K A_n  +  (A_n x A_b) . J_K A_a,
    where Z[k, n] = sum_{j>=max(k,n)} m_j G_c[k] x G_c[n] is expanded in the
    composite mass moments (see docs/theory.md).
    """
    return _power_block(pose.sR, pose.sv, state.m, state.c, state.I)


def _power_block(A, t, m, c, I) -> np.ndarray:
    M, N = A.shape[1:]
    S0 = suffix_sum(m, 0)                                    # (M,)
    S1 = suffix_sum(m[None, :, None] * c)                    # (3,M,N)
    S2 = suffix_sum(m[None, None, :, None] * (c[:, None] * c[None]), 2)   # (3,3,M,N)
    J = suffix_sum(I, 2)                                     # (3,3,M,N)
    k, n = np.indices((M, M))
    K = np.maximum(k, n)
    # Z[k, n] = sum_{j >= K} m_j (G_c[k] x G_c[n]) with G_c[x] = A_x x c + t_x
    Ak, An, tk, tn = A[:, :, None], A[:, None, :], t[:, :, None], t[:, None, :]
    S1K = S1[:, K]
    Z = (np.einsum("ijqrN,jqrN->iqrN", S2[:, :, K], cross(Ak, An))
         + S1K * np.einsum("iqN,irN->qrN", A, t) - Ak * np.einsum("iqrN,irN->qrN", S1K, t)
         + An * np.einsum("iqN,iqrN->qrN", t, S1K) - S1K * np.einsum("iqN,irN->qrN", t, A)
         + S0[K][None, ..., None] * cross(tk, tn))
    JA = np.einsum("ijKN,jxN->ixKN", J, A)                   # JA[:, x, K] = J_K A_x
    C = cross(Ak, An)                                        # C[:, x, y] = A_x x A_y
    # translational: A_min(a,b) . Z[max(a,b), n]
    T1 = np.einsum("piN,pknN->iknN", A, Z)
    lo, hi = np.minimum(k, n), np.maximum(k, n)
    out = T1[lo, hi].transpose(2, 0, 1, 3).copy()           # [n, a, b]
    # rotational, from H_rot: [a < b] (A_a x A_b) . J_max(n,b) A_n
    W = JA[:, k, K]                                          # W[:, n, b] = J_max(n,b) A_n
    out += np.einsum("pabN,pnbN->nabN", C * (k < n)[None, ..., None], W)
    # rotational, gyroscopic: (A_n x A_b) . J_max(n,a,b) A_a, grouped by L = max(n, b)
    ar = np.arange(M)
    for L in range(M):
        nL, bL = np.nonzero(K == L)
        V = JA[:, ar, np.maximum(ar, L)]                     # V[:, a] = J_max(a,L) A_a
        out[nL, :, bL] += np.einsum("pqN,paN->qaN", C[:, nL, bL], V)
    return out


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
        _require_mass(chain)
        self.chain = chain
        self._qT = qT
        self._parts: list | None = None

    def _blocks(self):
        """Per block of configurations: (slice, pose, link state).

        One block is kept; several are rebuilt on each use (a pose costs a
        fraction of any result, and short-lived blocks reuse the same memory,
        which is faster than keeping every block alive)."""
        if self._parts is not None:
            yield from self._parts
            return
        parts = blocks(self._qT.shape[1])
        for sl in parts:
            pose = _Pose(self.chain, self._qT[:, sl])
            item = (sl, pose, _LinkState(self.chain, pose))
            if len(parts) == 1:
                self._parts = [item]
            yield item

    def _assemble(self, shape, fn) -> np.ndarray:
        out = np.empty(shape + (self._qT.shape[1],))
        for sl, pose, state in self._blocks():
            out[..., sl] = fn(sl, pose, state)
        return out

    def _I(self):
        M = self.dof
        kc = compiled_data(self.chain)
        if kc is not None:
            return _compiled.inertia(kc, self._qT.T).transpose(1, 2, 0)
        if self._qT.shape[1] == 1:          # lean single-configuration path
            return np.array(_scalar.inertia(self.chain._scalar, self._qT[:, 0].tolist()))[..., None]
        return self._assemble((M, M), lambda sl, pose, st: _inertia(pose, st))

    def _P(self):
        M = self.dof
        kc = compiled_data(self.chain)
        if kc is not None:                  # I* comes with P* at little extra cost
            I, P = _compiled.inertia_power(kc, self._qT.T, "I" not in self._cache)
            if I is not None:
                self._cache["I"] = I.reshape(self._batch + (M, M))
            return P.transpose(1, 2, 3, 0)
        return self._assemble((M, M, M), lambda sl, pose, st: _power(pose, st))

    def _gravity(self):
        kc = compiled_data(self.chain)
        if kc is not None:
            return _compiled.gravity_load(kc, self._qT.T).T
        if self._qT.shape[1] == 1:
            zero = [0.0] * self.dof
            return np.array(_scalar.inverse_dynamics(self.chain._scalar, self._qT[:, 0].tolist(),
                                                     zero, zero))[:, None]
        return self._assemble((self.dof,),
                              lambda sl, pose, st: _gravity_load(self.chain, pose, st))

    def _potential(self):
        return self._assemble((), lambda sl, pose, st: _potential(self.chain, st))

    def _applied(self, loads, qdT):
        bound = loads.resolve(self.chain, self._batch)
        return self._assemble((self.dof,), lambda sl, pose, st: bound.load(
            pose, self._qT[:, sl], None if qdT is None else qdT[:, sl], sl))

    def loads_energy(self, loads) -> np.ndarray:
        """Potential energy of conservative applied loads (springs, forces), (...)."""
        bound = loads.resolve(self.chain, self._batch)
        return self._assemble((), lambda sl, pose, st: bound.energy(
            pose, self._qT[:, sl], sl)).reshape(self._batch)


# --------------------------------------------------------------------------
# SerialChain entry points
# --------------------------------------------------------------------------
def chain_dynamics(chain, q) -> ChainDynamics:
    return ChainDynamics(chain, q)


def _bias(chain, qT, qdT, qddT, loads, batch, with_inertia=False):
    """Inverse dynamics by blocks; optionally also I* (for forward dynamics)."""
    M, N = qT.shape
    tau = np.empty((M, N))
    I = np.empty((M, M, N)) if with_inertia else None
    bound = loads.resolve(chain, batch) if loads else None
    for sl in blocks(N):
        q_, qd_ = qT[:, sl], qdT[:, sl]
        pose = _Pose(chain, q_)
        tau[:, sl] = _inverse_dynamics(chain, pose, qd_,
                                       np.zeros_like(qd_) if qddT is None else qddT[:, sl])
        if bound is not None:
            tau[:, sl] += bound.load(pose, q_, qd_, sl)
        if with_inertia:
            I[..., sl] = _inertia(pose, _LinkState(chain, pose))
    return tau, I


def _rows(chain, *named):
    """Inputs ``(array, name)`` as (N, M) C-contiguous rows and the batch shape.

    Inputs of one shape (..., M) that are finite take a short path (a single
    configuration is a few microseconds of work); anything else -- broadcasting,
    bad shapes, NaN -- goes through the validation that names the culprit.
    """
    M = chain.dof
    arrays = [np.asarray(x, dtype=float) for x, _ in named]
    shape = arrays[0].shape
    if shape and shape[-1] == M and all(a.shape == shape for a in arrays):
        if len(shape) == 1:                 # a NaN or inf makes the dot product non-finite
            if math.isfinite(sum(a.dot(a) for a in arrays)):
                return [a[None] for a in arrays], ()
        elif all(np.isfinite(a).all() for a in arrays):
            return [np.ascontiguousarray(a.reshape(-1, M)) for a in arrays], shape[:-1]
    qT, batch = as_batch(arrays[0], M, named[0][1])
    out = [qT.T] + [match_batch(a, M, batch, name).T for a, (_, name) in zip(arrays[1:], named[1:])]
    return [np.ascontiguousarray(a) for a in out], batch


def _single(chain, *arrays):
    """The inputs as lists of floats if they are one configuration each, else None."""
    M = chain.dof
    out = []
    for x in arrays:
        a = np.asarray(x, dtype=float)
        if a.shape != (M,) or not np.isfinite(a).all():
            return None
        out.append(a.tolist())
    return out


def chain_inverse_dynamics(chain, q, qd, qdd, loads=None) -> np.ndarray:
    kc = None if loads else compiled_data(chain)
    if kc is not None:
        (q, qd, qdd), batch = _rows(chain, (q, "q"), (qd, "qd"), (qdd, "qdd"))
        return _compiled.inverse_dynamics(kc, q, qd, qdd).reshape(batch + (chain.dof,))
    single = None if loads else _single(chain, q, qd, qdd)
    if single is not None:
        return np.array(_scalar.inverse_dynamics(chain._scalar, *single))
    qT, batch = as_batch(q, chain.dof)
    qdT = match_batch(qd, chain.dof, batch, "qd")
    qddT = match_batch(qdd, chain.dof, batch, "qdd")
    tau, _ = _bias(chain, qT, qdT, qddT, loads, batch)
    return from_batch(tau, batch, 1)


def chain_forward_dynamics(chain, q, qd, tau, loads=None) -> np.ndarray:
    _require_mass(chain)
    kc = None if loads else compiled_data(chain)
    if kc is not None:
        (q_, qd_, tau_), batch = _rows(chain, (q, "q"), (qd, "qd"), (tau, "tau"))
        qdd, ok = _compiled.forward_dynamics(kc, q_, qd_, tau_)
        if ok.all():
            return qdd.reshape(batch + (chain.dof,))
        # not positive definite somewhere: the numpy path below names it
    single = None if loads else _single(chain, q, qd, tau)
    if single is not None:
        q_, qd_, tau_ = single
        bias = _scalar.inverse_dynamics(chain._scalar, q_, qd_, [0.0] * chain.dof)
        x = _scalar.cholesky_solve(_scalar.inertia(chain._scalar, q_),
                                   [t - b for t, b in zip(tau_, bias)])
        if x is not None:
            return np.array(x)
    qT, batch = as_batch(q, chain.dof)
    qdT = match_batch(qd, chain.dof, batch, "qd")
    tauT = match_batch(tau, chain.dof, batch, "tau")
    bias, I = _bias(chain, qT, qdT, None, loads, batch, with_inertia=True)
    with located(batch, qT.shape[1]):
        qdd = spd_solve(np.moveaxis(I, -1, 0), (tauT - bias).T, "effective inertia I*")
    return qdd.reshape(batch + (chain.dof,))


def chain_gravity_load(chain, q) -> np.ndarray:
    kc = compiled_data(chain)
    if kc is not None:
        (q,), batch = _rows(chain, (q, "q"))
        return _compiled.gravity_load(kc, q).reshape(batch + (chain.dof,))
    single = _single(chain, q)
    if single is not None:
        zero = [0.0] * chain.dof
        return np.array(_scalar.inverse_dynamics(chain._scalar, single[0], zero, zero))
    qT, batch = as_batch(q, chain.dof)
    out = np.empty(qT.shape)
    for sl in blocks(qT.shape[1]):
        out[:, sl] = _gravity_load(chain, _Pose(chain, qT[:, sl]))
    return from_batch(out, batch, 1)


def chain_kinetic_energy(chain, q, qd) -> np.ndarray:
    return ChainDynamics(chain, q).kinetic_energy(qd)


def chain_potential_energy(chain, q) -> np.ndarray:
    return ChainDynamics(chain, q).potential_energy


def _require_mass(chain) -> None:
    if not chain.total_mass > 0:
        raise ModelError(f"chain {chain.name or ''} has zero total mass: a dynamic model "
                         "needs mass")
