"""Mimic joints: a model in all joints seen in its independent joints.

A mimic joint (URDF ``<mimic>``, a gear or a coupled finger) follows
``phi_j = multiplier * phi_master + offset``.  With the independent joints q,
``phi = G q + c``: a constant transfer of coordinates (``G^phi_q = G``,
``H^phi_qq = 0``), so the whole model follows by :class:`kic.Transfer`.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .backend import spd_solve
from .errors import ModelError
from .kinematics import Influence
from .transfer import Transfer, transfer_influence

__all__ = ["MimicModel", "MimicDynamics", "MimicKinematics"]


class MimicModel:
    """A model in all joints seen in its independent joints (URDF mimic joints).

    Each mimic joint follows ``phi_j = multiplier * phi_master + offset``; with
    the independent joints q, ``phi = G q + c`` where ``G = G^phi_q`` is a
    constant selection-and-multiplier matrix and ``H^phi_qq = 0``.  The whole
    model follows by the transfer of coordinates (:class:`kic.Transfer`,
    docs/theory.md): ``I*_q = G^T I*_phi G``, ``P*_q = G^T o (G^T P*_phi G)``,
    ``T_q = G^T T_phi``.  The offset c moves the configuration only.

    Parameters
    ----------
    model : SerialChain or ClosedModel
        The model in all joints (``coordinate_names`` or ``joint_names``).
    mimic : mapping
        joint name -> (master joint name, multiplier, offset); masters may be
        mimic joints themselves (resolved), cycles raise ModelError.

    Attributes
    ----------
    coordinate_names : list of str
        The independent joints, in the model's order.
    dof : int
    G : ndarray, shape (N, M)
    c : ndarray, shape (N,)
        Offsets (rad or m).
    """

    def __init__(self, model, mimic: Mapping) -> None:
        names = list(getattr(model, "coordinate_names", None) or model.joint_names)
        self.model, self.mimic = model, dict(mimic)
        index = {n: k for k, n in enumerate(names)}
        for j, spec in self.mimic.items():
            if j not in index:
                raise ModelError(f"mimic joint {j!r} is not a coordinate of the model {names}")
            if len(spec) != 3 or spec[0] not in index:
                raise ModelError(f"mimic joint {j!r}: give (master joint, multiplier, offset) "
                                 f"with a master among {names}, got {spec!r}")
        free = [n for n in names if n not in self.mimic]
        if not free:
            raise ModelError("every joint mimics another: no independent coordinate")
        N, M = len(names), len(free)
        G, c = np.zeros((N, M)), np.zeros(N)
        for k, n in enumerate(free):
            G[index[n], k] = 1.0

        def resolve(n, seen):
            if n not in self.mimic:
                return G[index[n]], 0.0
            if n in seen:
                raise ModelError(f"mimic joints form a cycle through {sorted(seen)}")
            master, mult, off = self.mimic[n]
            g, c0 = resolve(master, seen | {n})
            return mult * g + 0.0, mult * c0 + off     # + 0.0: no -0.0

        for n in self.mimic:
            G[index[n]], c[index[n]] = resolve(n, set())
        self.G, self.c = G, c
        self.coordinate_names = free
        self.dof = M
        self.name = getattr(model, "name", None)

    def __repr__(self) -> str:
        return f"<MimicModel {self.dof} of {self.G.shape[0]} joints: {self.coordinate_names}>"

    # ------------------------------------------------------------- files
    def to_urdf(self, name: str | None = None, limits: Mapping | None = None) -> str:
        """URDF text of the model in all joints with its ``<mimic>`` elements
        (:func:`kic.io.urdf.to_urdf`)."""
        from .io.urdf import to_urdf
        return to_urdf(self, name=name, limits=limits)

    def to_mjcf(self, name: str | None = None, **options) -> str:
        """MJCF text of the model in all joints, the couplings as joint equalities
        (:func:`kic.io.mjcf.to_mjcf`)."""
        from .io.mjcf import to_mjcf
        return to_mjcf(self, name=name, **options)

    # ------------------------------------------------------------- maps
    def _q(self, q, what="q") -> np.ndarray:
        q = np.asarray(q, float)
        if q.ndim == 0 or q.shape[-1] != self.dof:
            raise ModelError(f"{what} must have shape (..., {self.dof}) (joints "
                             f"{self.coordinate_names}), got {q.shape}")
        return q

    def joints(self, q) -> np.ndarray:
        """All joint values ``phi = G q + c`` (..., N)."""
        return self._q(q) @ self.G.T + self.c

    def rates(self, qd) -> np.ndarray:
        """All joint rates (or accelerations) ``G q'`` (..., N)."""
        return self._q(qd, "rates") @ self.G.T

    def transfer(self, q) -> Transfer:
        """The constant transfer phi <- q at a batch q (``G``, ``H = 0``, ``D = 0``)."""
        batch = self._q(q).shape[:-1]
        N, M = self.G.shape
        return Transfer(np.broadcast_to(self.G, batch + (N, M)),
                        np.zeros(batch + (N, M, M)), np.zeros(batch + (N, M, M, M)))

    # ----------------------------------------------------------- the model
    def kinematics(self, q, order: int = 2) -> "MimicKinematics":
        """Influence coefficients in q: the full model's, transferred (chain rule)."""
        return MimicKinematics(self, q, order)

    def dynamics(self, q) -> "MimicDynamics":
        """I*, P*, gravity load and potential energy in q (see class docs)."""
        return MimicDynamics(self, q)

    def gravity_load(self, q) -> np.ndarray:
        """``G^T dV/dphi`` (..., M), N m or N."""
        return self.dynamics(q).gravity_load

    def inverse_dynamics(self, q, qd, qdd, loads=None) -> np.ndarray:
        """``G^T T_phi(phi, G q', G q'')`` (..., M): the full model's required loads
        transferred (``phi'' = G q''`` since H = 0)."""
        tau = self.model.inverse_dynamics(self.joints(q), self.rates(qd), self.rates(qdd),
                                          loads)
        return tau @ self.G

    def forward_dynamics(self, q, qd, tau, loads=None) -> np.ndarray:
        """``q'' = I*_q^-1 (T - G^T T_phi(phi, G q', 0))`` (..., M)."""
        bias = self.inverse_dynamics(q, qd, np.zeros_like(np.asarray(qd, float)), loads)
        rhs = np.asarray(tau, float) - bias
        return self.dynamics(q).solve(rhs)

    def kinetic_energy(self, q, qd) -> np.ndarray:
        """``q'^T I* q' / 2`` (J)."""
        return self.dynamics(q).kinetic_energy(qd)

    def potential_energy(self, q) -> np.ndarray:
        """Gravitational potential energy (J) at ``phi(q)``."""
        return self.model.dynamics(self.joints(q)).potential_energy


class MimicDynamics:
    """The dynamic model of a :class:`MimicModel` at a batch q (I*, P*, loads)."""

    def __init__(self, model: MimicModel, q) -> None:
        self.q = model._q(q)
        self._names = model.coordinate_names
        self.full = model.model.dynamics(model.joints(q))
        self._tr = model.transfer(q)

    @property
    def dof(self) -> int:
        return self.q.shape[-1]

    @property
    def I_star(self) -> np.ndarray:
        return self._tr.inertia(self.full.I_star)

    @property
    def P_star(self) -> np.ndarray:
        return self._tr.power(self.full.I_star, self.full.P_star)

    @property
    def gravity_load(self) -> np.ndarray:
        return self._tr.load(self.full.gravity_load)

    @property
    def potential_energy(self) -> np.ndarray:
        return self.full.potential_energy

    def velocity_term(self, qd) -> np.ndarray:
        """``q'^T P* q'`` (..., M)."""
        return np.einsum("...nml,...m,...l->...n", self.P_star, qd, qd)

    def kinetic_energy(self, qd) -> np.ndarray:
        qd = np.asarray(qd, float)
        return 0.5 * np.einsum("...m,...mn,...n->...", qd, self.I_star, qd)

    def torque(self, qd, qdd) -> np.ndarray:
        """``I* q'' + q'^T P* q' + gravity load`` (..., M)."""
        return (np.einsum("...mn,...n->...m", self.I_star, np.asarray(qdd, float))
                + self.velocity_term(qd) + self.gravity_load)

    def acceleration(self, qd, tau) -> np.ndarray:
        """``I*^-1 (T - q'^T P* q' - gravity load)`` (..., M)."""
        rhs = np.asarray(tau, float) - self.velocity_term(qd) - self.gravity_load
        return self.solve(rhs)

    def solve(self, rhs) -> np.ndarray:
        """``I*^-1 rhs`` (..., M) by kic's one SPD solve and singularity rule
        (:func:`kic.backend.spd_solve`): a singular I* (a coordinate that moves
        no mass or inertia) is a SingularityError naming the configuration."""
        I = self.I_star
        return spd_solve(I, np.broadcast_to(rhs, I.shape[:-1]),
                         f"effective inertia I* in the independent joints "
                         f"{self._names}")


class MimicKinematics:
    """Influence coefficients of a :class:`MimicModel`: every method of the full
    model's kinematics that returns an :class:`kic.Influence` (``point``,
    ``rotation``, ``tool``...) returns it transferred to q."""

    def __init__(self, model: MimicModel, q, order: int = 2) -> None:
        self.full = model.model.kinematics(model.joints(q), order)
        self._tr = model.transfer(q)

    def __getattr__(self, name):
        attr = getattr(self.full, name)
        if not callable(attr):
            return attr
        def call(*args, **kwargs):
            out = attr(*args, **kwargs)
            if isinstance(out, Influence):
                return Influence(*transfer_influence(out.G, out.H, out.D,
                                                     self._tr.G, self._tr.H, self._tr.D))
            return out
        return call
