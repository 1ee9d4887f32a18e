"""The closed model: a mechanism's dynamics in the coordinates the user chose.

The front end over the stages of the closed layer, data flowing one way:

* :mod:`kic.coordinates`: what q is (joints, :class:`BodyPose`,
  :class:`PointPosition`, :class:`CoordinateFunction`);
* :mod:`kic.loops`: the open chains of the spanning tree, the cut joints and
  their closure rows, blocks and mobility (:class:`kic.loops.LoopSystem`);
* :mod:`kic.assembly`: phi at q (batched Newton, assembly modes, warm starts);
* :mod:`kic.transfer`: G^phi_q, H^phi_qq, D^phi_qqq (:func:`closure_transfer`);
* here: the transferred model, ``I*_q = sum_c G_c^T I*_c G_c`` etc., with the
  same interface as :class:`kic.SerialChain`.

A model is a constant description: its answer at q never depends on earlier
calls, nor on the other configurations of a batch (a batch equals its
configurations asked one by one, bit for bit: :mod:`kic.assembly`).  Where
several assemblies exist, the model's assembly mode decides
(:attr:`ClosedModel.mode`) and every assembled configuration is checked to be
in it.  Every evaluation at a pose checks the assembled joint values against
the joint limits (:attr:`ClosedModel.limits`, ``Status.OUTSIDE_LIMITS``).
Batched calls take ``on_failure="nan"`` to return NaN plus a
:class:`kic.Status` per configuration instead of raising.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._array import blocks, from_batch, match_batch, numeric
from .assembly import Assembly, assemble, project
from .backend import use_compiled
from .closed_eval import NumpyEvaluation, evaluation_for
from .coordinates import BodyPose, CoordinateFunction, PointPosition, apply_coordinates
from .dynamics import DynamicModel
from .errors import ModelError, located
from .joint_space import joint_space_dynamics
from .kinematics import Influence
from .limits import JointLimits
from .loops import LoopSystem, scaled_condition
from .settings import MAX_CONDITION
from .transfer import Transfer, closure_transfer

__all__ = ["ClosedModel", "ClosedKinematics", "ClosedDynamics", "BodyPose", "PointPosition",
           "CoordinateFunction"]

_FAILURE_MODES = ("raise", "nan")


def _positive_length(length) -> float:
    """A characteristic length given for a model (m): positive and finite."""
    try:
        value = float(length)
    except (TypeError, ValueError):
        value = float("nan")
    if not (np.isfinite(value) and value > 0.0):
        raise ModelError(f"characteristic_length must be a positive, finite length (m), got "
                         f"{length!r}")
    return value


def _closure_jacobians(model, phi: np.ndarray) -> np.ndarray:
    """``dc/dphi`` (n, R, N) of ``model`` at joint values phi (n, N): the compiled
    kernels' (microseconds a pose) where its evaluation is compiled and they cover
    its closures, else :meth:`kic.loops.LoopSystem.jacobian` (the same matrix to
    rounding; a tenth of a millisecond a pose and more)."""
    rows = model.evaluation.closure_rows(phi)
    return model.system.jacobian(phi) if rows is None else rows[1]


def _compiled_closure(model):
    """What :func:`kic.assembly.project` iterates on for ``model``: the compiled
    rows ``phi -> (worst scaled residual, r, J)`` where its evaluation is compiled
    (the worst of the reduced rows, lengths over L: the raw rows beyond them vanish
    for a loop reduced so), else None (the numpy loops')."""
    ev = model.evaluation
    if not ev.compiled or ev.plan is None:
        return None
    scale = np.where(_length_rows(model), 1.0 / model.system.length, 1.0)

    def closure(phi):
        r, J = ev.closure_rows(phi)
        return np.abs(r * scale).max(axis=1, initial=0.0), r, J
    return closure


def _length_rows(model) -> np.ndarray:
    """Which reduced closure rows (R,) of ``model``, in loop order, are lengths (m)."""
    rows = model.__dict__.get("_lengths")
    if rows is None:
        loops = model.system.loops
        rows = model._lengths = (np.concatenate([l.length_rows() for l in loops])
                                 if loops else np.zeros(0, bool))
    return rows


def _candidate_sets(model, max_candidates: int) -> tuple:
    """What :meth:`ClosedModel.best_coordinates` scores, built once per model: the
    candidate sets of M joints (in joint order), the dependent joints of each
    (sets, N - M), the sets grouped by the pattern of prismatic dependent joints
    ((indices, pattern) pairs), and which closure rows are lengths."""
    from math import comb

    built = model.__dict__.get("_candidates")
    N, M = model.N, model.dof
    count = comb(N, M)
    if built is not None and count <= max_candidates:
        return built
    s = model.system
    physical = [i for i, n in enumerate(s.phi_names) if n in model.mechanism.primitive_joints]
    if len(physical) != N:
        raise ModelError("coordinate selection takes a model in joint coordinates, not "
                         f"{model.coordinate_names}")
    if count > max_candidates:
        raise ModelError(f"{count} candidate sets of {M} of {N} joints: more than "
                         f"max_candidates={max_candidates}")
    from itertools import combinations
    sets = list(combinations(range(N), M))
    deps = np.array([[d for d in range(N) if d not in c] for c in sets], int)
    deps = deps.reshape(len(sets), N - M)
    patterns = s.is_prismatic[deps]
    grouped: dict = {}
    for k, pattern in enumerate(patterns):
        grouped.setdefault(pattern.tobytes(), []).append(k)
    groups = [(np.array(same), patterns[same[0]]) for same in grouped.values()]
    built = model._candidates = (sets, deps, groups, _length_rows(model))
    return built


class ClosedModel:
    """The dynamic model of a mechanism in chosen coordinates (transferred).

    Same interface as :class:`kic.SerialChain` (``kinematics``, ``dynamics``,
    ``inverse_dynamics``, ``forward_dynamics``, ``gravity_load``, energies,
    works with :func:`kic.simulate` and :func:`kic.linear_dynamics`), plus the
    position-level closure (:meth:`assemble`), actuator loads and singularity
    queries (:meth:`condition`).  Built by :meth:`kic.Mechanism.model`.

    Every evaluation at a pose (``assemble``, the dynamics, ``actuator_loads``,
    ``actuator_jacobian``, ``joint_rates``, ``kinematics``, ``dynamics``,
    ``condition``) raises a :class:`kic.ClosureError` naming the joint, its value,
    its range and the batch indices where the assembled joint values violate
    :attr:`limits`, or with ``on_failure="nan"`` gives NaN and
    ``Status.OUTSIDE_LIMITS``; :meth:`assembly` reports the closure alone.

    Attributes
    ----------
    dof : int
        Number M of coordinates q.
    coordinate_names : list of str
    coordinates : tuple
        The coordinates as given to :meth:`kic.Mechanism.model` (joint names
        and coordinate objects), e.g. to model the same coordinates on a
        changed description (:mod:`kic.sensitivity`).
    phi_names : list of str
        The initial coordinates: every primitive joint (and virtual joint).
    mechanism : Mechanism
    loops : list of str
        The cut joints (or virtual closures), one per loop.
    mode : tuple of int
        The assembly mode: the sign (+1/-1) of ``det A`` (``A = dc/dp``) of
        each diagonal block of each block's fine block-triangular form
        (:attr:`mode_parts`), 0 where not defined.  Fixed at the reference
        configuration unless given.
    reference_phi : ndarray (N,)
        The assembled reference configuration.
    characteristic_length : float
        L (m): the largest distance between two joints at the reference (or
        as given to :meth:`in_coordinates`); condition numbers and closure
        tolerances are made dimensionless with it.
    max_condition : float
        Dimensionless condition number of a dependent-joint Jacobian above
        which a configuration is reported as singular
        (:class:`kic.SingularityError`); default 1e6 (beyond it about 10
        significant digits are lost).
    guess : callable or None
        ``guess(q) -> phi`` (n, N): a first guess for the position solver.
    """

    max_condition = MAX_CONDITION

    def __init__(self, mech, coordinates, reference=None, guess=None,
                 cuts: Sequence[str] = (), name: str | None = None, mode=None,
                 length: float | None = None) -> None:
        self.mechanism = mech
        self.name = name or mech.name
        self.guess = guess
        single = (str, BodyPose, PointPosition, CoordinateFunction)
        self.coordinates = (coordinates,) if isinstance(coordinates, single) \
            else tuple(coordinates)
        setup = apply_coordinates(mech, self.coordinates)
        self.system = LoopSystem(setup, cuts)
        phi0 = self.system.reference_phi(reference, mech.primitive_joints)
        self.system.prepare(phi0)
        if length is not None:          # one scale for the models of one mechanism
            self.system.length = _positive_length(length)
        found = self.system.mode(phi0[None])[0]
        defined = np.array([not any(self.system.loops[i].reduction == "svd"
                                    for i in self.system.blocks[b].loops)
                            for b, _, _ in self.system.mode_parts], bool)
        if np.any(defined & (found == 0)):
            raise ModelError(f"the reference configuration of {self.name or 'the model'} is "
                             "singular for the coordinates "
                             f"{self.system.coordinate_names}: give a regular reference")
        if mode is not None:
            phi0 = self._reference_in_mode(phi0, found, mode, defined)
            found = self.system.mode(phi0[None])[0]
        phi0.setflags(write=False)
        self.reference_phi = phi0
        self._mode = np.ascontiguousarray(found, dtype=float)
        # the compiled kernels check det A per block; where blocks refine, the finer
        # signs are checked on their results (kic.closed_eval)
        self._block_mode = np.ascontiguousarray(self.system.block_mode(self._mode))
        physical = set(mech.primitive_joints)
        names = self.system.coordinate_names
        self.actuators = list(names) if all(n in physical for n in names) else []
        self._limits = JointLimits(mech, self.system.phi_names)

    def _reference_in_mode(self, phi0, found, mode, defined) -> np.ndarray:
        want = np.asarray(mode, dtype=float).ravel()
        if want.shape != found.shape or not np.all(np.isin(want, (-1.0, 1.0)) | ~defined):
            raise ModelError(f"mode must give +1 or -1 for each of the {found.size} parts "
                             f"{self.mode_parts} of the blocks, got {mode!r}")
        if np.all((want == found) | ~defined):
            return phi0
        if self.guess is not None:
            asm = assemble(self.system, phi0[self.system.q_idx][None], want, phi0,
                           guess=self.guess)
            if asm.ok[0]:
                return asm.phi[0].copy()
        raise ModelError(f"the reference configuration is in mode {tuple(int(s) for s in found)}"
                         f", not the requested {tuple(int(s) for s in want)}: give a reference "
                         "(or a guess function) in the requested mode")

    # ----------------------------------------------------------- description
    @property
    def coordinate_names(self) -> list:
        return list(self.system.coordinate_names)

    @property
    def dof(self) -> int:
        return self.system.dof

    @property
    def phi_names(self) -> list:
        return list(self.system.phi_names)

    @property
    def N(self) -> int:
        return self.system.N

    @property
    def loops(self) -> list:
        return list(self.system.loop_names)

    @property
    def mobility(self) -> int:
        return self.system.mobility

    @property
    def mode(self) -> tuple:
        return tuple(int(s) for s in self._mode)

    @property
    def mode_parts(self) -> list:
        """The joints whose det sign each entry of :attr:`mode` is: the dependent
        joints of each diagonal block of the blocks' fine block-triangular form."""
        return [[self.system.phi_names[self.system.blocks[b].joints[c]] for c in cols]
                for b, _, cols in self.system.mode_parts]

    @property
    def block_mode(self) -> tuple:
        """The sign of det A of each whole block (the products of :attr:`mode`'s
        entries block by block; what the compiled kernels check)."""
        return tuple(int(s) for s in self._block_mode)

    @property
    def limits(self) -> JointLimits:
        """The mechanism's joint limits when the model was built (read-only
        mapping, with ``check(phi)``; :mod:`kic.limits`)."""
        limits = self.__dict__.get("_limits")
        return JointLimits(self.mechanism, self.phi_names) if limits is None else limits

    @property
    def blocks(self) -> list:
        """The blocks of dependent joints: (loop names, joint names) each."""
        s = self.system
        return [([s.loops[i].name for i in b.loops], [s.phi_names[d] for d in b.joints])
                for b in s.blocks]

    @property
    def characteristic_length(self) -> float:
        return self.system.length

    @property
    def reference(self) -> np.ndarray:
        """The coordinates q (M,) of the reference configuration."""
        return self.reference_phi[self.system.q_idx].copy()

    @property
    def open_chains(self) -> list:
        """The open chains of the initial model: (SerialChain, phi indices) each."""
        return list(zip(self.system.chains, self.system.chain_joints))

    @property
    def bodies(self) -> list:
        """The mechanism's bodies (ground excluded)."""
        return [b for b in self.mechanism.bodies if b != self.mechanism.ground]

    def joint_indices(self, names: Sequence[str]) -> np.ndarray:
        """Positions of the named joints in phi."""
        if isinstance(names, str):
            names = [names]
        out = []
        for n in names:
            if n not in self.system.index:
                raise ModelError(f"unknown joint {n!r}; joints are {self.phi_names}")
            out.append(self.system.index[n])
        return np.array(out, int)

    def split_loads(self, loads, phi=None, phid=None) -> list:
        """The parts of ``loads`` acting on each open chain (None where nothing acts).

        Elements between points on bodies of two different open chains need both
        poses: they are resolved into world forces at the joint values ``phi``
        (n, N) (and rates ``phid`` (n, N) where they are damped)."""
        return self.evaluation.split_loads(loads, phi, phid)

    def loads_energy_at(self, loads, phi) -> np.ndarray:
        """Potential energy (J) of the conservative ``loads`` at joint values phi
        (n, N) (springs, constant forces and joint torques, springs between points)."""
        return self.evaluation.loads_energy(loads, phi)

    def __repr__(self) -> str:
        return (f"<ClosedModel {self.name or ''} in {self.coordinate_names}: "
                f"{self.N} joints, {len(self.system.loops)} loops>")

    # -------------------------------------------------------------- inputs
    def _flat(self, q) -> tuple[np.ndarray, tuple]:
        q = numeric(q, "q")
        if q.ndim == 0 or q.shape[-1] != self.dof:
            raise ModelError(f"q must have shape (..., {self.dof}) for coordinates "
                             f"{self.coordinate_names}, got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise ModelError("q contains NaN or infinite values")
        return q.reshape(-1, self.dof), q.shape[:-1]

    @staticmethod
    def _check_failure_mode(on_failure: str) -> None:
        if on_failure not in _FAILURE_MODES:
            raise ModelError(f"on_failure must be 'raise' or 'nan', got {on_failure!r}")

    # ---------------------------------------------------------- evaluation
    def __getstate__(self) -> dict:
        # chosen again where the model is unpickled (another process, another backend)
        state = self.__dict__.copy()
        state.pop("_evaluations", None)
        return state

    @property
    def evaluation(self) -> NumpyEvaluation:
        """How this model is evaluated (:mod:`kic.closed_eval`): the compiled
        kernels with the numpy path as fallback, or the numpy path alone, chosen
        once for the backend in force (:func:`kic.set_backend`) and
        :attr:`max_condition` (chosen again only when either changes)."""
        key = (use_compiled(), self.max_condition)
        chosen = self.__dict__.get("_evaluations")
        if chosen is None:
            chosen = self._evaluations = {}
        ev = chosen.get(key)
        if ev is None or ev.model is not self:          # (a copy chooses its own)
            ev = chosen[key] = evaluation_for(self, self._mode, self._block_mode)
        return ev

    # ------------------------------------------------------------ assembly
    def assembly(self, q, start=None) -> Assembly:
        """Assemble at ``q`` (..., M) and say how each configuration fared.

        Never raises for a configuration: the result's ``status`` (...) holds
        a :class:`kic.Status` per configuration and ``phi`` (..., N) NaN where
        it failed.  The closure's report alone: the joint limits are not
        checked here (``self.limits.status(asm.phi, asm.status)`` adds them),
        so a path can be followed past them and a simulation decide what a
        limit means for it.

        Parameters
        ----------
        q : array_like (..., M)
        start : array_like (..., N) or (N,), optional
            Explicit warm start of every joint (e.g. the previous step of a path).
        """
        qf, batch = self._flat(q)
        return self.evaluation.assembly(qf, batch, start)

    def best_coordinates(self, phi, max_candidates: int = 5000) -> tuple[list, float]:
        """The set of M joint coordinates in which the closure is best conditioned
        at joint values phi (N,), and its condition number.

        Every candidate set of M physical joints is scored by the dimensionless
        2-norm condition number of the closure Jacobian's columns of the other
        joints (the dependent block, which the transfer inverts); the smallest
        wins, ties going to the earlier set in joint order (generalized
        coordinate partitioning: Wehage and Haug 1982, who pivot an LU
        factorization to find a good set; here every set is scored, which is
        exact for the few joints of a linkage).  The Jacobian is the compiled
        kernels' where the model's evaluation is compiled (:meth:`closure_jacobian`).

        Raises
        ------
        ModelError
            More than ``max_candidates`` sets (use a pivoted factorization, e.g.
            :func:`scipy.linalg.qr` with ``pivoting=True``, for large mechanisms).
        """
        phi = np.asarray(phi, dtype=float).reshape(self.N)
        sets, deps, groups, length_rows = _candidate_sets(self, max_candidates)
        key = (phi.tobytes(), use_compiled())
        last = self.__dict__.get("_last_best")
        if last is not None and last[0] == key:
            return list(last[1]), last[2]       # the same pose again (a retry from it)
        J = _closure_jacobians(self, phi[None])[0]
        s = self.system
        # one stacked call per pattern of prismatic dependent joints (one for a linkage
        # of revolute joints), as each set's own call would give
        cond = np.empty(len(sets))
        for same, pattern in groups:
            cond[same] = scaled_condition(np.moveaxis(J[:, deps[same]], 1, 0), length_rows,
                                          pattern, s.length)
        best = int(np.argmin(np.where(np.isnan(cond), np.inf, cond)))
        names = [s.phi_names[i] for i in sets[best]]
        self._last_best = (key, tuple(names), float(cond[best]))
        return names, float(cond[best])

    def joint_space_dynamics(self, phi, phid) -> tuple:
        """``(M, b, J, c)`` of ``M phi'' + b = J^T lambda``, ``J phi'' + c = 0`` at
        joint values and rates phi, phi' (..., N): see
        :func:`kic.joint_space.joint_space_dynamics`."""
        return joint_space_dynamics(self, phi, phid)

    def closure_jacobian(self, phi) -> np.ndarray:
        """The closure Jacobian ``dc/dphi`` (..., R, N) at joint values phi (..., N):
        the independent rows of every loop over every joint (coordinate selection
        works on it)."""
        phi = np.asarray(phi, dtype=float)
        if phi.shape[-1:] != (self.N,):
            raise ModelError(f"phi must have shape (..., {self.N}), got {phi.shape}")
        J = _closure_jacobians(self, phi.reshape(-1, self.N))
        return J.reshape(phi.shape[:-1] + J.shape[1:])

    def project(self, phi) -> tuple[np.ndarray, np.ndarray]:
        """The assembled joint values nearest to ``phi`` (..., N), whatever the
        coordinates: ``(phi, residual)``, the residual (...) dimensionless
        (lengths divided by :attr:`characteristic_length`); above
        :data:`kic.loops.TOLERANCE` where the closure was not reached.

        Minimum-norm Gauss-Newton over all joints (:func:`kic.assembly.project`),
        so it also works where no set of independent coordinates is regular
        (it is how :func:`kic.simulate` lands beyond a bifurcation).  Not checked
        against the model's assembly mode."""
        phi = np.asarray(phi, dtype=float)
        if phi.shape[-1:] != (self.N,):
            raise ModelError(f"phi must have shape (..., {self.N}), got {phi.shape}")
        out, worst = project(self.system, phi.reshape(-1, self.N), _compiled_closure(self))
        return out.reshape(phi.shape), worst.reshape(phi.shape[:-1])

    def assemble(self, q, start=None, on_failure: str = "raise"):
        """All joint values phi (..., N) at coordinates ``q`` (..., M), in the model's
        assembly mode.

        Each configuration is solved on its own (Newton from ``start``, else the
        model's ``guess`` function, else the reference; continuation from the
        nearest solved configuration where that fails), so the answer at q does
        not depend on the rest of the batch or on earlier calls.

        Parameters
        ----------
        q : array_like (..., M)
        start : array_like (..., N) or (N,), optional
            Explicit warm start.
        on_failure : {"raise", "nan"}
            ``"nan"``: return ``(phi, status)`` with NaN rows where a
            configuration failed.

        Raises
        ------
        ClosureError
            Some configurations cannot be assembled in the model's mode, or
            are outside the joint limits (:attr:`limits`,
            ``Status.OUTSIDE_LIMITS``); the message lists every failing index
            (``indices``, ``status``).
        """
        self._check_failure_mode(on_failure)
        if on_failure == "raise" and self.evaluation.limits is None:
            found = self.evaluation.track(q, start)
            if found is not None:                # one configuration, compiled
                return found[0]
        qf, batch = self._flat(q)
        fast = self.evaluation.assemble(qf, batch, start, on_failure)   # limits checked
        phi = fast[0].reshape(batch + (self.N,))
        return (phi, fast[1].reshape(batch)) if on_failure == "nan" else phi

    def condition(self, q, on_failure: str = "raise") -> np.ndarray:
        """Dimensionless 2-norm condition number of the dependent-joint Jacobian
        ``A = dc/dp`` (the worst block) at ``q`` (...): how well the closure
        determines the dependent joints from the coordinates; infinite where the
        coordinates fail (a singularity of the closure in these coordinates).

        Length rows are divided and prismatic columns multiplied by the
        characteristic length, so the figure is the same at any scale.  This is
        not a design index of the actuation: see :mod:`kic.indices`.

        Examples
        --------
        >>> import numpy as np, mechanisms
        >>> fb = mechanisms.five_bar()
        >>> c = fb.condition([[2.0, 1.2], [2.0, 1.0]])
        >>> c.shape, bool(np.all(c >= 1))
        ((2,), True)
        """
        self._check_failure_mode(on_failure)
        qf, batch = self._flat(q)
        ev = self.evaluation
        asm = ev.assembled(qf, batch, on_failure=on_failure)
        cond = ev.conditions(asm)
        return (cond.reshape(batch), asm.status.reshape(batch)) if on_failure == "nan" \
            else cond.reshape(batch)

    def condition_at(self, phi) -> np.ndarray:
        """:meth:`condition` of these coordinates at joint values ``phi`` (..., N)
        (assembled ones, e.g. ``sim.phi``; in any assembly mode): (...)."""
        phi = np.asarray(phi, dtype=float)
        if phi.shape[-1:] != (self.N,):
            raise ModelError(f"phi must have shape (..., {self.N}), got {phi.shape}")
        return self.evaluation.block_conditions(phi.reshape(-1, self.N)).reshape(
            phi.shape[:-1])

    def mode_at(self, phi) -> np.ndarray:
        """The signs of the assembly mode at joint values ``phi`` (..., N): (..., S)
        of -1, 0, +1, in the fine form of :attr:`mode_parts` (see
        :meth:`kic.loops.LoopSystem.mode`; from the compiled closure Jacobian where
        the evaluation is compiled)."""
        phi = np.asarray(phi, dtype=float)
        if phi.shape[-1:] != (self.N,):
            raise ModelError(f"phi must have shape (..., {self.N}), got {phi.shape}")
        P = phi.reshape(-1, self.N)
        rows = self.evaluation.closure_rows(P)
        jacobian = None if rows is None else rows[1]
        found = self.system.mode(P, jacobian=jacobian)
        return found.reshape(phi.shape[:-1] + found.shape[1:])

    def transfer_at(self, q, order: int = 2, start=None):
        """Joint values and the transfer at ``q``: ``(phi (n, N), Transfer)`` with
        ``G^phi_q`` (n, N, M), H and D to ``order`` (batch flattened); ``start``
        an explicit warm start of the assembly (..., N)."""
        qf, batch = self._flat(q)
        with located(batch, qf.shape[0]):
            asm = self.evaluation.assembled(qf, batch, start)
            tr, _ = closure_transfer(self.system, asm.phi, order, self.max_condition)
        return asm.phi, tr

    def joint_rates(self, q, qd, qdd=None, start=None):
        """phi' (and phi'' when ``qdd`` is given) of every joint (..., N)."""
        fast = self.evaluation.one("rates", q, qd, np.zeros(self.dof) if qdd is None else qdd,
                                   start)
        if fast is not None:                     # one configuration, compiled
            N = self.N
            return fast[:N] if qdd is None else (fast[:N], fast[N:])
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd_ = np.zeros_like(qd) if qdd is None else match_batch(qdd, self.dof, batch, "qdd").T
        with located(batch, qf.shape[0]):
            phi = self.evaluation.assembled(qf, batch, start).phi
            _, _, phid, phidd, _ = closure_transfer(self.system, phi, 1, self.max_condition,
                                                    velocity=(qd, qdd_))
        if qdd is None:
            return phid.reshape(batch + (self.N,))
        return phid.reshape(batch + (self.N,)), phidd.reshape(batch + (self.N,))

    # ------------------------------------------------------- public model
    def kinematics(self, q, order: int = 2, start=None) -> "ClosedKinematics":
        """Influence coefficients in q of any body (see :class:`ClosedKinematics`);
        ``start`` an explicit warm start of the assembly (..., N)."""
        return ClosedKinematics(self, q, order, start)

    def dynamics(self, q, start=None) -> "ClosedDynamics":
        """The transferred dynamic model at ``q`` (I*, P*, loads, energies);
        ``start`` an explicit warm start of the assembly (..., N)."""
        return ClosedDynamics(self, q, start)

    def frames(self, q) -> np.ndarray:
        """World frames (..., B, 4, 4) of :attr:`bodies` at ``q``."""
        kin = self.kinematics(q, 1)
        return np.stack([kin.frame(b) for b in self.bodies], axis=-3)

    def gravity_load(self, q) -> np.ndarray:
        """T_L of gravity in q (..., M)."""
        return self.dynamics(q).gravity_load

    def kinetic_energy(self, q, qd) -> np.ndarray:
        return self.dynamics(q).kinetic_energy(qd)

    def potential_energy(self, q) -> np.ndarray:
        return self.dynamics(q).potential_energy

    def inverse_dynamics(self, q, qd, qdd, loads=None, on_failure: str = "raise", start=None):
        """Required loads at the coordinates, ``T_q = sum_c G_c^T T_c`` (..., M) (N m, N).

        The joint motion comes from the velocity- and acceleration-level
        closure (no second-order coefficients are formed) and each open chain
        runs its own recursive inverse dynamics (no P* is formed).  With
        ``on_failure="nan"`` returns ``(T, status)``; ``start`` an explicit warm
        start of the assembly (..., N).
        """
        if loads is None and on_failure == "raise":
            fast = self.evaluation.one("inverse_dynamics", q, qd, qdd, start)
            if fast is not None:
                return fast                      # an array of its own
        self._check_failure_mode(on_failure)
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        T, status = self.evaluation.inverse_dynamics(qf, batch, qd, qdd, loads, on_failure,
                                                     start)
        T = T.reshape(batch + (self.dof,))
        return (T, status.reshape(batch)) if on_failure == "nan" else T

    def in_coordinates(self, coordinates, guess=None, name: str | None = None,
                       reference=None,
                       characteristic_length: float | None = None) -> "ClosedModel":
        """The same mechanism modelled in other coordinates (e.g. actuator ones).

        Its reference (and so its assembly mode) is this model's reference
        configuration, or ``reference``: joint values phi (N,) of this model.
        ``characteristic_length`` (m): the new model's L (its condition numbers
        and closure tolerances); default the largest distance between two
        joints at its reference.  :func:`kic.simulate` passes the first
        model's, so that every condition of one motion is on one scale."""
        physical = set(self.mechanism.primitive_joints)
        phi = self.reference_phi if reference is None else np.asarray(reference, float)
        ref = {k: phi[i] for k, i in self.system.index.items() if k in physical}
        return ClosedModel(self.mechanism, coordinates, reference=ref, guess=guess, name=name,
                           length=characteristic_length)

    def actuator_model(self) -> "ClosedModel":
        """The model in the actuated joints ``self.actuators`` (as many as dof)."""
        if not self.actuators:
            raise ModelError("this model has no actuators listed (set model.actuators)")
        return self.in_coordinates(self.actuators, name=f"{self.name} in actuator coordinates")

    def actuator_jacobian(self, q, actuators: Sequence[str], start=None) -> np.ndarray:
        """``G^a_q`` (..., Na, M): rates of the actuated joints per coordinate rate;
        ``start`` an explicit warm start of the assembly (..., N) (a control loop
        passes the last step's joint values: one configuration is then evaluated
        by the compiled kernels where they are in force)."""
        ev = self.evaluation
        fast = ev.actuator_jacobian(q, ev.actuator_index(actuators), start)
        if fast is not None:                     # one configuration, compiled
            return fast
        qf, batch = self._flat(q)
        idx = self.joint_indices(actuators)
        _, tr = self.transfer_at(q, 1, start)
        return tr.G[:, idx].reshape(batch + (len(idx), self.dof))

    def actuator_loads(self, q, qd, qdd, actuators: Sequence[str], weights=None,
                       loads=None, on_failure: str = "raise", start=None):
        """Loads of actuators at the joints ``actuators`` for a motion (..., Na).

        ``(G^a_q)^T tau_a = T_q``: solved exactly when Na = M (e.g. the six leg
        forces of a Stewart platform moved in platform coordinates), by the
        weighted minimum-norm rule of :func:`kic.load_distribution` when
        Na > M (overconstrained); :func:`kic.internal_loads` spans the rest.
        With ``on_failure="nan"`` returns ``(tau, status)``.
        """
        ev = self.evaluation
        if loads is None and weights is None and on_failure == "raise":
            fast = ev.one("actuator_loads", q, qd, qdd, start, ev.actuator_index(actuators))
            if fast is not None:
                return fast
        self._check_failure_mode(on_failure)
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        idx = self.joint_indices(actuators)
        tau, status = ev.actuator_loads(qf, batch, qd, qdd, idx, weights, loads, on_failure,
                                        start)
        tau = tau.reshape(batch + (len(idx),))
        return (tau, status.reshape(batch)) if on_failure == "nan" else tau

    def forward_dynamics(self, q, qd, tau, loads=None, on_failure: str = "raise", start=None,
                         actuators: Sequence[str] | None = None):
        """``q'' = I*_q^-1 (T - q'^T P*_q q' - T_L)`` (..., M).  With
        ``on_failure="nan"`` returns ``(qdd, status)``; ``start`` an explicit warm
        start of the assembly (..., N).  With ``actuators`` (joint names), ``tau``
        (..., Na) are the loads of those joints (N m, N; e.g. a Stewart platform's
        leg forces), acting at the coordinates as ``T = (G^a_q)^T tau``."""
        if loads is None and on_failure in ("raise", "nan"):
            if actuators is None:
                fast = self.evaluation.one("forward_dynamics", q, qd, tau, start,
                                           singular=on_failure == "nan")
            else:
                ev = self.evaluation
                fast = ev.one("actuated_forward_dynamics", q, qd, tau, start,
                              ev.actuator_index(actuators), singular=on_failure == "nan")
            if fast is not None:
                if isinstance(fast, tuple):
                    return fast[0], np.asarray(int(fast[1]))
                return (fast, np.asarray(0)) if on_failure == "nan" else fast
        self._check_failure_mode(on_failure)
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        if actuators is not None:
            # the actuators' loads at the coordinates, (G^a_q)^T tau, at every pose
            G = self.actuator_jacobian(qf, actuators, start)
            tau = np.einsum("nam,na->nm", G, match_batch(tau, G.shape[1], batch, "tau").T)
            tau = tau.reshape(batch + (self.dof,))
        tau = match_batch(tau, self.dof, batch, "tau").T
        qdd, status = self.evaluation.forward_dynamics(qf, batch, qd, tau, loads, on_failure,
                                                       start)
        qdd = qdd.reshape(batch + (self.dof,))
        return (qdd, status.reshape(batch)) if on_failure == "nan" else qdd


class ClosedKinematics:
    """Influence coefficients of a closed mechanism's bodies in its coordinates.

    Attributes
    ----------
    q : ndarray (..., M)
    phi : ndarray (..., N)
        The assembled joint values.
    transfer : Transfer
        ``G^phi_q``, ``H^phi_qq`` (and ``D`` for order 3), batch first.
    """

    def __init__(self, model: ClosedModel, q, order: int = 2, start=None) -> None:
        if order not in (1, 2, 3):
            raise ModelError(f"order must be 1, 2 or 3, got {order!r}")
        self.model = model
        self.order = order
        qf, self._batch = model._flat(q)
        self.q = qf.reshape(self._batch + (model.dof,))
        system = model.system
        with located(self._batch, qf.shape[0]):
            phi = model.evaluation.assembled(qf, self._batch, start).phi
            self._kins = system.kinematics(phi, order)
            self._tr, _ = closure_transfer(system, phi, order, model.max_condition,
                                           kins=self._kins)
        self._phi = phi
        self.phi = phi.reshape(self._batch + (model.N,))

    @property
    def transfer(self) -> Transfer:
        """``G^phi_q`` (..., N, M), ``H^phi_qq`` and ``D^phi_qqq`` (order 3) at q."""
        b = self._batch
        shape = lambda X: None if X is None else X.reshape(b + X.shape[1:])  # noqa: E731
        return Transfer(shape(self._tr.G), shape(self._tr.H), shape(self._tr.D))

    def _body(self, body: str):
        owner = self.model.system.owner.get(body)
        if owner is None:
            raise ModelError(f"unknown body {body!r}; bodies: "
                             f"{sorted(self.model.system.owner)}")
        return owner

    def _transferred(self, ci, inf: Influence) -> Influence:
        tr = self._tr.rows(self.model.system.chain_joints[ci])
        n = self._phi.shape[0]
        G, H, D = tr.influence(inf.G.reshape(n, 3, -1),
                               None if inf.H is None else inf.H.reshape(n, 3, *inf.H.shape[-2:]),
                               None if inf.D is None else inf.D.reshape(n, 3, *inf.D.shape[-3:]))
        out = lambda X: None if X is None else X.reshape(self._batch + X.shape[1:])  # noqa
        return Influence(out(G), out(H), out(D))

    def rotation(self, body: str) -> Influence:
        """Influence coefficients (in q) of the angular motion of ``body``."""
        ci, j = self._body(body)
        return self._transferred(ci, self._kins[ci].rotation(j))

    def point(self, body: str, p=(0.0, 0.0, 0.0)) -> Influence:
        """Influence coefficients (in q) of a point fixed on ``body`` (body frame, m)."""
        ci, j = self._body(body)
        return self._transferred(ci, self._kins[ci].point(j, p))

    def frame(self, body: str) -> np.ndarray:
        """World frame of ``body`` (..., 4, 4)."""
        ci, j = self._body(body)
        return self._kins[ci].link_frame(j).reshape(self._batch + (4, 4))


class ClosedDynamics(DynamicModel):
    """:class:`DynamicModel` of a :class:`ClosedModel`: the open chains' models
    transferred to q and superposed, ``I*_q = sum_c G_c^T I*_c G_c`` etc.

    Large batches are processed in blocks of configurations (the transfer's
    second-order coefficients of a Stewart platform are ~12 kB a pose)."""

    def __init__(self, model: ClosedModel, q, start=None) -> None:
        qf, batch = model._flat(q)
        super().__init__(qf.reshape(batch + (model.dof,)), batch)
        self.model = model
        # its reports index the caller's batch already (located() would index again)
        self._phi = model.evaluation.assembled_in_blocks(qf, batch, start).phi
        self.phi = self._phi.reshape(batch + (model.N,))
        self._parts = [(sl, {}) for sl in blocks(qf.shape[0])]

    def _part(self, k, order=2):
        """Transfer (to ``order``) and chain models of block k (kept for one block)."""
        sl, data = self._parts[k]
        if order not in data and not (order == 1 and 2 in data):
            m = self.model
            phi = self._phi[sl]
            with located(self._batch, sl.stop - sl.start, sl.start):
                tr, _ = closure_transfer(m.system, phi, order, m.max_condition)
            models = {ci: c.dynamics(phi[:, idx])
                      for ci, (c, idx) in enumerate(m.open_chains) if c.has_inertia}
            if len(self._parts) > 1:
                return sl, (tr, models)
            data[order] = (tr, models)
        return sl, data.get(order) or data[2]

    @property
    def _tr(self):
        if len(self._parts) == 1:
            return self._part(0)[1][0]
        m = self.model
        return closure_transfer(m.system, self._phi, 2, m.max_condition)[0]

    def _sum(self, *terms, order=2):
        """Sums over the chains of fn(transfer rows, chain model) for each
        (fn, tail) in terms, in one pass block by block, as batch-last arrays."""
        n = self._phi.shape[0]
        outs = [np.zeros((n,) + tail) for _, tail in terms]
        chain_joints = self.model.system.chain_joints
        for k in range(len(self._parts)):
            sl, (tr, models) = self._part(k, order)
            for ci, dyn in models.items():
                rows = tr.rows(chain_joints[ci])
                for out, (fn, _) in zip(outs, terms):
                    out[sl] += fn(rows, dyn)
        outs = [np.moveaxis(o, 0, -1) for o in outs]
        return outs[0] if len(outs) == 1 else outs

    # the base class expects batch-last arrays; I*, loads and energies need only
    # the first-order transfer, P* the second
    def _I(self):
        M = self.dof
        return self._sum((lambda tr, d: tr.inertia(d.I_star), (M, M)), order=1)

    def _P(self):
        M = self.dof
        I, P = self._sum((lambda tr, d: tr.inertia(d.I_star), (M, M)),
                         (lambda tr, d: tr.power(d.I_star, d.P_star), (M, M, M)))
        self._cache.setdefault("I", from_batch(I, self._batch, 2))    # same pass, keep I*
        return P

    def _gravity(self):
        return self._sum((lambda tr, d: tr.load(d.gravity_load), (self.dof,)), order=1)

    def _potential(self):
        return self._sum((lambda tr, d: d.potential_energy, ()), order=1)

    def _applied(self, loads, qdT):
        qd = None if qdT is None else qdT.T
        phid = None if qd is None else self._tr.rates(qd)
        T = np.zeros(self._phi.shape)
        for (chain, idx), cl in zip(self.model.open_chains,
                                    self.model.split_loads(loads, self._phi, phid)):
            if cl is None:
                continue
            T[:, idx] += cl.chain_load(chain, self._phi[:, idx],
                                       None if phid is None else phid[:, idx])
        return np.moveaxis(self._tr.load(T), 0, -1)

    def loads_energy(self, loads) -> np.ndarray:
        return self.model.loads_energy_at(loads, self._phi).reshape(self._batch)
