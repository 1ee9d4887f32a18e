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

from ._array import as_batch, blocks, from_batch, match_batch, numeric
from .backend import kernels, spd_solve
from .errors import ModelError, located
from .kinematics import Pose

__all__ = ["DynamicModel"]


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

    def _finite(self, x: np.ndarray, what: str) -> np.ndarray:
        """``x`` (batch + tail): finite inputs give finite results, or a ModelError
        (a model of 1e308 kg overflows; never a silent NaN)."""
        if np.isfinite(x).all():          # (an empty batch too)
            return x
        n = int(np.prod(self._batch, dtype=np.int64)) if self._batch else 1
        _finite_result(x.reshape(n, -1), self._batch, what)
        return x

    @property
    def I_star(self) -> np.ndarray:
        return self._cached("I", lambda: self._finite(from_batch(self._I(), self._batch, 2),
                                                      "effective inertia I*"))

    @property
    def P_star(self) -> np.ndarray:
        return self._cached("P", lambda: self._finite(from_batch(self._P(), self._batch, 3),
                                                      "inertia power P*"))

    @property
    def gravity_load(self) -> np.ndarray:
        return self._cached("g", lambda: self._finite(
            from_batch(self._gravity(), self._batch, 1), "gravity loads"))

    @property
    def potential_energy(self) -> np.ndarray:
        return self._cached("V", lambda: self._finite(self._potential().reshape(self._batch),
                                                      "potential energies"))

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
        d = chain.kernel_data
        M = d.dof
        if type(q) is np.ndarray and q.shape == (M,) and q.dtype == np.float64:
            # one configuration: no reshaping, and its values checked only where they are
            # used -- by the one-configuration kernels (a non-finite q gives a
            # non-finite result, and they return False) or by _rows
            self.q, self._batch, self._checked_rows = q.copy(), (), None   # (q may change)
        else:
            qT, batch = as_batch(q, M)
            super().__init__(from_batch(qT, batch, 1), batch)
            self._checked_rows = np.ascontiguousarray(qT.T)
        self._cache = {}
        if not d.has_inertia:
            _require_mass(chain)
        self.chain = chain

    @property
    def _rows(self) -> np.ndarray:
        """q as (N, M) C-contiguous rows; a ModelError naming q if it is not finite."""
        if self._checked_rows is None:
            qT, _ = as_batch(self.q, self.q.shape[0])
            self._checked_rows = np.ascontiguousarray(qT.T)
        return self._checked_rows

    @property
    def I_star(self) -> np.ndarray:
        I = self._cache.get("I")
        if I is None:
            k, d = kernels(), self.chain.kernel_data
            M = d.dof
            if not self._batch:
                I = np.empty((M, M))
                if not k.inertia_one(d, self.q, I):      # True: I is finite
                    I = self._finite(k.inertia(d, self._rows)[0], "effective inertia I*")
            else:
                I = self._finite(k.inertia(d, self._rows).reshape(self._batch + (M, M)),
                                 "effective inertia I*")
            self._cache["I"] = I
        return I

    @property
    def P_star(self) -> np.ndarray:
        P = self._cache.get("P")
        if P is None:                       # I* comes with P* at little extra cost
            M = self.chain.dof
            I, P = kernels().inertia_power(self.chain.kernel_data, self._rows,
                                           "I" not in self._cache)
            if I is not None:
                self._cache["I"] = self._finite(I.reshape(self._batch + (M, M)),
                                                "effective inertia I*")
            P = self._cache["P"] = self._finite(P.reshape(self._batch + (M, M, M)),
                                                "inertia power P*")
        return P

    @property
    def gravity_load(self) -> np.ndarray:
        g = self._cache.get("g")
        if g is None:
            k, d = kernels(), self.chain.kernel_data
            M = d.dof
            if not self._batch:
                g = np.empty(M)
                if not k.gravity_load_one(d, self.q, g):      # True: g is finite
                    g = self._finite(k.gravity_load(d, self._rows)[0], "gravity loads")
            else:
                g = self._finite(k.gravity_load(d, self._rows).reshape(self._batch + (M,)),
                                 "gravity loads")
            self._cache["g"] = g
        return g

    def _I(self):                           # batch last, as DynamicModel's subclasses
        return np.moveaxis(self.I_star.reshape((-1,) + self.I_star.shape[-2:]), 0, -1)

    def _P(self):
        return np.moveaxis(self.P_star.reshape((-1,) + self.P_star.shape[-3:]), 0, -1)

    def _gravity(self):
        return self.gravity_load.reshape(-1, self.dof).T

    def _by_blocks(self, fn) -> np.ndarray:
        """``fn(sl, pose, qT)`` over blocks of the batch (batch last out)."""
        qT = self._rows.T
        parts = [fn(sl, Pose(self.chain, qT[:, sl]), qT[:, sl]) for sl in blocks(qT.shape[1])]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=-1)

    def _potential(self):
        d = self.chain.kernel_data

        def run(sl, pose, qT):                # -sum_j m_j g . c_j
            c = np.einsum("ijmn,jm->imn", pose.R, d.com.T) + pose.p
            return -np.einsum("i,m,imn->n", d.gravity, d.mass, c)
        return self._by_blocks(run)

    def _applied(self, loads, qdT):
        bound = loads.resolve(self.chain, self._batch)
        return self._by_blocks(lambda sl, pose, qT: bound.load(
            pose, qT, None if qdT is None else qdT[:, sl], sl))

    def loads_energy(self, loads) -> np.ndarray:
        """Potential energy of conservative applied loads (springs, forces), (...)."""
        bound = loads.resolve(self.chain, self._batch)
        return self._by_blocks(lambda sl, pose, qT: bound.energy(pose, qT, sl)
                               ).reshape(self._batch)


# --------------------------------------------------------------------------
# SerialChain entry points
# --------------------------------------------------------------------------
def chain_dynamics(chain, q) -> ChainDynamics:
    return ChainDynamics(chain, q)


def _rows(chain, *named):
    """Inputs ``(array, name)`` as (N, M) C-contiguous rows and the batch shape.

    Inputs of one shape (..., M) that are finite take a short path; anything
    else -- broadcasting, bad shapes, NaN -- goes through the validation that
    names the culprit.
    """
    M = chain.dof
    arrays = [numeric(x, name) for x, name in named]
    shape = arrays[0].shape
    if shape and shape[-1] == M and all(a.shape == shape for a in arrays) \
            and all(np.isfinite(a).all() for a in arrays):
        return [np.ascontiguousarray(a.reshape(-1, M)) for a in arrays], shape[:-1]
    qT, batch = as_batch(arrays[0], M, named[0][1])
    out = [qT.T] + [match_batch(a, M, batch, name).T for a, (_, name) in zip(arrays[1:], named[1:])]
    return [np.ascontiguousarray(a) for a in out], batch


def _applied_rows(chain, loads, q, qd, batch) -> np.ndarray:
    """T_L (N, M) of ``loads`` at the rows q, qd (N, M)."""
    bound = loads.resolve(chain, batch)
    qT, qdT = q.T, qd.T
    out = np.empty(q.shape)
    for sl in blocks(q.shape[0]):
        out[sl] = bound.load(Pose(chain, qT[:, sl]), qT[:, sl], qdT[:, sl], sl).T
    return out


# SerialChain's methods try the one-configuration kernels first (without loads);
# these are the general paths: batches, validation, applied loads
def chain_inverse_dynamics(chain, q, qd, qdd, loads=None) -> np.ndarray:
    k, d = kernels(), chain.kernel_data
    (q_, qd_, qdd_), batch = _rows(chain, (q, "q"), (qd, "qd"), (qdd, "qdd"))
    tau = k.inverse_dynamics(d, q_, qd_, qdd_)
    if loads:
        tau += _applied_rows(chain, loads, q_, qd_, batch)
    return _finite_result(tau, batch, "joint loads").reshape(batch + (chain.dof,))


def chain_forward_dynamics(chain, q, qd, tau, loads=None) -> np.ndarray:
    k, d = kernels(), chain.kernel_data
    _require_mass(chain)
    (q_, qd_, tau_), batch = _rows(chain, (q, "q"), (qd, "qd"), (tau, "tau"))
    if not loads:
        qdd, ok = k.forward_dynamics(d, q_, qd_, tau_)
        if ok.all():
            return _finite_result(qdd, batch, "accelerations").reshape(batch + (chain.dof,))
    # loads, or I* singular somewhere (spd_solve names the configuration)
    bias = k.inverse_dynamics(d, q_, qd_, np.zeros(q_.shape))
    if loads:
        bias += _applied_rows(chain, loads, q_, qd_, batch)
    with located(batch, q_.shape[0]):
        qdd = spd_solve(k.inertia(d, q_), tau_ - bias, "effective inertia I*")
    return _finite_result(qdd, batch, "accelerations").reshape(batch + (chain.dof,))


def chain_gravity_load(chain, q) -> np.ndarray:
    k, d = kernels(), chain.kernel_data
    out = np.empty(d.dof)
    if k.gravity_load_one(d, q, out):
        return out
    (q_,), batch = _rows(chain, (q, "q"))
    return _finite_result(k.gravity_load(d, q_), batch, "gravity load").reshape(
        batch + (chain.dof,))


def chain_kinetic_energy(chain, q, qd) -> np.ndarray:
    return ChainDynamics(chain, q).kinetic_energy(qd)


def chain_potential_energy(chain, q) -> np.ndarray:
    return ChainDynamics(chain, q).potential_energy


def _finite_result(x: np.ndarray, batch: tuple, what: str) -> np.ndarray:
    """``x`` (N, ...) if finite; finite inputs whose result overflows float64 (rates
    of 1e160, say) are a ModelError naming the first such configuration."""
    if np.isfinite(x).all():
        return x
    bad = int(np.argmax(~np.isfinite(x.reshape(x.shape[0], -1)).all(-1)))
    where = (f" at batch index {tuple(int(i) for i in np.unravel_index(bad, batch))}"
             if batch else "")
    raise ModelError(f"the {what} overflow float64{where}: the inputs or the model's "
                     "numbers are too large for its units (finite inputs, non-finite result)")


def _require_mass(chain) -> None:
    # kic's one zero-mass convention: a massless body's rotational inertia counts
    if not chain.kernel_data.has_inertia:
        raise ModelError(f"chain {chain.name or ''} has zero total mass and no rotational "
                         "inertia: a dynamic model needs them")
