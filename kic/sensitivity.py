"""Design sensitivities: derivatives of I*, the gravity load and the required
(actuator) loads with respect to link lengths, masses, centroids and inertias.

A designer who sizes a mechanism asks how the dynamic model changes with the
design: ``dI*/dp``, ``dT_gravity/dp``, ``dT/dp`` and ``dtau_a/dp`` at a batch of
poses, for design parameters ``p`` named on the description:

* :class:`Length`: the displacement (m) of a joint's frame along a unit
  direction in its parent body (or child body) frame, the bodies' mass
  properties staying fixed in their own frames;
* :class:`Mass`: a body's mass (kg), its inertia scaled in proportion (the
  centroid and the radii of gyration fixed);
* :class:`Centroid`: the displacement (m) of a body's centroid in its frame;
* :class:`Inertia`: ``I_c + s * tensor`` of a body's inertia about its centroid.

The route is the influence-coefficient one (Freeman 1985), with no finite
differences.  A change of a joint's origin along ``d`` is a prismatic joint of
value ``p = 0`` and axis ``d`` placed just before the joint (just after it for
the child side).  The *augmented* model, whose coordinates are ``x = (q, p)``,
is the designed mechanism with the design joints unlocked: its q-q block at
``p = 0`` is the user's model, and its coefficients with respect to ``p`` are
the position sensitivities.  So

* ``dI*_ij/dp_k = P*s[i, j, k] + P*s[j, i, k]`` with ``P*s`` the inertia power of
  the augmented model symmetrized in its last two indices (the Christoffel
  symbols of the first kind of I*);
* ``dT/dp = K[q, p]`` where ``K = dT/dx`` at fixed rates is the position block of
  the linearized dynamics of the augmented model (:func:`kic.linear_dynamics`,
  second- and third-order coefficients) at ``x' = (q', 0)``, ``x'' = (q'', 0)``;
* ``dT_gravity/dp = -sum_b m_b g . H_cb[:, q, p]``, the mixed second-order
  coefficients of the centroids (``T_gravity = dV/dq``, so this is ``d2V/dq dp``);
* for a closed model the transfer of the augmented model, with ``(q, p)`` as
  independent coordinates, gives ``dphi/dp = -A^-1 B_p`` and its second-order
  terms ``H^phi_qp`` automatically; the actuator loads
  ``tau_a = (G^a_q)^-T T_q`` then have
  ``dtau_a/dp_k = (G^a_q)^-T (dT_q/dp_k - (H^a_{q p_k})^T tau_a)``, and with
  redundant actuation (Na > M) the least-norm loads ``tau_a = G lambda``,
  ``C lambda = T_q`` (``G = G^a_q``, ``C = G^T G``) have
  ``dtau_a/dp_k = dG lambda + G C^-1 (dT_q/dp_k - dG^T tau_a - G^T dG lambda)``
  with ``dG = H^a_{q p_k}``;
* masses enter linearly: ``dI*/dm_b = (m_b G_c^T G_c + G_r^T I_b G_r) / m_b``,
  ``dT_gravity/dm_b = -G_c^T g`` and ``dT/dm_b`` the body's own d'Alembert
  load per kilogram, from the body's influence coefficients; so do inertias;
  a point's coefficients are affine in the point, so a centroid's
  ``dG_c/ds = G_{c+d} - G_c`` exactly.

:class:`DesignSensitivity` builds the augmented model once;
:func:`sensitivities` is the one-call form.  See ``docs/sensitivity.md``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._array import match_batch
from .chain import Joint, Link, SerialChain
from .errors import ModelError, located
from .kernels.linalg import condition_numbers
from .linearize import linear_dynamics
from .model import ClosedLoopModel
from .settings import CONDITION_PREFILTER, RANK_RTOL, TINY, ZERO_NORM

__all__ = ["Length", "Mass", "Centroid", "Inertia", "Sensitivities", "DesignSensitivity",
           "sensitivities"]

_SIDES = ("parent", "child")


@dataclass(frozen=True, eq=False)
class Length:
    """A length design parameter: the displacement (m) of a joint's frame.

    Parameters
    ----------
    joint : str
        A joint as added to the :class:`kic.Mechanism` (its first primitive
        joint for a compound one), or a joint of a :class:`kic.SerialChain`.
    direction : array_like, shape (3,), optional
        Unit direction of the displacement, in the parent body frame (the
        previous link's kinematic frame, or the base, for a serial chain);
        normalised on input.  Default: along the joint's present offset from
        that frame's origin (``origin[:3, 3]``), so that the parameter is the
        length of the link leading to the joint.
    side : {"parent", "child"}
        ``"child"`` moves the joint frame in the child body frame instead
        (``child_origin`` of :meth:`kic.Mechanism.add_joint`; closed models
        only), e.g. where a closing joint sits on its second body.
    name : str, optional
        The parameter's name in :attr:`Sensitivities.parameters`; default
        ``"length:<joint>"`` (``"length:<joint>:child"`` for the child side).

    Notes
    -----
    The bodies' mass properties stay fixed in their own frames: lengthening
    a crank by moving the elbow joint does not move the crank's centroid (add a
    :class:`Mass` parameter, or rebuild, to resize the body itself).
    """

    joint: str
    direction: object = None
    side: str = "parent"
    name: str | None = None

    @property
    def label(self) -> str:
        if self.name is not None:
            return self.name
        return f"length:{self.joint}" + (":child" if self.side == "child" else "")


@dataclass(frozen=True, eq=False)
class Mass:
    """A mass design parameter: a body's mass (kg), its inertia about the
    centroid scaled in proportion (the centroid and the radii of gyration
    fixed).

    Parameters
    ----------
    body : str
        A body of the :class:`kic.Mechanism` (or a link of a
        :class:`kic.SerialChain`).
    name : str, optional
        Default ``"mass:<body>"``.

    Notes
    -----
    For a body of zero mass the derivative is that of a point mass at its
    centroid.
    """

    body: str
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name if self.name is not None else f"mass:{self.body}"


@dataclass(frozen=True, eq=False)
class Centroid:
    """A centroid design parameter: the displacement (m) of a body's centroid
    along a unit direction in the body frame, its mass and its inertia about
    the centroid (in body axes) fixed.

    Parameters
    ----------
    body : str
    direction : array_like, shape (3,), optional
        In the body frame; default along the present centroid (``com``).
    name : str, optional
        Default ``"centroid:<body>"``.
    """

    body: str
    direction: object = None
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name if self.name is not None else f"centroid:{self.body}"


@dataclass(frozen=True, eq=False)
class Inertia:
    """An inertia design parameter ``s``: the body's inertia about its centroid
    becomes ``I_c + s * tensor`` (body axes), its mass and centroid fixed.

    Parameters
    ----------
    body : str
    tensor : array_like, shape (3, 3) or (3,), optional
        Symmetric (kg m^2 per unit of s; three numbers: a diagonal).  Default
        the body's own inertia, so that ``s`` is the relative change of the
        inertia (the square of the radii of gyration), dimensionless.
    name : str, optional
        Default ``"inertia:<body>"``.
    """

    body: str
    tensor: object = None
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name if self.name is not None else f"inertia:{self.body}"


_BODY_PARAMETERS = (Mass, Centroid, Inertia)
_PARAMETERS = (Length,) + _BODY_PARAMETERS


@dataclass(frozen=True)
class Sensitivities:
    """Derivatives of the dynamic model with respect to design parameters at a
    batch of states (leading axes ``...`` those of ``q``).

    The last axis of every derivative runs over :attr:`parameters`; a length
    or centroid parameter's column is per metre, a mass parameter's per
    kilogram, an inertia parameter's per unit of its ``s``.

    Attributes
    ----------
    parameters : tuple of str
        The parameter names, in the order given.
    q, qd, qdd : ndarray, shape (..., M)
        The states (rad or m, per s, per s^2).
    I_star : ndarray, shape (..., M, M)
        The effective inertia I* (kg m^2, kg m, kg).
    inertia : ndarray, shape (..., M, M, P)
        ``dI*/dp`` (kg m per m for a revolute pair and a length, kg m^2 per kg
        for a mass...).
    gravity : ndarray, shape (..., M)
        The gravity load ``T_gravity = +dV/dq`` (N m, N).
    gravity_load : ndarray, shape (..., M)
        ``dT_gravity/dp`` (N m/m, N m/kg...).
    T : ndarray, shape (..., M)
        The required loads ``T = I* q'' + q'^T P* q' + T_gravity`` in q (N m, N).
    loads : ndarray, shape (..., M, P)
        ``dT/dp`` at the given rates (gravity included).
    actuators : tuple of str
        The actuated joints (empty when there are none to solve for).
    tau : ndarray or None, shape (..., Na)
        The actuator loads: ``(G^a_q)^T tau_a = T``, the least-norm solution
        ``tau_a = G^a_q (G^a_q^T G^a_q)^-1 T`` when Na > M (redundant actuation).
    actuator_loads : ndarray or None, shape (..., Na, P)
        ``dtau_a/dp``.
    status : ndarray of int, shape (...)
        :class:`kic.Status` per state: OK, or (with ``on_failure="nan"``) why
        its numbers are NaN: not assembled, a singular block or another mode
        (every quantity NaN), a singular actuation (``tau`` and
        ``actuator_loads`` NaN).
    """

    parameters: tuple
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    I_star: np.ndarray
    inertia: np.ndarray
    gravity: np.ndarray
    gravity_load: np.ndarray
    T: np.ndarray
    loads: np.ndarray
    actuators: tuple = ()
    tau: np.ndarray | None = None
    actuator_loads: np.ndarray | None = None
    status: np.ndarray | None = None


def _direction(par: Length, offset: np.ndarray, what: str) -> np.ndarray:
    """The unit direction of a length parameter (given, or along ``offset``)."""
    return _unit(par.direction, offset, what, f"the joint sits at the {par.side} frame's "
                 "origin")


def _unit(direction, offset: np.ndarray, what: str, why: str) -> np.ndarray:
    """A given direction normalised, or the direction of ``offset``."""
    if direction is None:
        n = float(np.linalg.norm(offset))
        if n < ZERO_NORM:
            raise ModelError(f"{what}: {why}, so there is no offset to follow: give a "
                             "direction")
        return np.asarray(offset, float) / n
    try:
        d = np.asarray(direction, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what}: direction must be 3 numbers, got "
                         f"{direction!r}") from exc
    if d.shape != (3,) or not np.all(np.isfinite(d)):
        raise ModelError(f"{what}: direction must be 3 finite numbers, got "
                         f"{direction!r}")
    n = float(np.linalg.norm(d))
    if n < ZERO_NORM:
        raise ModelError(f"{what}: direction {d.tolist()} is zero")
    return d / n


def _body_data(par, link: Link) -> tuple:
    """(link, extra) of a body parameter: extra the inertia per unit of the
    parameter (Mass: per kg; Inertia: the tensor) or the unit direction (Centroid)."""
    what = par.label
    if isinstance(par, Mass):
        return link, (link.inertia / link.mass if link.mass > 0 else np.zeros((3, 3)))
    if isinstance(par, Centroid):
        return link, _unit(par.direction, link.com, what, "the body's centroid is at its "
                           "frame's origin")
    if par.tensor is None:
        return link, link.inertia
    try:
        S = np.asarray(par.tensor, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what}: tensor must be a 3x3 array, got {par.tensor!r}") from exc
    if S.shape == (3,):
        S = np.diag(S)
    if S.shape != (3, 3) or not np.all(np.isfinite(S)) or \
            np.abs(S - S.T).max() > RANK_RTOL * max(float(np.abs(S).max()), TINY):
        raise ModelError(f"{what}: tensor must be a finite symmetric 3x3 array (or 3 "
                         f"diagonal numbers), got {par.tensor!r}")
    return link, S


def _rates(x, name: str, batch: tuple, M: int) -> np.ndarray:
    """Rates ``x`` broadcast to the batch of q, flattened (n, M)."""
    if x is None:
        return np.zeros((int(np.prod(batch, dtype=int)), M))
    return np.ascontiguousarray(match_batch(x, M, batch, name).T)


def _check_parameters(parameters) -> list:
    kinds = "kic.Length, kic.Mass, kic.Centroid or kic.Inertia"
    if isinstance(parameters, _PARAMETERS):
        parameters = [parameters]
    try:
        params = list(parameters)
    except TypeError as exc:
        raise ModelError(f"parameters must be a sequence of {kinds}") from exc
    if not params:
        raise ModelError(f"give at least one design parameter ({kinds})")
    for k, par in enumerate(params):
        if not isinstance(par, _PARAMETERS):
            raise ModelError(f"parameter {k} must be {kinds}, got {type(par).__name__}")
        if isinstance(par, Length) and par.side not in _SIDES:
            raise ModelError(f"{par.label}: side must be 'parent' or 'child', got "
                             f"{par.side!r}")
    labels = [p.label for p in params]
    if len(set(labels)) != len(labels):
        dup = sorted({n for n in labels if labels.count(n) > 1})
        raise ModelError(f"repeated design parameters {dup}: give them distinct names")
    return params


class DesignSensitivity:
    """Derivatives of a model's dynamics with respect to design parameters.

    Builds the augmented model (the model with one prismatic design joint per
    :class:`Length`, in coordinates ``(q, p)``) once; each call evaluates it at
    a batch of states (see the module docstring for the formulas).

    Parameters
    ----------
    model : kic.SerialChain or kic.ClosedModel
        The model (a :class:`kic.Mechanism` without loops gives a
        :class:`kic.ClosedModel` too, by :meth:`kic.Mechanism.model`).
    parameters : sequence of Length, Mass, Centroid and Inertia

    Attributes
    ----------
    model : kic.SerialChain or kic.ClosedModel
    parameters : tuple of str
        The parameter names (columns of the results).
    augmented : kic.SerialChain or kic.ClosedModel
        The model with the design joints (named ``"design:<parameter>"``); for a
        closed model its coordinates are ``(q, p)``.

    Raises
    ------
    kic.ModelError
        An unknown joint or body, a bad direction, a child-side length on a
        serial chain, repeated parameter names; the message names the part.

    Notes
    -----
    Actuator loads are solved for M or more actuated joints (least-norm
    when redundant, as the model's ``actuator_loads``); the derivatives hold
    in the model's assembly mode, at configurations it assembles (a failure
    raises as the model does: :class:`kic.ClosureError`,
    :class:`kic.SingularityError`, with the pose's batch index; or, with
    ``on_failure="nan"``, is NaN with a :class:`kic.Status`).

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> arm = mechanisms.planar_two_link()
    >>> sens = kic.DesignSensitivity(arm, [kic.Length(arm.joint_names[1]),
    ...                                    kic.Mass(arm.link_names[1])])
    >>> s = sens([0.3, 0.5], qd=[0.2, -0.1], qdd=[0.0, 0.4])
    >>> s.parameters
    ('length:joint2', 'mass:link2')
    >>> s.inertia.shape, s.loads.shape
    ((2, 2, 2), (2, 2))
    """

    def __init__(self, model, parameters: Sequence) -> None:
        params = _check_parameters(parameters)
        if isinstance(model, SerialChain):
            self._serial = True
            self.gravity = model.gravity
        elif isinstance(model, ClosedLoopModel):
            self._serial = False
            self.gravity = model.mechanism.gravity
        else:
            raise ModelError(f"model must be a kic.SerialChain or kic.ClosedModel, got "
                             f"{type(model).__name__} (build a kic.Mechanism's model with "
                             "mechanism.model(coordinates))")
        self.model = model
        self._last = None          # (q, phi) of the last poses assembled, for the guess
        self.parameters = tuple(p.label for p in params)
        self.lengths = [p for p in params if isinstance(p, Length)]
        self.body_parameters = [p for p in params if isinstance(p, _BODY_PARAMETERS)]
        self._order = [p.label for p in self.lengths] + [p.label for p in self.body_parameters]
        self._column = np.array([self._order.index(n) for n in self.parameters], int)
        if self._serial:
            self._augment_chain(model)
        else:
            self._augment_closed(model)

    # ------------------------------------------------------- augmentation
    def _augment_chain(self, chain: SerialChain) -> None:
        before: dict = {}
        names = [f"design:{p.label}" for p in self.lengths]
        for par, pname in zip(self.lengths, names):
            what = f"{par.label} ({pname})"
            if par.side != "parent":
                raise ModelError(f"{what}: a serial chain's joints have no child side; use "
                                 "side='parent' (the joint origin in the previous link frame)")
            if par.joint not in chain.joint_names:
                raise ModelError(f"{what}: unknown joint {par.joint!r}; joints are "
                                 f"{list(chain.joint_names)}")
            j = chain.joint_names.index(par.joint)
            d = _direction(par, chain.joints[j].origin[:3, 3], what)
            before.setdefault(j, []).append((pname, d))
        for par in self.body_parameters:
            if not isinstance(par.body, str) or par.body not in chain.link_names:
                raise ModelError(f"{par.label}: unknown link {par.body!r}; links are "
                                 f"{list(chain.link_names)}")
        joints, links, offsets, position = [], [], [], {}
        for j, (joint, link) in enumerate(zip(chain.joints, chain.links)):
            for pname, d in before.get(j, []):
                position[pname] = len(joints)
                joints.append(Joint("P", d, name=pname))
                links.append(Link(0.0, name=pname))
                offsets.append(np.eye(4))
            position[chain.joint_names[j]] = len(joints)
            joints.append(Joint(joint.kind, joint.axis, joint.origin, name=chain.joint_names[j]))
            links.append(link if link.name == chain.link_names[j] else
                         Link(link.mass, link.com, link.inertia, name=chain.link_names[j],
                              check_triangle=False))
            offsets.append(chain.frame_offsets[j])
        self.augmented = SerialChain(joints, links, gravity=chain.gravity, base=chain.base,
                                     tool=chain.tool, frame_offsets=np.stack(offsets),
                                     name=f"{chain.name or 'chain'} with design joints")
        # columns of the augmented coordinates, in (q, p) order
        self._cols = np.array([position[n] for n in chain.joint_names] +
                              [position[n] for n in names], int)
        self._links = {p.label: _body_data(p, chain.links[chain.link_names.index(p.body)])
                       for p in self.body_parameters}
        self._where = {p.label: position[chain.joint_names[chain.link_names.index(p.body)]]
                       for p in self.body_parameters}
        self._actuators = tuple(chain.joint_names)
        self._massive = [(position[chain.joint_names[j]], link)
                         for j, link in enumerate(chain.links) if link.mass > 0]

    def _augment_closed(self, model: ClosedLoopModel) -> None:
        mech = model.mechanism
        aug = mech.copy()
        names = []
        for par in self.lengths:
            pname = f"design:{par.label}"
            what = f"{par.label} ({pname})"
            if par.joint not in mech.joints:
                raise ModelError(f"{what}: unknown joint {par.joint!r}; joints are "
                                 f"{mech.joints}")
            if pname in aug.graph or pname in aug.primitive_joints:
                raise ModelError(f"{what}: the name {pname!r} is taken in the mechanism")
            kind = aug.joint_kind(par.joint)
            prims = aug.joint_primitives(par.joint)
            first, last = prims[0], prims[-1]
            parent, child = first.parent, last.child
            O, C = first.origin, last.child_origin
            if par.side == "parent":
                d = _direction(par, O[:3, 3], what)
                aug.add_body(pname)
                aug.add_joint(pname, "P", parent, pname, axis=d)
                parent = pname
            else:
                d = _direction(par, C[:3, 3], what)
                aug.add_body(pname)
                aug.add_joint(pname, "P", pname, child, axis=-d)
                child = pname
            aug.remove_joint(par.joint)
            if kind in ("U", "S"):
                aug.add_joint(par.joint, kind, parent, child, origin=O, child_origin=C,
                              axes=[p.axis for p in prims])
            else:
                aug.add_joint(par.joint, kind, parent, child, axis=first.axis, origin=O,
                              child_origin=C)
            names.append(pname)
        bodies = [b for b in mech.bodies if b != mech.ground]
        self._links = {}
        for par in self.body_parameters:
            if not isinstance(par.body, str) or par.body not in bodies:
                raise ModelError(f"{par.label}: unknown body {par.body!r}; bodies are "
                                 f"{bodies}")
            self._links[par.label] = _body_data(par, mech.graph.nodes[par.body]["link"])
        self._where = {p.label: p.body for p in self.body_parameters}
        self._massive = [(b, mech.graph.nodes[b]["link"]) for b in bodies
                         if mech.graph.nodes[b]["link"].mass > 0]
        physical = set(mech.primitive_joints)
        ref = {k: model.reference_phi[i] for i, k in enumerate(model.phi_names)
               if k in physical}
        cuts = [c for c in model.loops if c in physical]
        M = model.dof

        def guess(x):
            last = self._last
            if last is not None and last[0].shape == x[:, :M].shape and \
                    np.array_equal(last[0], x[:, :M]):
                phi = last[1]                  # the poses just assembled by _start
            else:
                phi, _ = model.assemble(x[:, :M], on_failure="nan")
            out = {n: phi[:, i] for i, n in enumerate(model.phi_names)}
            out.update({n: x[:, M + k] for k, n in enumerate(names)})
            return out

        self.augmented = aug.model(list(model.coordinates) + names, reference=ref,
                                   guess=guess, cuts=cuts,
                                   name=f"{model.name or 'model'} with design joints")
        self.augmented.max_condition = model.max_condition
        self._cols = np.arange(M + len(names))
        self._phi_map = np.array([self.augmented.phi_names.index(n)
                                  for n in model.phi_names], int)
        self._actuators = tuple(model.actuators) if len(model.actuators) >= M else ()

    # --------------------------------------------------------- evaluation
    @property
    def dof(self) -> int:
        return self.model.dof

    def __call__(self, q, qd=None, qdd=None, actuators: Sequence[str] | None = None,
                 on_failure: str = "raise") -> Sensitivities:
        """The sensitivities at a batch of states.

        Parameters
        ----------
        q : array_like, shape (..., M)
        qd, qdd : array_like, shape (..., M), optional
            Rates and accelerations for the required loads (default zero: the
            static loads).
        actuators : sequence of str, optional
            M or more actuated joints for :attr:`Sensitivities.actuator_loads`;
            default the model's actuators where there are at least M (every
            joint of a serial chain); ``()`` for none.
        on_failure : {"raise", "nan"}
            A state the model cannot evaluate raises (with its batch index), or
            gets NaN and its reason in :attr:`Sensitivities.status` (for
            optimizers: the rest of the batch is evaluated).

        Returns
        -------
        Sensitivities
        """
        if on_failure not in ("raise", "nan"):
            raise ModelError(f"on_failure must be 'raise' or 'nan', got {on_failure!r}")
        M = self.dof
        q = np.asarray(q, dtype=float)
        if q.ndim == 0 or q.shape[-1] != M:
            raise ModelError(f"q must have shape (..., {M}), got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise ModelError("q contains NaN or infinite values")
        batch = q.shape[:-1]
        qf = q.reshape(-1, M)
        n = qf.shape[0]
        qd_f, qdd_f = (_rates(x, name, batch, M) for x, name in ((qd, "qd"), (qdd, "qdd")))
        acts = self._actuator_list(actuators)
        status = np.zeros(n, int)
        if on_failure == "nan" and not self._serial:
            # the model says which states it cannot evaluate (as its own calls do)
            status = np.asarray(self.model.inverse_dynamics(qf, qd_f, qdd_f,
                                                            on_failure="nan")[1], int)
        good = np.nonzero(status == 0)[0]
        with located(batch, n):
            out = self._evaluate(qf[good], qd_f[good], qdd_f[good], acts,
                                 None if on_failure == "raise" else status[good])
        status[good] = out[-1]
        P, Na = len(self.parameters), len(acts)
        shapes = ((M, M), (M, M, P), (M,), (M, P), (M,), (M, P), (Na,), (Na, P))

        def full(X, tail):                  # NaN where a state was not evaluated
            if X is None:
                return None
            Y = np.full((n,) + tail, np.nan)
            Y[good] = X
            return Y.reshape(batch + tail)

        I, dI, Tg, dTg, T, dT, tau, dtau = (full(X, t) for X, t in zip(out[:-1], shapes))
        return Sensitivities(self.parameters, qf.reshape(batch + (M,)),
                             qd_f.reshape(batch + (M,)), qdd_f.reshape(batch + (M,)),
                             I, dI, Tg, dTg, T, dT, tuple(acts), tau, dtau,
                             status.reshape(batch))

    def _actuator_list(self, actuators) -> tuple:
        M = self.dof
        if actuators is None:
            return self._actuators
        acts = (actuators,) if isinstance(actuators, str) else tuple(actuators)
        if not acts:
            return ()
        known = self.model.phi_names
        bad = [a for a in acts if a not in known]
        if bad:
            raise ModelError(f"unknown actuated joints {bad}; joints are {list(known)}")
        if len(acts) < M or len(set(acts)) != len(acts):
            raise ModelError(f"actuator load sensitivities need at least {M} distinct "
                             f"actuated joints, got {list(acts)}")
        if self._serial and set(acts) != set(self.model.joint_names):
            raise ModelError("a serial chain's actuators are all its joints")
        return acts

    def _evaluate(self, qf, qd, qdd, acts, status=None):
        """(I*, dI*, T_gravity, dT_gravity, T, dT, tau, dtau, status) at the
        states qf (n, M); ``status`` (n,) given: a singular actuation is NaN and
        SINGULAR_LOAD there, not raised."""
        M, n = self.dof, qf.shape[0]
        nan_mode = status is not None
        status = np.zeros(n, int) if status is None else status.copy()
        L = len(self.lengths)
        A = M + L
        aug, cols = self.augmented, self._cols
        # augmented states: x = (q, 0), x' = (q', 0), x'' = (q'', 0), in the
        # augmented model's own coordinate order
        def lift(v):
            x = np.zeros((v.shape[0], aug.dof))
            x[:, cols[:M]] = v
            return x

        x = lift(qf)
        # assembled first, so that a pose that fails is reported with its index
        start = None if self._serial else self._start(x)
        if self._serial:
            dyn, kin = aug.dynamics(x), aug.kinematics(x, 2)
        else:
            dyn, kin = aug.dynamics(x, start=start), aug.kinematics(x, 2, start=start)
        ix = np.ix_(cols, cols)
        # dI*/dp from the augmented P* (the Christoffel symbols of I*)
        Pq = dyn.P_star[:, cols][:, :, cols][:, :, :, cols]
        Ps = 0.5 * (Pq + Pq.transpose(0, 1, 3, 2))
        dI_len = (Ps + Ps.transpose(0, 2, 1, 3))[:, :M, :M, M:]
        I = dyn.I_star[:, ix[0], ix[1]][:, :M, :M]
        Tg = dyn.gravity_load[:, cols][:, :M]
        cache: dict = {}

        def point(where, p):                        # G (n, 3, A), H (n, 3, A, A) in (q, p)
            key = (where, None if p is None else tuple(np.asarray(p, float)))
            if key not in cache:
                inf = kin.rotation(where) if p is None else kin.point(where, p)
                G = inf.G.reshape(n, 3, aug.dof)[:, :, cols]
                H = inf.H.reshape(n, 3, aug.dof, aug.dof)[:, :, cols][:, :, :, cols]
                cache[key] = G, H
            return cache[key]

        g = self.gravity
        # dT_gravity/dp = d^2 V / dq dp = -sum_b m_b g . H_cb[:, q, p]
        Kg = np.zeros((n, M, L))
        if L:
            for where, link in self._massive:
                Hc = point(where, link.com)[1]
                Kg -= link.mass * np.einsum("p,npik->nik", g, Hc[:, :, :M, M:])
        # dT/dp at the motion: the position block of the linearized dynamics
        if L and bool(np.any(qd) or np.any(qdd)):
            lin = linear_dynamics(aug, x, lift(qd), lift(qdd))
            T = lin.T[:, cols][:, :M]
            Kt = lin.K[:, ix[0], ix[1]][:, :M, M:]
        elif L:
            T, Kt = Tg, Kg
        else:
            T = self.model.inverse_dynamics(qf, qd, qdd).reshape(n, M)
            Kt = Kg
        # body parameters: the bodies' own contributions, from their coefficients
        nm = len(self.body_parameters)
        dI_m = np.zeros((n, M, M, nm))
        dTg_m = np.zeros((n, M, nm))
        dT_m = np.zeros((n, M, nm))
        for k, par in enumerate(self.body_parameters):
            link, extra = self._links[par.label]
            where = self._where[par.label]
            Gc, Hc = point(where, link.com)
            Gr, Hr = point(where, None)
            Gc, Hc, Gr, Hr = Gc[..., :M], Hc[..., :M, :M], Gr[..., :M], Hr[..., :M, :M]
            F = (kin.link_frame(where) if self._serial else kin.frame(where)).reshape(n, 4, 4)
            R = F[:, :3, :3]
            w = np.einsum("npa,na->np", Gr, qd)
            alpha = np.einsum("npa,na->np", Gr, qdd) + np.einsum("npab,na,nb->np", Hr, qd, qd)
            ac = np.einsum("npa,na->np", Gc, qdd) + np.einsum("npab,na,nb->np", Hc, qd, qd)
            if isinstance(par, Centroid):
                # the coefficients are affine in the body point: dG_c/ds = G(c + d) - G(c)
                G1, H1 = point(where, link.com + extra)
                dG, dH = G1[..., :M] - Gc, H1[..., :M, :M] - Hc
                m = link.mass
                dac = np.einsum("npa,na->np", dG, qdd) + np.einsum("npab,na,nb->np", dH, qd, qd)
                dI_m[..., k] = m * (np.einsum("npa,npb->nab", dG, Gc)
                                    + np.einsum("npa,npb->nab", Gc, dG))
                dTg_m[..., k] = -m * np.einsum("npa,p->na", dG, g)
                dT_m[..., k] = m * (np.einsum("npa,np->na", dG, ac - g)
                                    + np.einsum("npa,np->na", Gc, dac))
                continue
            S = R @ extra @ np.swapaxes(R, -1, -2)        # inertia per unit of s (world)
            S_w = np.einsum("npq,nq->np", S, w)
            moment = np.einsum("npq,nq->np", S, alpha) + np.cross(w, S_w)
            dI_m[..., k] = np.einsum("npa,npq,nqb->nab", Gr, S, Gr)
            dT_m[..., k] = np.einsum("npa,np->na", Gr, moment)
            if isinstance(par, Mass):                     # and the point mass, per kg
                dI_m[..., k] += np.einsum("npa,npb->nab", Gc, Gc)
                dTg_m[..., k] = -np.einsum("npa,p->na", Gc, g)
                dT_m[..., k] += np.einsum("npa,np->na", Gc, ac - g)
        order = self._column
        dI = np.concatenate([dI_len, dI_m], axis=-1)[..., order]
        dTg = np.concatenate([Kg, dTg_m], axis=-1)[..., order]
        dT = np.concatenate([Kt, dT_m], axis=-1)[..., order]
        if not acts:
            return I, dI, Tg, dTg, T, dT, None, None, status
        if self._serial:
            idx = np.array([self.model.joint_names.index(a) for a in acts], int)
            return I, dI, Tg, dTg, T, dT, T[:, idx], dT[:, idx], status
        tr = kin.transfer
        rows = aug.joint_indices(list(acts))
        G = tr.G.reshape(n, aug.N, A)[:, rows][:, :, :M]                 # (n, Na, M)
        H = tr.H.reshape(n, aug.N, A, A)[:, rows][:, :, :M, M:]          # (n, Na, M, L)
        Na = G.shape[1]
        # a cheap unscaled screen (the one condition number of kernels.linalg); the
        # poses it doubts get the model's own scaled check below
        ok = condition_numbers(G) < CONDITION_PREFILTER * self.model.max_condition
        if not np.all(ok):
            # near a singular actuation the model's own check decides: it raises a
            # SingularityError with the pose's index, or says SINGULAR_LOAD
            if nan_mode:
                st = np.asarray(self.model.actuator_loads(qf, qd, qdd, list(acts),
                                                          on_failure="nan")[1], int)
                status = np.where(st != 0, st, status)
                ok = status == 0
            else:
                self.model.actuator_loads(qf, qd, qdd, list(acts))
                ok[:] = True
        tau = np.full((n, Na), np.nan)
        dtau = np.full((n, Na, dT.shape[-1]), np.nan)
        lens = self._column < L                        # the length parameters' columns
        k_len = self._column[lens]
        G, H, Tk, dTk = G[ok], H[ok], T[ok], dT[ok]
        Gt = np.swapaxes(G, -1, -2)
        rhs = dTk.copy()
        if Na == M:
            # tau = (G^a_q)^-T T;  d tau/dp = (G^a_q)^-T (dT/dp - (dG^a_q/dp)^T tau)
            t = np.linalg.solve(Gt, Tk[..., None])[..., 0]
            rhs[..., lens] -= np.einsum("naik,na->nik", H, t)[..., k_len]
            dtau[ok] = np.linalg.solve(Gt, rhs)
        else:
            # least-norm: tau = G lam, C lam = T (C = G^T G); d tau = dG lam + G dlam,
            # C dlam = dT - dG^T tau - G^T dG lam
            C = Gt @ G
            lam = np.linalg.solve(C, Tk[..., None])[..., 0]
            t = np.einsum("nam,nm->na", G, lam)
            dG_lam = np.einsum("naik,ni->nak", H, lam)                     # (n, Na, L)
            rhs[..., lens] -= (np.einsum("naik,na->nik", H, t)
                               + np.einsum("nai,nak->nik", G, dG_lam))[..., k_len]
            d = G @ np.linalg.solve(C, rhs)
            d[..., lens] += dG_lam[..., k_len]
            dtau[ok] = d
        tau[ok] = t
        return I, dI, Tg, dTg, T, dT, tau, dtau, status

    def _start(self, x: np.ndarray) -> np.ndarray:
        """Joint values of the augmented model at x = (q, 0), from the user's model."""
        model = self.model
        phi = model.assemble(x[:, :model.dof]).reshape(-1, model.N)
        self._last = (x[:, :model.dof].copy(), phi)
        out = np.zeros((x.shape[0], self.augmented.N))
        out[:, self._phi_map] = phi
        return out


def sensitivities(model, parameters: Sequence, q, qd=None, qdd=None,
                  actuators: Sequence[str] | None = None,
                  on_failure: str = "raise") -> Sensitivities:
    """Derivatives of I*, the gravity load and the required and actuator loads
    with respect to design parameters, at a batch of states.

    ``sensitivities(model, parameters, q, qd, qdd)`` is
    ``DesignSensitivity(model, parameters)(q, qd, qdd)``; keep the
    :class:`DesignSensitivity` to evaluate the same design at other states.

    Parameters
    ----------
    model : kic.SerialChain or kic.ClosedModel
    parameters : sequence of Length, Mass, Centroid and Inertia
    q, qd, qdd : array_like, shape (..., M)
        States (rates and accelerations default to zero).
    actuators : sequence of str, optional
        M or more actuated joints (default the model's actuators when there are
        at least M; least-norm loads when more).
    on_failure : {"raise", "nan"}
        Raise for a state the model cannot evaluate, or give it NaN and a
        :class:`kic.Status` (:attr:`Sensitivities.status`).

    Returns
    -------
    Sensitivities

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> fb = mechanisms.five_bar()
    >>> s = kic.sensitivities(fb, [kic.Length("elbow1"), kic.Mass("coupler1")],
    ...                       [[2.0, 1.2], [1.9, 1.1]])
    >>> s.inertia.shape, s.actuator_loads.shape
    ((2, 2, 2, 2), (2, 2, 2))
    """
    return DesignSensitivity(model, parameters)(q, qd, qdd, actuators, on_failure)
