"""Design batches: one mechanism's structure, many sets of dimensions and masses.

A closed model flattened for the compiled kernels (:mod:`kic.closed_plan`) is
two buffers: integers (the structure: the tree, the loops, the blocks of
dependent joints) and floats (the numbers: joint origins, masses, centroids,
inertias, closure frames, gravity, the characteristic length).  A
:class:`DesignBatch` keeps one structure and a (D, F) stack of float buffers,
one per design, with each design's reference joint values and assembly mode;
:meth:`DesignBatch.loads` evaluates every design at a batch of poses in one
compiled call, without building a model per design.

Three ways to make one:

* :meth:`DesignBatch.from_models`: models built by the user (any builder, any
  ``kic.Mechanism``), checked to share one structure;
* :meth:`DesignBatch.from_builder`: a builder called once per design with
  keyword arguments taken from arrays (designs whose build raises a kic error
  are kept as infeasible: every pose fails, as data);
* a vectorized writer (``mechanisms.five_bar_designs``,
  ``mechanisms.stewart_designs``): :meth:`DesignBatch.from_template` copies one
  model's numbers D times, the writer sets each design's by field name through
  :attr:`DesignBatch.fields` and its reference configuration through
  :meth:`DesignBatch.set_reference`: no model is built per design.

Failures are data: a design or pose that fails has NaN outputs and a
:class:`kic.Status` (never an exception for one bad design).

The compiled kernels (numba) evaluate the batch; with the numpy backend
(``kic.set_backend("numpy")`` or no numba) the same call loops over the
designs in Python and evaluates each design's :class:`kic.ClosedModel` through
its public API (built on demand when the batch came from a builder or a
writer): the same numbers, at the cost of a model per design.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .closed_eval import design_loads
from .closed_plan import (ClosedPlan, float_fields, joint_indices, plan_from_model,
                          reference_length)
from .errors import KicError, ModelError, Status

__all__ = ["DesignBatch", "DesignLoads"]


@dataclass(frozen=True)
class DesignLoads:
    """Loads of D designs at n poses (per-configuration results, SI units).

    Attributes
    ----------
    loads : ndarray (D, n, M) or (D, n, K, M)
        Required coordinate loads ``T_q = I* q'' + q'^T P* q' + T_gravity``
        (N m, N); with ``accelerations`` one row per acceleration (K).
    actuator_loads : ndarray (D, n, Na) or (D, n, K, Na), or None
        Loads of the actuated joints (N m, N): ``(G^a)^T tau_a = T_q``,
        least-norm when Na > M; None when no actuators were asked for.
    inertia : ndarray (D, n, M, M)
        Effective inertia ``I*_q`` (kg m^2, kg, kg m).
    bias : ndarray (D, n, M)
        The loads at ``q'' = 0``: ``q'^T P* q' + T_gravity`` (N m, N).
    phi : ndarray (D, n, N)
        All joint values (rad, m); NaN where not assembled.
    status : ndarray (D, n) of int
        :class:`kic.Status`: 0 ok, 1 not assembled (or an infeasible design),
        2 singular closure, 3 singular actuation (the coordinate loads are
        still given, the actuator loads are NaN), 4 another assembly mode, 5
        outside the joint limits (the structure's, :attr:`DesignBatch.limits`:
        every output NaN); a status the caller knew (e.g. 1 from a closed-form
        inverse kinematics) is passed through.
    actuation_condition : ndarray (D, n)
        2-norm condition number of the actuation Jacobian ``G^a_q``
        (actuator rates per coordinate rate) made dimensionless with the
        design's characteristic length (prismatic coordinates times it,
        prismatic actuators divided by it); scale-invariant; NaN without
        actuators or where the pose failed before it.
    """

    loads: np.ndarray
    actuator_loads: np.ndarray | None
    inertia: np.ndarray
    bias: np.ndarray
    phi: np.ndarray
    status: np.ndarray
    actuation_condition: np.ndarray

    @property
    def ok(self) -> np.ndarray:
        """(D, n) bool: the pose was evaluated (status OK)."""
        return self.status == Status.OK


def _structure(plan: ClosedPlan) -> tuple:
    return (plan.args[1].tobytes(), tuple(plan.phi_names), tuple(plan.coordinate_names),
            plan.args[0].shape[0])


class DesignBatch:
    """D designs of one mechanism structure (picklable).

    Attributes
    ----------
    plan : kic.closed_plan.ClosedPlan
        The structure (and the numbers of a template design).
    floats : ndarray (D, F)
        One float buffer per design (layout :data:`kic.closed_plan.FLOAT_FIELDS`).
    reference_phi : ndarray (D, N)
        Each design's reference joint values (rad, m); NaN for an infeasible design.
    modes : ndarray (D, B)
        Each design's assembly mode (sign of ``det A`` per block of dependent joints).
    feasible : ndarray (D,) bool
        False where the design could not be built (its poses fail with status 1).
    actuators : tuple of str
        The default actuated joints.
    parameters : dict of ndarray (D,)
        The design parameters (as given to the builder or writer), if known.
    limits : kic.limits.JointLimits or None
        The structure's joint limits (its first model's, or the template's),
        shared by the designs; :meth:`loads` reports poses outside them as
        ``Status.OUTSIDE_LIMITS``.  None: no limit.
    """

    def __init__(self, plan: ClosedPlan, floats, reference_phi, modes, feasible=None,
                 actuators: Sequence[str] = (), parameters: Mapping | None = None,
                 build: Callable | None = None, models: Sequence | None = None,
                 guess: Callable | None = None, limits=None) -> None:
        self.plan = plan
        self.floats = np.ascontiguousarray(floats, dtype=np.float64)
        D = self.floats.shape[0]
        if self.floats.shape != (D, plan.args[0].shape[0]):
            raise ModelError(f"floats must have shape (D, {plan.args[0].shape[0]}), got "
                             f"{self.floats.shape}")
        self.reference_phi = np.asarray(reference_phi, dtype=float).reshape(D, plan.N)
        self.modes = np.ascontiguousarray(modes, dtype=np.float64).reshape(D, plan.n_blocks)
        self.feasible = (np.ones(D, bool) if feasible is None
                         else np.asarray(feasible, bool).reshape(D))
        self.actuators = tuple(actuators)
        self.parameters = {k: np.asarray(v) for k, v in (parameters or {}).items()}
        self._build = build
        self._models = None if models is None else list(models)
        self.guess = guess
        # the structure's joint limits (kic.limits.JointLimits, shared by the designs;
        # None: none), checked at every assembled pose of loads()
        self.limits = limits if limits is not None and limits.checked else None

    # -------------------------------------------------------------- making
    @classmethod
    def from_models(cls, models: Sequence, parameters: Mapping | None = None) -> "DesignBatch":
        """The batch of already built models (one per design, in order).

        Raises
        ------
        kic.ModelError
            No model, a model the compiled kernels cannot take (coordinate
            functions, loops reduced per configuration), or a design whose
            structure differs from the first's (joints, coordinates, loops,
            blocks): the message names the first such design.
        """
        models = list(models)
        if not models:
            raise ModelError("from_models: no models given")
        plans = []
        for d, m in enumerate(models):
            p = plan_from_model(m)
            if p is None:
                raise ModelError(f"from_models: design {d} ({getattr(m, 'name', m)!r}) cannot "
                                 "be flattened (coordinate-function closures or loops reduced "
                                 "per configuration): no design batch for it")
            plans.append(p)
        key = _structure(plans[0])
        for d, p in enumerate(plans[1:], start=1):
            if _structure(p) != key:
                what = ("joints" if tuple(p.phi_names) != key[1] else "coordinates"
                        if tuple(p.coordinate_names) != key[2] else "structure (tree, "
                        "loops, blocks)")
                raise ModelError(f"from_models: design {d} has another {what} than design 0; a "
                                 "design batch holds one structure with different numbers")
        modes = np.stack([np.asarray(m.block_mode, float).reshape(-1) for m in models])
        return cls(plans[0], np.stack([p.args[0] for p in plans]),
                   np.stack([m.reference_phi for m in models]), modes,
                   actuators=tuple(getattr(models[0], "actuators", ()) or ()),
                   parameters=parameters, models=models, limits=models[0].limits)

    @classmethod
    def from_builder(cls, build: Callable, parameters: Mapping) -> "DesignBatch":
        """Call ``build(**{name: values[d]})`` for every design d.

        ``parameters`` maps keyword names of ``build`` to arrays (D,) (or
        scalars, shared).  A design whose build raises a kic error
        (:class:`kic.ModelError`, :class:`kic.ClosureError`, ... : e.g. a linkage
        that never closes) is kept as infeasible.
        """
        params = {k: np.asarray(v) for k, v in parameters.items()}
        D = int(np.broadcast_shapes(*(v.shape for v in params.values()))[0]) if params else 0
        params = {k: np.broadcast_to(v, (D,)) for k, v in params.items()}
        models, feasible = [], np.zeros(D, bool)
        for d in range(D):
            try:
                models.append(build(**{k: v[d].item() for k, v in params.items()}))
                feasible[d] = True
            except KicError:          # ModelError, ClosureError, SingularityError
                models.append(None)
        good = [m for m in models if m is not None]
        if not good:
            raise ModelError("from_builder: no design could be built")
        first = cls.from_models(good, None)
        floats = np.tile(first.floats[0], (D, 1))
        ref = np.full((D, first.plan.N), np.nan)
        modes = np.tile(first.modes[0], (D, 1))
        floats[feasible], ref[feasible], modes[feasible] = (first.floats, first.reference_phi,
                                                            first.modes)
        return cls(first.plan, floats, ref, modes, feasible, first.actuators, params, build,
                   models, limits=first.limits)

    @classmethod
    def from_template(cls, template, designs: int, *, parameters: Mapping | None = None,
                      build: Callable | None = None,
                      guess: Callable | None = None) -> "DesignBatch":
        """``designs`` copies of one model's numbers, for a writer to set by name.

        Parameters
        ----------
        template : kic.ClosedModel or DesignBatch
            The structure and the numbers copied: a model, or a batch whose
            first design is one (a writer keeps that batch to flatten its
            template once).
        designs : int
            D, the number of copies.
        parameters, build, guess
            As in the constructor: the design parameters (arrays (D,)), the
            builder of one design's model (the numpy path), the closed-form
            start of every pose.

        Returns
        -------
        DesignBatch
            D designs equal to the template (its reference configuration,
            assembly mode and actuators), all feasible.  A writer sets each
            design's numbers through :attr:`fields`, its reference through
            :meth:`set_reference`, and marks the designs it cannot build in
            :attr:`feasible`.
        """
        if not isinstance(template, DesignBatch):
            template = cls.from_models([template])
        D = int(designs)
        if D < 1:
            raise ModelError(f"from_template: the number of designs must be >= 1, got {D}")
        tile = lambda a: np.repeat(a[:1], D, axis=0)          # noqa: E731
        return cls(template.plan, tile(template.floats), tile(template.reference_phi),
                   tile(template.modes), None, template.actuators, parameters, build,
                   guess=guess, limits=template.limits)

    @property
    def fields(self) -> dict:
        """Each design's numbers by field name: views (D, ...) into :attr:`floats`
        (layout :data:`kic.closed_plan.FLOAT_FIELDS`: ``origin`` (D, N, 4, 4) the
        joint frames in their parents' body frames, ``mass`` (D, N), ``com``
        (D, N, 3), ``inertia`` (D, N, 3, 3) of the body each joint carries
        (``plan.body_names``), ``T_b`` (D, L, 4, 4) the closures' frames on
        their B sides, ``gravity`` (D, 3), ...).  Writing into a view writes
        the designs' buffers."""
        return float_fields(self.plan, self.floats)

    def set_reference(self, phi) -> None:
        """Set each design's reference joint values (D, N) (rad, m) and, from
        them, its characteristic length (the largest distance between two joint
        origins or a joint origin and the world origin, as
        ``ClosedModel.characteristic_length``), which makes its closure
        residuals and condition numbers dimensionless.  Set the numbers of
        :attr:`fields` first: the length is measured with them."""
        D, N = len(self), self.plan.N
        phi = np.asarray(phi, dtype=float)
        if phi.shape != (D, N):
            raise ModelError(f"reference joint values must have shape ({D}, {N}), got "
                             f"{phi.shape}")
        f = self.fields
        f["scale"][:, 0] = reference_length(self.plan, f, phi)
        self.reference_phi[...] = phi

    # ---------------------------------------------------------- description
    def __len__(self) -> int:
        return self.floats.shape[0]

    def __repr__(self) -> str:
        return (f"DesignBatch({len(self)} designs, joints {list(self.plan.phi_names)}, "
                f"coordinates {list(self.plan.coordinate_names)}, "
                f"{int(self.feasible.sum())} feasible)")

    @property
    def dof(self) -> int:
        return self.plan.dof

    def model(self, d: int):
        """The :class:`kic.ClosedModel` of design d (built on first use from the
        builder, or the one given); None for an infeasible design."""
        if not self.feasible[d]:
            return None
        if self._models is None:
            self._models = [None] * len(self)
        if self._models[d] is None:
            if self._build is None:
                raise ModelError("this design batch has no models and no builder: without "
                                 "the compiled kernels a design is evaluated by its model; "
                                 "pass build= (e.g. to DesignBatch.from_template)")
            self._models[d] = self._build(**{k: v[d].item() for k, v in self.parameters.items()})
        return self._models[d]

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._build is not None:
            state["_models"] = None          # rebuilt on demand where needed
        return state

    # --------------------------------------------------------- evaluation
    def _designs(self, a, width: int, name: str, extra: int = 0) -> np.ndarray:
        """``a`` as (D or 1, n or 1, [K,] width) float64 C-contiguous."""
        a = np.asarray(a, dtype=np.float64)
        want = 3 + extra
        if a.ndim == 0 or a.shape[-1] != width:
            raise ModelError(f"{name} must end in {width} values, got shape {a.shape}")
        while a.ndim < want:
            a = a[None]
        if a.ndim != want or a.shape[0] not in (1, len(self)):
            raise ModelError(f"{name} must have shape ({len(self)} designs or 1, n, "
                             f"{'K, ' if extra else ''}{width}), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ModelError(f"{name} contains NaN or infinite values")
        return np.ascontiguousarray(a)

    def loads(self, q, qd, qdd=None, *, accelerations=None, actuators=None, start=None,
              skip=None) -> DesignLoads:
        """Loads of every design at poses ``q``.

        Parameters
        ----------
        q, qd : array_like (D, n, M), (n, M) or (M,)
            Coordinates (rad, m) and rates; without a design axis shared by
            all designs.
        qdd : array_like (D, n, M), (n, M) or (M,)
            One acceleration per pose; or
        accelerations : array_like (K, M)
            K accelerations applied at every pose (the outputs get a K axis):
            per pose the loads are affine in q'', so I* and the bias are
            formed once and each acceleration costs a matrix-vector product.
        actuators : sequence of str, optional
            Actuated joints for ``actuator_loads`` (default :attr:`actuators`;
            ``()`` for none).
        start : array_like (D, n, N) or (n, N), optional
            Start values of every joint for the assembly; default the batch's
            ``guess`` (a closed form, for the built-in writers), else each
            pose from its design's reference configuration (never from
            another pose: a pose's answer does not depend on its batch-mates).
            The poses a start loses (not assembled, or in another mode) are
            solved again from the batch's ``guess``, or the design's model's
            guess function where the batch holds its models, else (starts
            from the reference) by the model's continuation from its
            reference, pose by pose (as ``ClosedModel`` does); otherwise they
            keep their status (``OTHER_MODE``: never silently another mode).
        skip : array_like (D, n) of int, optional
            Statuses known beforehand (nonzero: the pose is not evaluated and
            keeps it).

        Returns
        -------
        DesignLoads
        """
        D, M, N = len(self), self.dof, self.plan.N
        qa = self._designs(q, M, "q")
        n = qa.shape[1]
        qda = self._designs(qd, M, "qd")
        if (qdd is None) == (accelerations is None):
            raise ModelError("give either qdd (one acceleration per pose) or accelerations "
                             "(K, M) applied at every pose")
        if accelerations is not None:
            acc = np.asarray(accelerations, dtype=float)
            if acc.ndim != 2 or acc.shape[1] != M:
                raise ModelError(f"accelerations must have shape (K, {M}), got {acc.shape}")
            xa = self._designs(acc[None, None], M, "accelerations", extra=1)
        else:
            xa = self._designs(qdd, M, "qdd")[:, :, None, :]
        for a, name in ((qda, "qd"), (xa, "qdd")):
            if a.shape[1] not in (1, n):
                raise ModelError(f"{name} has {a.shape[1]} poses for {n} poses of q")
        names = self.actuators if actuators is None else tuple(actuators)
        act = (joint_indices(self.plan, names) if names else np.zeros(0, np.int64))
        if act.size and act.size < M:
            raise ModelError(f"actuators must name at least {M} joints, got {list(names)}")
        guessed = start is None and self.guess is not None
        if guessed:
            start = self.guess(self.parameters, np.broadcast_to(qa, (D, n, M)))
        own = start is None          # each pose from its design's reference, as alone
        if own:
            phi0 = self.reference_phi[:, None, :]
        else:
            phi0 = np.asarray(start, dtype=float)
            if phi0.ndim == 2:
                phi0 = phi0[None]
            if phi0.ndim != 3 or phi0.shape[0] not in (1, D) or phi0.shape[1] not in (1, n) \
                    or phi0.shape[2] != N:
                raise ModelError(f"start must have shape ({D}, {n}, {N}) or ({n}, {N}), got "
                                 f"{phi0.shape}")
        sk = np.zeros((D, n), np.int64) if skip is None else \
            np.array(np.broadcast_to(np.asarray(skip, np.int64), (D, n)))
        sk[~self.feasible] = int(Status.UNASSEMBLABLE)
        # a start that is not finite (a closed form out of reach) cannot be evaluated
        bad = ~np.all(np.isfinite(np.broadcast_to(phi0, (D, n, N))), axis=-1) & (sk == 0)
        sk[bad] = int(Status.UNASSEMBLABLE)
        phi0 = np.ascontiguousarray(np.where(np.isfinite(phi0), phi0, 0.0))
        out = design_loads(self.plan.args[1], self.floats, qa, qda, xa, act, phi0, False,
                           self.modes, sk)
        if out is not None:
            T, Ta, I, phi, status, _, _, acond = out
            self._retry_with_guess(qa, qda, xa, act, (T, Ta, I, phi, status, acond), sk,
                                   guessed, own)
        else:
            T, Ta, I, phi, status, acond = self._numpy_loads(qa, qda, xa, act, phi0, own, sk)
        if self.limits is not None:          # the one test of kic.limits, per pose
            status = self.limits.status(phi, status)
            outside = status == Status.OUTSIDE_LIMITS
            if outside.any():
                for a in (T, Ta, I, phi, acond):
                    a[outside] = np.nan
        bias = T[:, :, 0, :] - np.einsum("dnab,dnb->dna", I,
                                         np.broadcast_to(xa[:, :, 0, :], (D, n, M)))
        if accelerations is None:
            T, Ta = T[:, :, 0], Ta[:, :, 0]
        return DesignLoads(T, Ta if act.size else None, I, bias, phi, status.astype(int),
                           acond)

    def _retry_with_guess(self, qa, qda, xa, act, outputs, skip, guessed: bool,
                          own: bool) -> None:
        """Poses the starts lost (not assembled, or in another mode: from the
        reference, or the caller's starts): again from the batch's ``guess`` (unless
        the starts were that guess, ``guessed``), else from the design's model's
        guess function where the batch holds its models, else (starts from the
        reference, ``own``) by the model's continuation from its reference, pose by
        pose as alone, as ``ClosedModel`` does (in place; the numpy path gets this
        from the models themselves)."""
        from .assembly import assemble, first_guess
        status = outputs[4]
        lost = ((status == Status.UNASSEMBLABLE) | (status == Status.OTHER_MODE)) & (skip == 0)
        if not lost.any():
            return
        D, n, N = len(self), skip.shape[1], self.plan.N
        retry = np.zeros((D, n), bool)
        phi0 = np.zeros((D, n, N))
        if self.guess is not None and not guessed:
            g = np.asarray(self.guess(self.parameters, np.broadcast_to(qa, (D, n, self.dof))))
            retry = lost & np.all(np.isfinite(g), axis=-1)
            phi0[retry] = g[retry]
        for d in np.nonzero((lost & ~retry).any(axis=1))[0]:
            m = None if self._models is None else self._models[d]
            if m is None or getattr(m, "guess", None) is None:
                continue
            idx = np.nonzero(lost[d] & ~retry[d])[0]
            q = np.broadcast_to(qa[d if qa.shape[0] > 1 else 0], (n, self.dof))[idx]
            phi0[d, idx] = first_guess(m.system, q, m.reference_phi, None, m.guess)
            retry[d, idx] = True
        for d in np.nonzero((lost & ~retry).any(axis=1))[0] if own else ():
            m = self.model(d) if self._build is not None or self._models is not None else None
            if m is None or getattr(m, "guess", None) is not None:
                continue
            idx = np.nonzero(lost[d] & ~retry[d])[0]
            q = np.broadcast_to(qa[d if qa.shape[0] > 1 else 0], (n, self.dof))[idx]
            asm = assemble(m.system, q, m.mode, m.reference_phi, None, None)
            phi0[d, idx[asm.ok]] = asm.phi[asm.ok]
            retry[d, idx[asm.ok]] = True
        if not retry.any():
            return
        sk = np.where(retry, 0, -1).astype(np.int64)
        again = design_loads(self.plan.args[1], self.floats, qa, qda, xa, act, phi0, False,
                             self.modes, sk)
        again = (again[0], again[1], again[2], again[3], again[4], again[7])
        for mine, new in zip(outputs, again):
            mine[retry] = new[retry]

    def _numpy_loads(self, qa, qda, xa, act, phi0, own, skip):
        """The numpy backend: each design's model through its public API."""
        from .actuation import load_distribution
        from .loops import scaled_condition
        D, n, M, N, K, Na = len(self), skip.shape[1], self.dof, self.plan.N, xa.shape[2], \
            act.size
        T = np.full((D, n, K, M), np.nan)
        Ta = np.full((D, n, K, Na), np.nan)
        I = np.full((D, n, M, M), np.nan)
        phi = np.full((D, n, N), np.nan)
        status = skip.copy()
        acond = np.full((D, n), np.nan)
        names = [self.plan.phi_names[i] for i in act]
        lengths = self.fields["scale"][:, 0]
        for d in range(D):
            todo = np.nonzero(skip[d] == 0)[0]
            if todo.size == 0:
                continue
            m = self.model(d)
            pick = lambda a: np.broadcast_to(a[d if a.shape[0] > 1 else 0],  # noqa: E731
                                              (n,) + a.shape[2:])[todo]
            q, qd, x = pick(qa), pick(qda), pick(xa)
            asm = m.assembly(q, None if own else pick(phi0))
            st = np.asarray(asm.status, int)
            ok = st == 0
            if ok.any():
                idx = todo[ok]
                qo, qdo, xo, po = q[ok], qd[ok], x[ok], asm.phi[ok]
                # per pose once: the bias (q'' = 0), I*, G; the K accelerations by
                # products (the loads are affine in q'', the actuators' linear in T)
                bias, s2 = m.inverse_dynamics(qo, qdo, 0 * qdo, on_failure="nan", start=po)
                s2 = np.asarray(s2, int)
                st[ok] = s2
                good = s2 == 0
                gi = idx[good]
                phi[d, idx] = np.where(np.isin(s2, (0, 3, 4))[:, None], po, np.nan)
                if good.any():
                    Ig = m.dynamics(qo[good], start=po[good]).I_star
                    Tk = bias[good][:, None, :] + np.einsum("nab,nkb->nka", Ig, xo[good])
                    T[d, gi] = Tk
                    I[d, gi] = Ig
                    if Na:
                        G = m.kinematics(qo[good], order=1, start=po[good]).transfer.G
                        Ga = G[:, act, :]
                        prism = ~self.plan.is_revolute
                        # the batch's characteristic length (a writer's may differ from
                        # the builder's, whose reference configuration can differ)
                        acond[d, gi] = scaled_condition(Ga, prism[act], prism[self.plan.q_idx],
                                                        lengths[d])
                        # the model's own rule says which actuations are singular
                        s3 = np.asarray(m.actuator_loads(qo[good], qdo[good], 0 * qdo[good],
                                                         names, on_failure="nan",
                                                         start=po[good])[1], int)
                        reg = s3 == 0
                        if Na == M:
                            f = np.linalg.solve(np.swapaxes(Ga[reg], -1, -2)[:, None],
                                                Tk[reg][..., None])[..., 0]
                        else:
                            f = load_distribution(np.repeat(Ga[reg], K, axis=0),
                                                  Tk[reg].reshape(-1, M)).reshape(-1, K, Na)
                        Ta[d, gi[reg]] = f
                        st[np.nonzero(ok)[0][good]] = s3
            status[d, todo] = st
        return T, Ta, I, phi, status, acond
