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


@dataclass(frozen=True)
class _Element:
    """A spring, damper or force law along the line between two body points."""
    body_a: int | str | None
    point_a: np.ndarray
    body_b: int | str | None
    point_b: np.ndarray
    stiffness: float = 0.0
    rest: float = 0.0
    damping: float = 0.0
    law: object = None

    def tension(self, length, rate):
        """Tension (N) at length (m) and rate (m/s): positive pulls the points together."""
        T = self.stiffness * (length - self.rest)
        if self.damping:
            T = T + self.damping * rate
        if self.law is not None:
            T = T + np.asarray(self.law(length, rate), dtype=float)
        return T

    @property
    def conservative(self) -> bool:
        return self.damping == 0.0 and self.law is None

    def energy(self, length):
        return 0.5 * self.stiffness * (length - self.rest) ** 2


@dataclass(frozen=True)
class _JointTorque:
    joint: int | str
    torque: float


@dataclass(frozen=True)
class _BodyForce:
    link: int | str
    force: np.ndarray           # in the body's frame
    point: np.ndarray


@dataclass(frozen=True)
class _BodyMoment:
    link: int | str
    moment: np.ndarray          # in the body's frame


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
        self._elements: list[_Element] = []
        self._torques: list[_JointTorque] = []
        self._body_forces: list[_BodyForce] = []
        self._body_moments: list[_BodyMoment] = []

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

    def _points(self, body_a, point_a, body_b, point_b, what):
        pa = finite_array(point_a, f"point on {body_a!r} of the {what}")
        pb = finite_array(point_b, f"point on {body_b!r} of the {what}")
        if pa.shape != (3,) or pb.shape != (3,):
            raise ModelError(f"the points of the {what} between {body_a!r} and {body_b!r} "
                             f"must be (3,) arrays (m), got {pa.shape} and {pb.shape}")
        if body_a is None and body_b is None:
            raise ModelError(f"the {what} needs at least one body (None is the ground)")
        return pa, pb

    def spring_between(self, body_a, point_a, body_b, point_b, stiffness: float,
                       rest_length: float = 0.0) -> "Loads":
        """Add a linear spring (N/m) with a rest length (m) between a point on
        ``body_a`` and one on ``body_b`` (each in its body's frame, m; a body
        None is the ground, its point in the world): tension
        ``stiffness (length - rest_length)`` pulls the points together."""
        pa, pb = self._points(body_a, point_a, body_b, point_b, "spring")
        k = float(finite_array(stiffness, f"stiffness of the spring {body_a!r}-{body_b!r}"))
        r = float(finite_array(rest_length, f"rest length of the spring {body_a!r}-{body_b!r}"))
        if k < 0 or r < 0:
            raise ModelError(f"the spring between {body_a!r} and {body_b!r} needs stiffness "
                             f">= 0 and rest length >= 0, got {k} and {r}")
        self._elements.append(_Element(body_a, pa, body_b, pb, stiffness=k, rest=r))
        return self

    def damper_between(self, body_a, point_a, body_b, point_b,
                       coefficient: float) -> "Loads":
        """Add a linear damper (N s/m) along the line between two body points:
        tension ``coefficient * d(length)/dt`` (see :meth:`spring_between`)."""
        pa, pb = self._points(body_a, point_a, body_b, point_b, "damper")
        c = float(finite_array(coefficient, f"damping between {body_a!r} and {body_b!r}"))
        if c < 0:
            raise ModelError(f"the damper between {body_a!r} and {body_b!r} needs a "
                             f"coefficient >= 0, got {c}")
        self._elements.append(_Element(body_a, pa, body_b, pb, damping=c))
        return self

    def element_between(self, body_a, point_a, body_b, point_b, law) -> "Loads":
        """Add a force element along the line between two body points with a
        nonlinear law ``law(length, rate) -> tension`` (m, m/s -> N, arrays of the
        batch's shape; positive pulls the points together).  Not conservative
        for the energy check (kic cannot know its potential)."""
        pa, pb = self._points(body_a, point_a, body_b, point_b, "force element")
        if not callable(law):
            raise ModelError(f"the force law between {body_a!r} and {body_b!r} must be "
                             f"callable law(length, rate), got {law!r}")
        self._elements.append(_Element(body_a, pa, body_b, pb, law=law))
        return self

    def joint_torque(self, joint: int | str, torque: float) -> "Loads":
        """Add a constant torque (N m; a force, N, at a P joint) acting at ``joint``
        between the two bodies it joins: ``+torque`` about the joint axis on the
        child, ``-torque`` on the parent.  Any joint with a value in the model
        (passive ones too); it does the work ``torque * d(joint)``."""
        t = float(finite_array(torque, f"torque at joint {joint!r}"))
        self._torques.append(_JointTorque(joint, t))
        return self

    def body_force(self, link: int | str, force, point=(0.0, 0.0, 0.0)) -> "Loads":
        """Add a force (N) fixed in ``link``'s frame (it turns with the body) acting
        at ``point`` (m, the link's frame): a follower load, not conservative."""
        f = finite_array(force, f"body force on {link!r}")
        p = finite_array(point, f"point of the body force on {link!r}")
        if f.shape != (3,) or p.shape != (3,):
            raise ModelError(f"body force and point on {link!r} must be (3,) arrays, got "
                             f"{f.shape} and {p.shape}")
        self._body_forces.append(_BodyForce(link, f, p))
        return self

    def body_moment(self, link: int | str, moment) -> "Loads":
        """Add a moment (N m) fixed in ``link``'s frame (it turns with the body)."""
        mu = finite_array(moment, f"body moment on {link!r}")
        if mu.shape != (3,):
            raise ModelError(f"body moment on {link!r} must be a (3,) array, got {mu.shape}")
        self._body_moments.append(_BodyMoment(link, mu))
        return self

    @property
    def conservative(self) -> bool:
        """True when the loads derive from a potential (springs, constant forces and
        joint torques, linear springs between points)."""
        return not self._dampers and not self._moments and all(
            f.force.ndim == 1 for f in self._forces) and all(
            e.conservative for e in self._elements) and not self._body_forces \
            and not self._body_moments

    def __bool__(self) -> bool:
        return bool(self._forces or self._moments or self._springs or self._dampers
                    or self._elements or self._torques or self._body_forces
                    or self._body_moments)

    def __repr__(self) -> str:
        return (f"<Loads: {len(self._forces)} forces, {len(self._moments)} moments, "
                f"{len(self._springs)} springs, {len(self._dampers)} dampers, "
                f"{len(self._elements)} elements between points, {len(self._torques)} "
                f"joint torques, {len(self._body_forces) + len(self._body_moments)} "
                "body-fixed loads>")

    def combined(self, other: "Loads") -> "Loads":
        """A new set with the loads of both."""
        out = Loads()
        for name in ("_forces", "_moments", "_springs", "_dampers", "_elements", "_torques",
                     "_body_forces", "_body_moments"):
            setattr(out, name, getattr(self, name) + getattr(other, name))
        return out

    @property
    def elements(self) -> tuple:
        """Springs, dampers and force laws between two body points: records with
        ``body_a``, ``point_a``, ``body_b``, ``point_b``, ``stiffness``, ``rest``,
        ``damping``, ``law``."""
        return tuple(self._elements)

    @property
    def joint_torques(self) -> tuple:
        """Joint torques: records with ``joint`` and ``torque``."""
        return tuple(self._torques)

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

    def split(self, owner, joint_owner, parts: int, cross: list | None = None) -> list:
        """These loads divided among the open chains of a closed model.

        Parameters
        ----------
        owner : mapping
            body -> (chain index, link name on that chain) of the chain carrying it.
        joint_owner : mapping
            joint -> chain index.
        parts : int
            Number of chains.
        cross : list, optional
            Receives the elements whose two bodies are on different chains (the
            caller resolves them with both poses); without it they raise.

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

        def chain_of(body, what):
            if body is None:
                return None
            if body not in owner:
                raise ModelError(f"{what} on unknown body {body!r}")
            return owner[body]

        for e in self._elements:
            a, b = chain_of(e.body_a, "element"), chain_of(e.body_b, "element")
            ci = {x[0] for x in (a, b) if x is not None}
            if len(ci) > 1:
                if cross is None:
                    raise ModelError(f"the element between {e.body_a!r} and {e.body_b!r} "
                                     "joins two open chains")
                cross.append(e)
                continue
            c = ci.pop()
            out[c]._elements.append(_Element(
                None if a is None else a[1], e.point_a, None if b is None else b[1],
                e.point_b, e.stiffness, e.rest, e.damping, e.law))
        for bf in self._body_forces:
            ci, link = chain_of(bf.link, "body force")
            out[ci]._body_forces.append(_BodyForce(link, bf.force, bf.point))
        for bm in self._body_moments:
            ci, link = chain_of(bm.link, "body moment")
            out[ci]._body_moments.append(_BodyMoment(link, bm.moment))
        for t in self._torques:
            if t.joint not in joint_owner:
                raise ModelError(f"torque at joint {t.joint!r}, which has no value in the "
                                 "model (unknown, or a joint closed as a point): apply "
                                 "moments on its two bodies instead")
            out[joint_owner[t.joint]]._torques.append(t)
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
        offsets = chain.kernel_data.offsets

        def in_joint_frame(j, p):          # a link-frame point in joint j's frame
            return offsets[j][:3, :3] @ p + offsets[j][:3, 3]

        self.forces = []
        for f in loads._forces:
            j = chain.link_index(f.link)
            Fo = offsets[j]
            pk = Fo[:3, :3] @ _vector(f.point, batch, "point") + Fo[:3, 3][:, None]
            self.forces.append((j, _vector(f.force, batch, "force"), pk))
        self.moments = [(chain.link_index(m.link), _vector(m.moment, batch, "moment"))
                        for m in loads._moments]
        self.springs = [(chain.joint_index(s.joint), s.stiffness, s.rest) for s in loads._springs]
        self.dampers = [(chain.joint_index(d.joint), d.coefficient) for d in loads._dampers]
        self.torques = [(chain.joint_index(t.joint), t.torque) for t in loads._torques]
        self.body_forces = []
        for bf in loads._body_forces:
            j = chain.link_index(bf.link)
            self.body_forces.append((j, offsets[j][:3, :3] @ bf.force,
                                     in_joint_frame(j, bf.point)[:, None]))
        self.body_moments = [(j, offsets[j][:3, :3] @ bm.moment) for bm in loads._body_moments
                             for j in [chain.link_index(bm.link)]]
        # elements: (link index or -1 for the ground, point in the joint frame or world)
        self.elements = []
        for e in loads._elements:
            ends = []
            for body, p in ((e.body_a, e.point_a), (e.body_b, e.point_b)):
                if body is None:
                    ends.append((-1, p[:, None]))
                else:
                    j = chain.link_index(body)
                    ends.append((j, in_joint_frame(j, p)[:, None]))
            self.elements.append((ends, e))

    @staticmethod
    def _part(x: np.ndarray, sl: slice) -> np.ndarray:
        return x if x.shape[-1] == 1 else x[:, sl]

    def _point(self, pose, j, pk, sl):
        if j < 0:                          # the ground: a world point
            return np.broadcast_to(pk, (3, pose.p.shape[-1]))
        return (pose.R[:, :, j] * self._part(pk, sl)[None]).sum(axis=1) + pose.p[:, j]

    @staticmethod
    def _rotate(pose, j, v):
        """A vector (3,) in joint j's frame, in the world (3, n)."""
        return (pose.R[:, :, j] * v[None, :, None]).sum(axis=1)

    @staticmethod
    def _velocity(pose, j, P, qdT):
        """World velocity (3, n) of the world point P (3, n) carried by link j."""
        if j < 0:
            return np.zeros(P.shape)
        M = pose.sR.shape[1]
        upto = (np.arange(M) <= j)[None, :, None]
        screw = np.cross(pose.sR, P[:, None, :], axis=0) + pose.sv
        return (screw * upto * qdT[None]).sum(axis=1)

    @staticmethod
    def _apply_force(TL, pose, j, P, F):
        """T_L -= G^T F of a world force F (3, n) at the world point P on link j."""
        if j < 0:
            return
        upto = np.arange(TL.shape[0])[:, None] <= j
        TL -= (pose.sR * cross(P, F)[:, None] + pose.sv * F[:, None]).sum(0) * upto

    def _element_state(self, pose, ends, sl, qdT, need_rate):
        (ja, pa), (jb, pb) = ends
        Pa, Pb = self._point(pose, ja, pa, sl), self._point(pose, jb, pb, sl)
        d = Pb - Pa
        length = np.sqrt((d * d).sum(0))
        u = d / np.where(length > 0, length, 1.0)
        rate = 0.0
        if need_rate:
            if qdT is None:
                raise ModelError("these loads include dampers or force laws: the joint rates "
                                 "qd are needed")
            rate = (u * (self._velocity(pose, jb, Pb, qdT)
                         - self._velocity(pose, ja, Pa, qdT))).sum(0)
        return Pa, Pb, u, length, rate

    def load(self, pose, qT: np.ndarray, qdT: np.ndarray | None, sl: slice) -> np.ndarray:
        """T_L (M, n) for the configurations ``sl`` whose pose is ``pose``."""
        M, n = pose.p.shape[1:]
        TL = np.zeros((M, n))
        for j, F, pk in self.forces:
            self._apply_force(TL, pose, j, self._point(pose, j, pk, sl), self._part(F, sl))
        upto = np.arange(M)[:, None]
        for j, mu in self.moments:
            TL -= (pose.sR * self._part(mu, sl)[:, None]).sum(0) * (upto <= j)
        for j, f, pk in self.body_forces:
            self._apply_force(TL, pose, j, self._point(pose, j, pk, sl), self._rotate(pose, j, f))
        for j, mu in self.body_moments:
            TL -= (pose.sR * self._rotate(pose, j, mu)[:, None]).sum(0) * (upto <= j)
        for ends, e in self.elements:
            Pa, Pb, u, length, rate = self._element_state(pose, ends, sl, qdT,
                                                          not e.conservative)
            T = e.tension(length, rate)
            self._apply_force(TL, pose, ends[0][0], Pa, T * u)       # pulls a towards b
            self._apply_force(TL, pose, ends[1][0], Pb, -T * u)
        for n_, k, rest in self.springs:
            TL[n_] += k * (qT[n_] - rest)
        for n_, t in self.torques:
            TL[n_] -= t
        if self.dampers:
            if qdT is None:
                raise ModelError("these loads include dampers: the joint rates qd are needed")
            for n_, c in self.dampers:
                TL[n_] += c * qdT[n_]
        return TL

    def energy(self, pose, qT: np.ndarray, sl: slice) -> np.ndarray:
        """Potential energy of springs, constant forces and joint torques (J), (n,)."""
        E = np.zeros(pose.p.shape[-1])
        for n_, k, rest in self.springs:
            E += 0.5 * k * (qT[n_] - rest) ** 2
        for n_, t in self.torques:
            E -= t * qT[n_]
        for j, F, pk in self.forces:
            E -= (self._part(F, sl) * self._point(pose, j, pk, sl)).sum(0)
        for ends, e in self.elements:
            if e.stiffness:
                E += e.energy(self._element_state(pose, ends, sl, None, False)[3])
        return E
