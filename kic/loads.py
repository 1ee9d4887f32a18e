"""Applied loads and their effect on the generalized coordinates (virtual work).

By the principle of virtual work (seed eq. 2-125, 2-147) an applied load T_u
on a dependent parameter u (a force on a point, a moment on a link) is
balanced at the inputs by ``T_L = -G^T T_u``, the sign convention of the whole
library: ``T = I* q'' + q'^T P* q' + T_L`` is the load the actuators must
supply.  A joint spring (torque ``-k (q - rest)`` on the joint) contributes
``+k (q - rest)``; a viscous damper (``-c q'``) contributes ``+c q'``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._array import as_batch, finite_array, match_batch
from .backend import cross
from .errors import ModelError

__all__ = ["Loads"]


@dataclass(frozen=True)
class _Force:
    link: int | str
    force: np.ndarray
    point: np.ndarray


@dataclass(frozen=True)
class _Moment:
    link: int | str
    moment: np.ndarray


@dataclass(frozen=True)
class _Spring:
    joint: int | str
    stiffness: float
    rest: float


@dataclass(frozen=True)
class _Damper:
    joint: int | str
    coefficient: float


class Loads:
    """A set of loads applied to a model, built by chaining.

    Forces and moments are world vectors (N, N m); a force acts at a point
    given in its link's frame (m).  Either may be batched, ``(..., 3)``,
    matching the batch of configurations it is evaluated at (a load history
    along a trajectory).  Springs (N m/rad or N/m) and viscous dampers
    (N m s/rad or N s/m) act between the two bodies of a joint.

    Examples
    --------
    >>> import kic, mechanisms
    >>> arm = mechanisms.planar_two_link(g=0.0)
    >>> loads = kic.Loads().force(1, (0.0, -10.0, 0.0), point=(1.0, 0, 0)).damper(0, 0.5)
    >>> arm.inverse_dynamics([0.0, 0.0], [1.0, 0.0], [0.0, 0.0], loads=loads).round(6)
    array([20.5, 10. ])
    """

    def __init__(self) -> None:
        self._forces: list[_Force] = []
        self._moments: list[_Moment] = []
        self._springs: list[_Spring] = []
        self._dampers: list[_Damper] = []

    def force(self, link: int | str, force, point=(0.0, 0.0, 0.0)) -> "Loads":
        """Add a world force ``force`` (N) acting at ``point`` on ``link``."""
        f = finite_array(force, f"force on link {link!r}")
        p = finite_array(point, f"point of the force on link {link!r}")
        if f.shape[-1:] != (3,) or p.shape[-1:] != (3,):
            raise ModelError(f"force and point on link {link!r} must be (..., 3) arrays, got "
                             f"{f.shape} and {p.shape}")
        self._forces.append(_Force(link, f, p))
        return self

    def moment(self, link: int | str, moment) -> "Loads":
        """Add a world moment ``moment`` (N m) acting on ``link``."""
        mu = finite_array(moment, f"moment on link {link!r}")
        if mu.shape[-1:] != (3,):
            raise ModelError(f"moment on link {link!r} must be a (..., 3) array, got {mu.shape}")
        self._moments.append(_Moment(link, mu))
        return self

    def spring(self, joint: int | str, stiffness: float, rest: float = 0.0) -> "Loads":
        """Add a linear spring on ``joint``: applied load ``-stiffness (q - rest)``."""
        k = float(finite_array(stiffness, f"stiffness of the spring on joint {joint!r}"))
        r = float(finite_array(rest, f"rest value of the spring on joint {joint!r}"))
        self._springs.append(_Spring(joint, k, r))
        return self

    def damper(self, joint: int | str, coefficient: float) -> "Loads":
        """Add a viscous damper on ``joint``: applied load ``-coefficient q'``."""
        c = float(finite_array(coefficient, f"damping of joint {joint!r}"))
        if c < 0:
            raise ModelError(f"damping coefficient of joint {joint!r} must be >= 0, got {c}")
        self._dampers.append(_Damper(joint, c))
        return self

    @property
    def conservative(self) -> bool:
        """True when the loads derive from a potential (springs, constant forces)."""
        return not self._dampers and not self._moments and all(
            f.force.ndim == 1 for f in self._forces)

    def __bool__(self) -> bool:
        return bool(self._forces or self._moments or self._springs or self._dampers)

    def __repr__(self) -> str:
        return (f"<Loads: {len(self._forces)} forces, {len(self._moments)} moments, "
                f"{len(self._springs)} springs, {len(self._dampers)} dampers>")

    @property
    def forces(self) -> tuple:
        """The applied forces: records with ``link``, ``force`` (N) and ``point`` (m)."""
        return tuple(self._forces)

    @property
    def moments(self) -> tuple:
        """The applied moments: records with ``link`` and ``moment`` (N m)."""
        return tuple(self._moments)

    @property
    def springs(self) -> tuple:
        """Joint springs: records with ``joint``, ``stiffness`` and ``rest``."""
        return tuple(self._springs)

    @property
    def dampers(self) -> tuple:
        """Joint dampers: records with ``joint`` and ``coefficient``."""
        return tuple(self._dampers)

    @property
    def batched(self) -> bool:
        """True when a force, point or moment varies along a batch."""
        return any(f.force.ndim > 1 or f.point.ndim > 1 for f in self._forces) or any(
            m.moment.ndim > 1 for m in self._moments)

    def split(self, owner, joint_owner, parts: int) -> list:
        """These loads divided among the open chains of a closed model.

        Parameters
        ----------
        owner : mapping
            body -> (chain index, link name on that chain) of the chain carrying it.
        joint_owner : mapping
            joint -> chain index.
        parts : int
            Number of chains.

        Returns
        -------
        list of Loads or None
            One per chain (None where nothing acts on it).

        Raises
        ------
        ModelError
            A load on a body or joint the model does not have.
        """
        out = [Loads() for _ in range(parts)]
        for f in self._forces:
            if f.link not in owner:
                raise ModelError(f"load on unknown body {f.link!r}")
            ci, link = owner[f.link]
            out[ci]._forces.append(_Force(link, f.force, f.point))
        for mo in self._moments:
            if mo.link not in owner:
                raise ModelError(f"load on unknown body {mo.link!r}")
            ci, link = owner[mo.link]
            out[ci]._moments.append(_Moment(link, mo.moment))
        for kind, items in (("spring", self._springs), ("damper", self._dampers)):
            for s in items:
                if s.joint not in joint_owner:
                    raise ModelError(f"{kind} on unknown joint {s.joint!r}")
                getattr(out[joint_owner[s.joint]], f"_{kind}s").append(s)
        return [part if part else None for part in out]

    # ----------------------------------------------------------- evaluation
    def resolve(self, chain, batch: tuple) -> "_ChainLoads":
        """Bind these loads to a serial ``chain`` and a batch shape."""
        return _ChainLoads(self, chain, batch)

    def chain_load(self, chain, q, qd=None) -> np.ndarray:
        """T_L of these loads on a serial ``chain`` at ``q`` (..., M)."""
        from .kinematics import Pose
        qT, batch = as_batch(q, chain.dof)
        qdT = None if qd is None else match_batch(qd, chain.dof, batch, "qd")
        TL = self.resolve(chain, batch).load(Pose(chain, qT), qT, qdT, slice(None))
        return TL.T.reshape(batch + (chain.dof,))


def _vector(v: np.ndarray, batch: tuple, name: str) -> np.ndarray:
    """A (3,) or (..., 3) load vector as (3, 1) or (3, N)."""
    if v.ndim == 1:
        return v[:, None]
    return match_batch(v, 3, batch, name)


class _ChainLoads:
    """Loads bound to a chain: link/joint indices resolved, vectors batch last."""

    def __init__(self, loads: Loads, chain, batch: tuple) -> None:
        self.chain = chain
        self.forces = []
        for f in loads._forces:
            j = chain.link_index(f.link)
            Fo = chain.kernel_data.offsets[j]
            pk = Fo[:3, :3] @ _vector(f.point, batch, "point") + Fo[:3, 3][:, None]
            self.forces.append((j, _vector(f.force, batch, "force"), pk))
        self.moments = [(chain.link_index(m.link), _vector(m.moment, batch, "moment"))
                        for m in loads._moments]
        self.springs = [(chain.joint_index(s.joint), s.stiffness, s.rest) for s in loads._springs]
        self.dampers = [(chain.joint_index(d.joint), d.coefficient) for d in loads._dampers]

    @staticmethod
    def _part(x: np.ndarray, sl: slice) -> np.ndarray:
        return x if x.shape[-1] == 1 else x[:, sl]

    def _point(self, pose, j, pk, sl):
        return (pose.R[:, :, j] * self._part(pk, sl)[None]).sum(axis=1) + pose.p[:, j]

    def load(self, pose, qT: np.ndarray, qdT: np.ndarray | None, sl: slice) -> np.ndarray:
        """T_L (M, n) for the configurations ``sl`` whose pose is ``pose``."""
        M, n = pose.p.shape[1:]
        TL = np.zeros((M, n))
        upto = np.arange(M)[:, None]
        for j, F, pk in self.forces:
            P, F = self._point(pose, j, pk, sl), self._part(F, sl)
            TL -= (pose.sR * cross(P, F)[:, None] + pose.sv * F[:, None]).sum(0) * (upto <= j)
        for j, mu in self.moments:
            TL -= (pose.sR * self._part(mu, sl)[:, None]).sum(0) * (upto <= j)
        for n_, k, rest in self.springs:
            TL[n_] += k * (qT[n_] - rest)
        if self.dampers:
            if qdT is None:
                raise ModelError("these loads include dampers: the joint rates qd are needed")
            for n_, c in self.dampers:
                TL[n_] += c * qdT[n_]
        return TL

    def energy(self, pose, qT: np.ndarray, sl: slice) -> np.ndarray:
        """Potential energy of springs and constant forces (J), shape (n,)."""
        E = np.zeros(pose.p.shape[-1])
        for n_, k, rest in self.springs:
            E += 0.5 * k * (qT[n_] - rest) ** 2
        for j, F, pk in self.forces:
            E -= (self._part(F, sl) * self._point(pose, j, pk, sl)).sum(0)
        return E
