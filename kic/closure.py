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
calls.  Where several assemblies exist, the model's assembly mode decides
(:attr:`ClosedModel.mode`) and every assembled configuration is checked to be
in it.  Batched calls take ``on_failure="nan"`` to return NaN plus a
:class:`kic.Status` per configuration instead of raising.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .kernels import closed as closed_kernels
from ._array import blocks, from_batch, match_batch
from .assembly import Assembly, assemble, first_guess, in_mode, project
from .backend import spd_solve, use_compiled
from .closed_plan import plan_from_model
from .coordinates import BodyPose, CoordinateFunction, PointPosition, apply_coordinates
from .dynamics import DynamicModel
from .errors import ClosureError, ModelError, SingularityError, Status, located
from .loads import Loads
from .kinematics import Influence
from .limits import JointLimits, outside_limits_error
from .loops import LoopSystem
from .transfer import Transfer, closure_transfer

__all__ = ["ClosedModel", "ClosedKinematics", "ClosedDynamics", "BodyPose", "PointPosition",
           "CoordinateFunction"]

_FAILURE_MODES = ("raise", "nan")
_F8 = np.dtype(np.float64)
_NO_ACTUATORS = np.zeros(0, np.int64)
# plain ints for the per-call checks (comparing with enum members costs microseconds)
_UNASSEMBLABLE, _OTHER_MODE = int(Status.UNASSEMBLABLE), int(Status.OTHER_MODE)


class ClosedModel:
    """The dynamic model of a mechanism in chosen coordinates (transferred).

    Same interface as :class:`kic.SerialChain` (``kinematics``, ``dynamics``,
    ``inverse_dynamics``, ``forward_dynamics``, ``gravity_load``, energies,
    works with :func:`kic.simulate` and :func:`kic.linear_dynamics`), plus the
    position-level closure (:meth:`assemble`), actuator loads and singularity
    queries (:meth:`condition`).  Built by :meth:`kic.Mechanism.model`.

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
        L (m): the largest distance between two joints at the reference;
        condition numbers and closure tolerances are made dimensionless with it.
    max_condition : float
        Dimensionless condition number of a dependent-joint Jacobian above
        which a configuration is reported as singular
        (:class:`kic.SingularityError`); default 1e6 (beyond it about 10
        significant digits are lost).
    guess : callable or None
        ``guess(q) -> phi`` (n, N): a first guess for the position solver.
    """

    max_condition = 1e6

    def __init__(self, mech, coordinates, reference=None, guess=None,
                 cuts: Sequence[str] = (), name: str | None = None, mode=None) -> None:
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
        # signs are checked on their results here
        self._block_mode = np.ascontiguousarray(self.system.block_mode(self._mode))
        self._refined = len(self.system.mode_parts) > len(self.system.blocks)
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

    def _off_mode(self, phi, status) -> np.ndarray:
        """Poses a kernel assembled (status OK) outside the finer mode (n,)."""
        status = np.asarray(status).reshape(-1)
        bad = np.zeros(status.shape, bool)
        if not self._refined:
            return bad
        ok = np.nonzero(status == 0)[0]
        if ok.size:
            found = self.system.mode(np.asarray(phi, float).reshape(-1, self.N)[ok])
            bad[ok] = ~in_mode(found, self._mode)
        return bad

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

    def _actuator_index(self, actuators) -> np.ndarray:
        """joint_indices of ``actuators``, kept for the last list asked (a control
        loop asks for the same actuators every time)."""
        key = tuple(actuators) if not isinstance(actuators, str) else (actuators,)
        cached = self.__dict__.get("_last_actuators")
        if cached is None or cached[0] != key:
            cached = (key, np.ascontiguousarray(self.joint_indices(actuators), np.int64))
            self._last_actuators = cached
        return cached[1]

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
        s = self.system
        owner = {b: (ci, s.chains[ci].link_names[li]) for b, (ci, li) in s.owner.items()}
        joints = {j: ci for j, (ci, _) in s.joint_owner.items()}
        cross: list = []
        parts = loads.split(owner, joints, len(s.chains), cross=cross)
        if not cross:
            return parts
        if phi is None:
            raise ModelError("loads with elements between bodies of different open chains "
                             "need the joint values phi")
        forces = Loads()
        for e, (Pa, Pb, u, length, rate) in zip(cross, self._element_states(cross, phi, phid)):
            T = e.tension(length, rate)[:, None] * u
            if e.body_a is not None:
                forces.force(e.body_a, T, point=e.point_a)
            if e.body_b is not None:
                forces.force(e.body_b, -T, point=e.point_b)
        extra = forces.split(owner, joints, len(s.chains))
        return [a if b is None else b if a is None else a.combined(b)
                for a, b in zip(parts, extra)]

    def _element_states(self, elements, phi, phid, rates: bool = True) -> list:
        """(Pa, Pb, u, length, rate) of elements between body points at phi (n, N)."""
        phi = np.asarray(phi, dtype=float).reshape(-1, self.N)
        kins: dict = {}

        def state(body, p):
            if body is None:                   # the ground: a world point at rest
                P = np.broadcast_to(p, (phi.shape[0], 3))
                return P, np.zeros(P.shape)
            ci, li = self.system.owner[body]
            chain, idx = self.open_chains[ci]
            if ci not in kins:
                kins[ci] = chain.kinematics(phi[:, idx], 1)
            P = kins[ci].link_point(li, p)
            if phid is None:
                return P, None
            G = kins[ci].point(li, p).G
            return P, np.einsum("nkm,nm->nk", G, np.asarray(phid, float).reshape(-1, self.N)[:, idx])

        out = []
        for e in elements:
            (Pa, va), (Pb, vb) = state(e.body_a, e.point_a), state(e.body_b, e.point_b)
            d = Pb - Pa
            length = np.linalg.norm(d, axis=-1)
            u = d / np.where(length > 0, length, 1.0)[:, None]
            if e.conservative or not rates:
                rate = np.zeros(length.shape)
            elif va is None:
                raise ModelError("these loads include dampers or force laws between bodies: "
                                 "the rates are needed")
            else:
                rate = ((vb - va) * u).sum(-1)
            out.append((Pa, Pb, u, length, rate))
        return out

    def loads_energy_at(self, loads, phi) -> np.ndarray:
        """Potential energy (J) of the conservative ``loads`` at joint values phi
        (n, N) (springs, constant forces and joint torques, springs between points)."""
        phi = np.asarray(phi, dtype=float).reshape(-1, self.N)
        s = self.system
        owner = {b: (ci, s.chains[ci].link_names[li]) for b, (ci, li) in s.owner.items()}
        joints = {j: ci for j, (ci, _) in s.joint_owner.items()}
        cross: list = []
        E = np.zeros(phi.shape[0])
        for (chain, idx), cl in zip(self.open_chains,
                                    loads.split(owner, joints, len(s.chains), cross=cross)):
            if cl is not None:
                E = E + chain.dynamics(phi[:, idx]).loads_energy(cl)
        for e, st in zip(cross, self._element_states(cross, phi, None, rates=False)):
            E = E + e.energy(st[3])
        return E

    def __repr__(self) -> str:
        return (f"<ClosedModel {self.name or ''} in {self.coordinate_names}: "
                f"{self.N} joints, {len(self.system.loops)} loops>")

    # -------------------------------------------------------------- inputs
    def _flat(self, q) -> tuple[np.ndarray, tuple]:
        q = np.asarray(q, dtype=float)
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

    def _start(self, start, n: int):
        if start is None:
            return None
        s = np.asarray(start, dtype=float)
        if s.shape[-1:] != (self.N,) or not np.all(np.isfinite(s)):
            raise ModelError(f"start must give the {self.N} joint values {self.phi_names} "
                             f"(..., {self.N}) finite, got shape {s.shape}")
        return s.reshape(-1, self.N) if s.size // self.N == n else s.reshape(-1, self.N)[:1]

    # ------------------------------------------------------ compiled kernels
    def _plan(self):
        """The model flattened for the compiled kernels (built once per
        ``max_condition``), or None where the numpy path serves: the numpy backend,
        or closures the kernels do not cover (coordinate functions, loops reduced
        per configuration)."""
        if not use_compiled() or not closed_kernels.load():
            return None
        cached = self.__dict__.get("_kernel_plan")
        if cached is None or cached[0] != self.max_condition:
            cached = (self.max_condition, plan_from_model(self))
            self._kernel_plan = cached
        return cached[1]

    def _one(self, what: str, q, qd, x, start, act=_NO_ACTUATORS, singular=False):
        """The compiled path for one configuration given as float vectors, with no
        argument handling beyond a type check: the output, or None where anything
        is unusual (another layout, a batch, no plan, a failed pose: the general
        path then answers or raises with its reports).  With ``singular``, a pose
        assembled but singular gives (NaN output, status): no other start helps."""
        M = self.dof
        for a in (q, qd, x):
            if type(a) is not np.ndarray or a.dtype != _F8 or a.shape != (M,) \
                    or not a.flags.c_contiguous:
                return None
        if start is None:
            phi0, path = self.reference_phi, True
        elif type(start) is np.ndarray and start.shape == (self.N,) and start.dtype == _F8:
            phi0, path = start, False
        else:
            return None
        plan = self._plan()
        if plan is None:
            return None
        out, phi_one, status, _ = closed_kernels.one(plan, what, q, qd, x, act, phi0, path,
                                                     self._block_mode)
        if status == 0 and self._refined and self._off_mode(phi_one, [0])[0]:
            return None
        if singular and status in (Status.SINGULAR, Status.SINGULAR_LOAD):
            return np.full(out.shape, np.nan), status
        return out if status == 0 else None

    def free_motion_steps(self, t: float, y, t_end: float, start, *, rtol: float,
                          atol: float, step: float = 0.0, max_step: float = np.inf,
                          stop_condition: float = np.inf, relax: float = np.inf,
                          capacity: int = 2048) -> dict | None:
        """Steps of the free motion (gravity only: no input, no applied loads) from
        time ``t`` (s) and state ``y = (q, q')`` (2M,) towards ``t_end``, in one
        compiled call: scipy's DOP853 (Dormand-Prince 8(5,3), its coefficients,
        error norm and step-size control, step for step), every trial point
        assembled from the joint values of the last accepted step (``start`` (N,)
        first), every accepted step assembled and recorded with the worst block
        condition number there.  ``step`` > 0 is the first step size (s); 0 lets
        the integrator choose it as scipy does.  Once a step's condition is at
        most ``relax``, ``stop_condition`` falls to ``relax`` (hysteresis: a
        raised threshold holds only while the condition stays high).

        Returns None where the compiled path does not serve (the numpy backend,
        assembly modes finer than the blocks, closures the kernels do not
        cover); else a dict: ``code`` (0 reached ``t_end``; 1 stopped after a
        step whose condition exceeded ``stop_condition``; 2 a trial point failed
        with :class:`kic.Status` ``status``; 3 the step size underflowed; 4
        ``capacity`` steps recorded; 5 an accepted point could not be assembled
        (``status``), not recorded), the recorded ``t`` (k,), ``y`` (k, 2M),
        ``phi`` (k, N) and ``condition`` (k,), the ``state`` ``(t, y, phi)``
        where it stopped (the last accepted step; the unrecorded point for code
        5), the ``step`` size to try next (for code 2: the one that failed),
        ``last_step`` (the last accepted one), ``nfev`` and the ``threshold``
        (``stop_condition``) in effect at the end.
        """
        plan = self._plan()
        if plan is None or self._refined:
            return None
        y = np.ascontiguousarray(y, dtype=float)
        start = np.ascontiguousarray(start, dtype=float)
        if y.shape != (2 * self.dof,) or start.shape != (self.N,):
            raise ModelError(f"free_motion_steps: y must have {2 * self.dof} values and start "
                             f"{self.N}, got {y.shape} and {start.shape}")
        # scipy's own floor on the relative tolerance
        rtol = max(float(rtol), 100 * np.finfo(float).eps)
        (code, k, ts, ys, phis, conds, t_stop, y_stop, phi_stop, h, nfev, status, last,
         threshold) = closed_kernels.free_motion(plan, self._block_mode, t, t_end, y, start,
                                                 step, rtol, atol, max_step, stop_condition,
                                                 relax, capacity)
        return {"code": int(code), "t": ts[:k], "y": ys[:k], "phi": phis[:k],
                "condition": conds[:k], "state": (float(t_stop), y_stop, phi_stop),
                "step": float(h), "last_step": float(last), "nfev": int(nfev),
                "status": int(status), "threshold": float(threshold)}

    def track(self, q, start) -> tuple | None:
        """Joint values (N,) at one configuration q (M,) assembled from ``start``
        (N,), and the condition number of the coordinates there: the lean call a
        simulation makes at every step; None where the general path must answer."""
        plan = self._plan()
        if plan is None or type(q) is not np.ndarray or q.shape != (self.dof,) \
                or q.dtype != _F8 or type(start) is not np.ndarray \
                or start.shape != (self.N,):
            return None
        _, phi, status, cond = closed_kernels.one(
            plan, "assemble", np.ascontiguousarray(q), q, q, _NO_ACTUATORS,
            np.ascontiguousarray(start, dtype=float), False, self._block_mode)
        if status == 0 and self._refined and self._off_mode(phi, [0])[0]:
            return None
        return (phi, cond) if status == 0 else None

    def _compiled(self, what: str, qf, start, on_failure, *rates, act=None):
        """One compiled call for the whole batch: (output, status), or None where
        the numpy path must answer (no plan; or configurations the kernel could not
        assemble in the mode, or failures to raise with the numpy path's reports)."""
        plan = self._plan()
        if plan is None:
            return None
        fn = getattr(closed_kernels, what)
        args = rates + ((act,) if act is not None else ())
        at = 1 if what == "assemble" else 2           # where the kernel puts the status
        # from the warm start, else from the guess function (a closed form: Newton
        # then converges in a step), else from the reference along the batch (each
        # pose from the previous one); poses that land outside the mode try the
        # continuation along the batch, then the numpy path
        def call(q_, phi0, **kw):
            res = fn(plan, q_, *args_for(q_), phi0, mode=self._block_mode, **kw)
            status = np.array(res[at], int)
            status[self._off_mode(res[at - 1], status)] = _OTHER_MODE
            return res[0], status

        def args_for(q_):
            if q_ is qf:
                return args
            return tuple(a[idx] if a.shape[0] == qf.shape[0] else a
                         for a in args[:len(rates)]) + args[len(rates):]

        idx = None
        if start is not None:
            out, status = call(qf, self._start(start, qf.shape[0]))
        elif self.guess is not None:
            out, status = call(qf, first_guess(self.system, qf, self.reference_phi, None,
                                               self.guess))
        else:
            out, status = call(qf, self.reference_phi, path=True)
        lost = (status == _UNASSEMBLABLE) | (status == _OTHER_MODE)
        if lost.any() and start is None and self.guess is not None:
            idx = np.nonzero(lost)[0]
            again, st = call(qf[idx], self.reference_phi, path=True)
            out = out.copy()
            out[idx] = again
            status[idx] = st
            lost = (status == _UNASSEMBLABLE) | (status == _OTHER_MODE)
        if lost.any() or (on_failure == "raise" and status.any()):
            return None                # continuation, or the numpy path's error report
        return out, status

    # ------------------------------------------------------------ assembly
    def assembly(self, q, start=None) -> Assembly:
        """Assemble at ``q`` (..., M) and say how each configuration fared.

        Never raises for a configuration: the result's ``status`` (...) holds
        a :class:`kic.Status` per configuration and ``phi`` (..., N) NaN where
        it failed.

        Parameters
        ----------
        q : array_like (..., M)
        start : array_like (..., N) or (N,), optional
            Explicit warm start of every joint (e.g. the previous step of a path).
        """
        qf, batch = self._flat(q)
        plan = self._plan()
        if plan is not None:
            s = self.reference_phi if start is None else self._start(start, qf.shape[0])
            phi, status, res, cond, sign = closed_kernels.assemble(
                plan, qf, s, path=start is None, mode=self._block_mode)
            status = np.array(status, int)
            status[self._off_mode(phi, status)] = _OTHER_MODE
            if not np.any((status == _UNASSEMBLABLE) | (status == _OTHER_MODE)):
                ok = status == Status.OK
                if self._refined:
                    sign = np.zeros((ok.size, len(self._mode)))
                    if ok.any():
                        sign[ok] = self.system.mode(phi[ok])
                sign = np.where(ok[:, None], sign, 0.0)
                cond = np.where(ok, cond.max(axis=1) if cond.shape[1] else 1.0, np.nan)
                return Assembly(phi.reshape(batch + (self.N,)), status.reshape(batch),
                                res.reshape(batch), sign.reshape(batch + (-1,)),
                                phi.reshape(batch + (self.N,)), cond.reshape(batch))
        asm = assemble(self.system, qf, self._mode, self.reference_phi,
                       self._start(start, qf.shape[0]), self.guess)
        cond = self._conditions(asm)
        return Assembly(asm.phi.reshape(batch + (self.N,)), asm.status.reshape(batch),
                        asm.residual.reshape(batch), asm.mode.reshape(batch + (-1,)),
                        asm.attempt.reshape(batch + (self.N,)), cond.reshape(batch))

    def best_coordinates(self, phi, max_candidates: int = 5000) -> tuple[list, float]:
        """The set of M joint coordinates in which the closure is best conditioned
        at joint values phi (N,), and its condition number.

        Every candidate set of M physical joints is scored by the dimensionless
        2-norm condition number of the closure Jacobian's columns of the other
        joints (the dependent block, which the transfer inverts); the smallest
        wins, ties going to the earlier set in joint order (generalized
        coordinate partitioning: Wehage and Haug 1982, who pivot an LU
        factorization to find a good set; here every set is scored, which is
        exact for the few joints of a linkage).

        Raises
        ------
        ModelError
            More than ``max_candidates`` sets (use a pivoted factorization, e.g.
            :func:`scipy.linalg.qr` with ``pivoting=True``, for large mechanisms).
        """
        from itertools import combinations
        from math import comb

        from .loops import scaled_condition
        s = self.system
        phi = np.asarray(phi, dtype=float).reshape(self.N)
        physical = [i for i, n in enumerate(s.phi_names)
                    if n in self.mechanism.primitive_joints]
        if len(physical) != self.N:
            raise ModelError("coordinate selection takes a model in joint coordinates, not "
                             f"{self.coordinate_names}")
        if comb(self.N, self.dof) > max_candidates:
            raise ModelError(f"{comb(self.N, self.dof)} candidate sets of {self.dof} of "
                             f"{self.N} joints: more than max_candidates={max_candidates}")
        J = s.jacobian(phi[None])[0]
        length_rows = np.concatenate([l.length_rows() for l in s.loops])
        sets = list(combinations(range(self.N), self.dof))
        deps = np.array([[d for d in range(self.N) if d not in c] for c in sets], int)
        cond = np.array([scaled_condition(J[:, d], length_rows, s.is_prismatic[d], s.length)
                         for d in deps])
        best = int(np.argmin(np.where(np.isnan(cond), np.inf, cond)))
        return [s.phi_names[i] for i in sets[best]], float(cond[best])

    def joint_space_dynamics(self, phi, phid) -> tuple:
        """The mechanism as its open chains held together by the closure: the
        formulation with Lagrange multipliers, in every joint value, which needs
        no independent coordinates (``kic.simulate`` uses it where every set is
        poorly conditioned)::

            M phi'' + b = J^T lambda,      J phi'' + c = 0

        at joint values and rates phi, phi' (..., N) (rad, m; rad/s, m/s).

        Returns
        -------
        M : ndarray (..., N, N)
            Block diagonal: each open chain's I* in its own joints (kg m^2, kg).
        b : ndarray (..., N)
            Each chain's velocity-product and gravity loads ``q'^T P* q' +
            T_gravity`` (N m, N); applied loads are not included.
        J : ndarray (..., R, N)
            The closure Jacobian (independent rows, as :meth:`closure_jacobian`).
        c : ndarray (..., R)
            The closure's velocity-product accelerations, ``J phi'' + c = 0``
            along every motion.
        """
        phi = np.asarray(phi, dtype=float)
        phid = np.asarray(phid, dtype=float)
        if phi.shape[-1:] != (self.N,) or phid.shape != phi.shape:
            raise ModelError(f"phi and phid must have the same shape (..., {self.N}), got "
                             f"{phi.shape} and {phid.shape}")
        batch = phi.shape[:-1]
        P, V = phi.reshape(-1, self.N), phid.reshape(-1, self.N)
        n = P.shape[0]
        M = np.zeros((n, self.N, self.N))
        b = np.zeros((n, self.N))
        for chain, idx in self.open_chains:
            dyn = chain.dynamics(P[:, idx])
            M[:, idx[:, None], idx[None, :]] = dyn.I_star
            b[:, idx] = dyn.velocity_term(V[:, idx]) + dyn.gravity_load
        rows, kins = self.system.rows(P, 2, residual=False)
        R = sum(rw.G[0].shape[1] for rw in rows)
        J = (np.concatenate([self.system.loop_matrix(li, rw, n)
                             for li, rw in zip(self.system.loops, rows)], axis=1)
             if rows else np.zeros((n, 0, self.N)))
        c = (np.concatenate(self.system.bias(rows, kins, V, P, {}), axis=1)
             if rows else np.zeros((n, 0)))
        return (M.reshape(batch + (self.N, self.N)), b.reshape(batch + (self.N,)),
                J.reshape(batch + (R, self.N)), c.reshape(batch + (R,)))

    def closure_jacobian(self, phi) -> np.ndarray:
        """The closure Jacobian ``dc/dphi`` (..., R, N) at joint values phi (..., N):
        the independent rows of every loop over every joint (coordinate selection
        works on it)."""
        phi = np.asarray(phi, dtype=float)
        if phi.shape[-1:] != (self.N,):
            raise ModelError(f"phi must have shape (..., {self.N}), got {phi.shape}")
        J = self.system.jacobian(phi.reshape(-1, self.N))
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
        out, worst = project(self.system, phi.reshape(-1, self.N))
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
        qf, batch = self._flat(q)
        fast = self._compiled("assemble", qf, start, on_failure)
        if fast is None:
            asm = self._assembled(qf, batch, start, on_failure)
            fast = asm.phi, asm.status
        limits = self.__dict__.get("_limits")
        if limits is not None and limits.checked:   # on the assembled phi, after the solver
            status = limits.status(fast[0], fast[1])
            outside = status == Status.OUTSIDE_LIMITS
            if outside.any():
                if on_failure == "raise":
                    raise outside_limits_error(limits, fast[0], status, batch, self.name)
                fast = np.where(outside[:, None], np.nan, fast[0]), status
        phi = fast[0].reshape(batch + (self.N,))
        return (phi, fast[1].reshape(batch)) if on_failure == "nan" else phi

    def _assembled(self, qf, batch, start=None, on_failure="raise") -> Assembly:
        asm = assemble(self.system, qf, self._mode, self.reference_phi,
                       self._start(start, qf.shape[0]), self.guess)
        if on_failure == "raise" and not asm.ok.all():
            self._raise_failures(asm, batch)
        return asm

    def _raise_failures(self, asm: Assembly, batch: tuple) -> None:
        bad = np.nonzero(~asm.ok)[0]
        indices = [tuple(int(i) for i in np.unravel_index(k, batch)) if batch else ()
                   for k in bad]
        status = [Status(int(asm.status[k])) for k in bad]
        first = bad[0]
        res, _ = self.system.residuals(asm.attempt[first:first + 1])
        norms = [float(np.linalg.norm(r)) for r in res]
        loop = self.system.loops[int(np.argmax(norms))].name if norms else None
        why = ("it closes only in another assembly mode than the model's "
               f"{self.mode}" if status[0] == Status.OTHER_MODE else
               "outside the workspace, or not reachable in the model's assembly mode "
               f"{self.mode}")
        if not batch:
            where = ""
        elif len(indices) == 1:
            where = f" at batch index {indices[0]}"
        else:
            where = f" at batch indices {', '.join(str(i) for i in indices[:10])}" + (
                f" and {len(indices) - 10} more" if len(indices) > 10 else "")
        raise ClosureError(
            f"{len(bad)} configuration(s) of {self.name or 'the model'} cannot be assembled "
            f"(loop {loop!r} stays open): "
            f"{why} (worst closure residual {asm.residual[first]:.3e}, rad or relative to the "
            f"characteristic length {self.system.length:.4g} m){where}",
            loop=loop, residual=float(asm.residual[first]),
            index=indices[0] if batch else None, indices=indices if batch else [],
            status=status)

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
        asm = self._assembled(qf, batch, on_failure=on_failure)
        cond = self._conditions(asm)
        return (cond.reshape(batch), asm.status.reshape(batch)) if on_failure == "nan" \
            else cond.reshape(batch)

    def _conditions(self, asm: Assembly) -> np.ndarray:
        """Worst dimensionless block condition (n,), NaN where not assembled."""
        n = asm.phi.shape[0]
        cond = np.full(n, np.nan)
        ok = asm.ok
        if not ok.any():
            return cond
        cond[ok] = self._block_conditions(asm.phi[ok])
        return cond

    def _block_conditions(self, phi: np.ndarray) -> np.ndarray:
        rows, _ = self.system.rows(phi, 1, residual=False)
        c = np.ones(phi.shape[0])
        for block in self.system.blocks:
            A, _ = self.system.block_matrices(rows, block, phi.shape[0], need_q=False)
            c = np.maximum(c, self.system.condition(A, block))
        return c

    def condition_at(self, phi) -> np.ndarray:
        """:meth:`condition` of these coordinates at joint values ``phi`` (..., N)
        (assembled ones, e.g. ``sim.phi``; in any assembly mode): (...)."""
        phi = np.asarray(phi, dtype=float)
        if phi.shape[-1:] != (self.N,):
            raise ModelError(f"phi must have shape (..., {self.N}), got {phi.shape}")
        return self._block_conditions(phi.reshape(-1, self.N)).reshape(phi.shape[:-1])

    # ------------------------------------------------------------- transfer
    def _evaluate(self, qf, batch, fn, tail, on_failure, start=None):
        """Run ``fn(phi, sl)`` -> (n_sl,) + tail over the assembled configurations,
        in blocks of configurations; with ``on_failure="nan"`` failed ones give NaN
        and a status."""
        n = qf.shape[0]
        asm = self._assembled(qf, batch, start, on_failure)
        out = np.full((n,) + tail, np.nan)
        status = asm.status.copy()
        if on_failure == "nan":
            cond = self._conditions(asm)
            status[asm.ok & ~(cond < self.max_condition)] = Status.SINGULAR
        good = np.nonzero(status == Status.OK)[0]
        for part in blocks(good.size):
            idx = good[part]
            with located(batch, idx.size, int(idx[0]) if idx.size else 0):
                if on_failure == "raise" or idx.size == 0:
                    out[idx] = fn(asm.phi[idx], idx)
                    continue
                try:
                    out[idx] = fn(asm.phi[idx], idx)
                except SingularityError:
                    for k in idx:                # find which configurations, one by one
                        try:
                            out[k] = fn(asm.phi[k:k + 1], np.array([k]))[0]
                        except SingularityError:
                            status[k] = Status.SINGULAR_LOAD
        return out, status

    def transfer_at(self, q, order: int = 2):
        """Joint values and the transfer at ``q``: ``(phi (n, N), Transfer)`` with
        ``G^phi_q`` (n, N, M), H and D to ``order`` (batch flattened)."""
        qf, batch = self._flat(q)
        with located(batch, qf.shape[0]):
            asm = self._assembled(qf, batch)
            tr, _ = closure_transfer(self.system, asm.phi, order, self.max_condition)
        return asm.phi, tr

    def joint_rates(self, q, qd, qdd=None, start=None):
        """phi' (and phi'' when ``qdd`` is given) of every joint (..., N)."""
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd_ = np.zeros_like(qd) if qdd is None else match_batch(qdd, self.dof, batch, "qdd").T
        with located(batch, qf.shape[0]):
            phi = self._assembled(qf, batch, start).phi
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

    def _joint_loads(self, phi, phid, phidd, chain_loads) -> np.ndarray:
        """Joint loads of every open chain at (phi, phi', phi''), summed into phi (n, N)."""
        T = np.zeros(phi.shape)
        for (chain, idx), cl in zip(self.open_chains, chain_loads):
            if chain.total_mass <= 0 and cl is None:
                continue
            T[:, idx] += chain.inverse_dynamics(phi[:, idx], phid[:, idx], phidd[:, idx],
                                                loads=cl)
        return T

    def _loads_for(self, loads, phi=None, phid=None) -> list:
        if loads is None or not loads:
            return [None] * len(self.system.chains)
        return self.split_loads(loads, phi, phid)

    @staticmethod
    def _per_configuration(loads) -> bool:
        """Loads that must be split at every batch of configurations: varying along
        the batch, or elements between bodies of two chains."""
        return loads is not None and (loads.batched or bool(loads.elements))

    def _required(self, qf, qd, qdd, loads, batch, actuators=None, on_failure="raise",
                  start=None):
        """T_q (n, M) and, with ``actuators``, ``G^a_q`` (n, Na, M) flattened in the tail."""
        each = self._per_configuration(loads)
        chain_loads = None if each else self._loads_for(loads)
        na = 0 if actuators is None else len(actuators)
        M = self.dof

        def fn(phi, idx):
            tr, _, phid, phidd, _ = closure_transfer(self.system, phi, 1, self.max_condition,
                                                     velocity=(qd[idx], qdd[idx]))
            cl = self._loads_for(loads, phi, phid) if each else chain_loads
            T = tr.load(self._joint_loads(phi, phid, phidd, cl))
            if not na:
                return T
            return np.concatenate([T, tr.G[:, actuators].reshape(len(idx), -1)], axis=1)

        if loads is not None and loads.batched and qf.shape[0] > 1:
            # loads varying along the batch cannot be split into sub-blocks
            asm = self._assembled(qf, batch, start, on_failure)
            if not asm.ok.all():
                raise ModelError("batched loads need every configuration assembled")
            with located(batch, qf.shape[0]):
                out = fn(asm.phi, np.arange(qf.shape[0]))
            status = asm.status
        else:
            out, status = self._evaluate(qf, batch, fn, (M + na * M,), on_failure, start)
        T = out[:, :M]
        Ga = out[:, M:].reshape(-1, na, M) if na else None
        return T, Ga, status

    def inverse_dynamics(self, q, qd, qdd, loads=None, on_failure: str = "raise", start=None):
        """Required loads at the coordinates, ``T_q = sum_c G_c^T T_c`` (..., M) (N m, N).

        The joint motion comes from the velocity- and acceleration-level
        closure (no second-order coefficients are formed) and each open chain
        runs its own recursive inverse dynamics (no P* is formed).  With
        ``on_failure="nan"`` returns ``(T, status)``; ``start`` an explicit warm
        start of the assembly (..., N).
        """
        if loads is None and on_failure == "raise":
            fast = self._one("inverse_dynamics", q, qd, qdd, start)
            if fast is not None:
                return fast                      # an array of its own
        self._check_failure_mode(on_failure)
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        fast = None if loads else self._compiled("inverse_dynamics", qf, start, on_failure,
                                                 qd, qdd)
        if fast is None:
            T, _, status = self._required(qf, qd, qdd, loads, batch, on_failure=on_failure,
                                          start=start)
        else:
            T, status = fast
        T = T.reshape(batch + (self.dof,))
        return (T, status.reshape(batch)) if on_failure == "nan" else T

    def in_coordinates(self, coordinates, guess=None, name: str | None = None,
                       reference=None) -> "ClosedModel":
        """The same mechanism modelled in other coordinates (e.g. actuator ones).

        Its reference (and so its assembly mode) is this model's reference
        configuration, or ``reference``: joint values phi (N,) of this model."""
        physical = set(self.mechanism.primitive_joints)
        phi = self.reference_phi if reference is None else np.asarray(reference, float)
        ref = {k: phi[i] for k, i in self.system.index.items() if k in physical}
        return self.mechanism.model(coordinates, reference=ref, guess=guess, name=name)

    def actuator_model(self) -> "ClosedModel":
        """The model in the actuated joints ``self.actuators`` (as many as dof)."""
        if not self.actuators:
            raise ModelError("this model has no actuators listed (set model.actuators)")
        return self.in_coordinates(self.actuators, name=f"{self.name} in actuator coordinates")

    def actuator_jacobian(self, q, actuators: Sequence[str]) -> np.ndarray:
        """``G^a_q`` (..., Na, M): rates of the actuated joints per coordinate rate."""
        qf, batch = self._flat(q)
        idx = self.joint_indices(actuators)
        _, tr = self.transfer_at(q, 1)
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
        from .actuation import load_distribution
        if loads is None and weights is None and on_failure == "raise":
            act = self._actuator_index(actuators)
            fast = self._one("actuator_loads", q, qd, qdd, start, act)
            if fast is not None:
                return fast
        self._check_failure_mode(on_failure)
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        idx = self.joint_indices(actuators)
        fast = None if loads or weights is not None else self._compiled(
            "actuator_loads", qf, start, on_failure, qd, qdd, act=idx)
        if fast is not None:
            tau, status = fast
            tau = tau.reshape(batch + (len(idx),))
            return (tau, status.reshape(batch)) if on_failure == "nan" else tau
        T, G, status = self._required(qf, qd, qdd, loads, batch, idx, on_failure, start)
        tau = np.full((qf.shape[0], len(idx)), np.nan)
        ok = status == Status.OK
        if G.shape[-2] == G.shape[-1]:
            # checked like the closures: near a singularity of the actuation the
            # loads grow without bound and a SingularityError says so
            Gt = np.swapaxes(G[ok], -1, -2)
            good = self._actuation_regular(Gt, idx, batch, np.nonzero(ok)[0], on_failure)
            sel = np.nonzero(ok)[0][good]
            tau[sel] = np.linalg.solve(Gt[good], T[sel][..., None])[..., 0]
            status[np.nonzero(ok)[0][~good]] = Status.SINGULAR_LOAD
        elif ok.any():
            tau[ok] = load_distribution(G[ok], T[ok], weights)
        tau = tau.reshape(batch + (len(idx),))
        return (tau, status.reshape(batch)) if on_failure == "nan" else tau

    def _actuation_regular(self, Gt, idx, batch, where, on_failure) -> np.ndarray:
        """Which actuation Jacobians (G^a_q)^T are regular (dimensionless condition
        below max_condition); raises for the first singular one unless "nan"."""
        if Gt.shape[0] == 0:
            return np.ones(0, bool)
        s = self.system
        length_q = s.is_prismatic[s.q_idx]
        length_a = s.is_prismatic[idx]
        from .loops import scaled_condition
        cond = scaled_condition(Gt, length_q, length_a, s.length)
        good = cond < self.max_condition
        if not good.all() and on_failure == "raise":
            k = int(np.argmin(good))
            sv = np.linalg.svd(Gt[k], compute_uv=False)
            index = tuple(int(i) for i in np.unravel_index(int(where[k]), batch)) \
                if batch else None
            raise SingularityError(
                f"singular actuator Jacobian G^a_q for joints "
                f"{[s.phi_names[d] for d in idx]}: smallest singular value {sv[-1]:.3e}, "
                f"dimensionless condition number {cond[k]:.3e}"
                + (f" at batch index {index}" if index is not None else ""),
                sigma_min=float(sv[-1]), condition=float(cond[k]),
                where="actuator Jacobian G^a_q", index=index)
        return good

    def forward_dynamics(self, q, qd, tau, loads=None, on_failure: str = "raise", start=None):
        """``q'' = I*_q^-1 (T - q'^T P*_q q' - T_L)`` (..., M).  With
        ``on_failure="nan"`` returns ``(qdd, status)``; ``start`` an explicit warm
        start of the assembly (..., N)."""
        if loads is None and on_failure in ("raise", "nan"):
            fast = self._one("forward_dynamics", q, qd, tau, start,
                             singular=on_failure == "nan")
            if fast is not None:
                if isinstance(fast, tuple):
                    return fast[0], np.asarray(int(fast[1]))
                return (fast, np.asarray(0)) if on_failure == "nan" else fast
        self._check_failure_mode(on_failure)
        qf, batch = self._flat(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        tau = match_batch(tau, self.dof, batch, "tau").T
        fast = None if loads else self._compiled("forward_dynamics", qf, start, on_failure,
                                                 qd, tau)
        if fast is not None:
            qdd, status = fast
            qdd = qdd.reshape(batch + (self.dof,))
            return (qdd, status.reshape(batch)) if on_failure == "nan" else qdd
        each = self._per_configuration(loads)
        chain_loads = None if each else self._loads_for(loads)

        def fn(phi, idx):
            tr, _, phid, phidd, _ = closure_transfer(
                self.system, phi, 1, self.max_condition,
                velocity=(qd[idx], np.zeros((len(idx), self.dof))))
            cl = self._loads_for(loads, phi, phid) if each else chain_loads
            bias = tr.load(self._joint_loads(phi, phid, phidd, cl))
            I = self._inertia(phi, tr)
            return spd_solve(I, tau[idx] - bias,
                             f"effective inertia I* in {self.coordinate_names}")

        if loads is not None and loads.batched and qf.shape[0] > 1:
            asm = self._assembled(qf, batch, start, on_failure="raise")
            with located(batch, qf.shape[0]):
                qdd = fn(asm.phi, np.arange(qf.shape[0]))
            status = asm.status
        else:
            qdd, status = self._evaluate(qf, batch, fn, (self.dof,), on_failure, start)
        qdd = qdd.reshape(batch + (self.dof,))
        return (qdd, status.reshape(batch)) if on_failure == "nan" else qdd

    def _inertia(self, phi, tr) -> np.ndarray:
        I = 0.0
        for chain, idx in self.open_chains:
            if chain.total_mass <= 0:
                continue
            I = I + tr.rows(idx).inertia(chain.dynamics(phi[:, idx]).I_star)
        return I


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
            phi = model._assembled(qf, self._batch, start).phi
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
        with located(batch, qf.shape[0]):
            self._phi = model._assembled(qf, batch, start).phi
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
                      for ci, (c, idx) in enumerate(m.open_chains) if c.total_mass > 0}
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
