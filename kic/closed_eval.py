"""How a closed model is evaluated: compiled kernels or numpy, chosen once per model.

A :class:`kic.ClosedModel` is a description (its coordinates, loops, assembly
mode); evaluating it at q is this module's business.  Two evaluations answer
the same questions with the same numbers:

* :class:`NumpyEvaluation`: the staged path of arrays: assembly
  (:mod:`kic.assembly`), transfer (:mod:`kic.transfer`) and each open chain's
  own model, in blocks of configurations;
* :class:`CompiledEvaluation`: the compiled kernels of the closed layer (one
  pose per loop iteration, from a :class:`kic.closed_plan.ClosedPlan`) for one
  configuration, for a batch and for the free motion, falling back to the
  numpy path wherever they decline (a pose they could not assemble in the
  model's mode, a failure to raise with the numpy path's reports, loads).

:func:`evaluation_for` chooses one per model as the backend in force
(:func:`kic.set_backend`) says, the way scipy's ``Rotation`` chooses its
backend per instance; the model (:attr:`kic.ClosedModel.evaluation`) asks for
it again only when the backend or its ``max_condition`` changes.  The compiled
kernels are loaded and the plan built on the first compiled call, not before a
numpy-only question (kinematics, conditions); for closures the kernels do not
cover (coordinate functions, loops reduced per configuration) the compiled
entries decline.  Callers never branch on the backend: they call the chosen
evaluation, whose compiled-only entries (:meth:`NumpyEvaluation.one`,
:meth:`~NumpyEvaluation.batch`, :meth:`~NumpyEvaluation.track`,
:meth:`~NumpyEvaluation.free_motion_steps`) answer None where they decline, and
the numpy path answers.

Every other module reaches the closed kernels through this one (the import
below is the only one in :mod:`kic`; the design batches call :func:`design_loads`).
"""
from __future__ import annotations

import copy
import re

import numpy as np

from .kernels import closed as compiled_closed   # the one import of the closed kernels
from ._array import blocks
from .actuation import load_distribution
from .assembly import Assembly, assemble, guessed_start, in_mode, reference_branch
from .backend import spd_solve, use_compiled
from .closed_plan import plan_from_model
from .errors import (ClosureError, KicError, ModelError, SingularityError, Status,
                     at_batch_indices, located)
from .limits import outside_limits_error
from .loads import Loads
from .loops import scaled_condition
from .settings import BATCH_WORK_BYTES
from .transfer import closure_transfer

__all__ = ["NumpyEvaluation", "CompiledEvaluation", "evaluation_for", "design_loads"]

_F8 = np.dtype(np.float64)

_NO_ACTUATORS = np.zeros(0, np.int64)
# plain ints for the per-call checks (comparing with enum members costs microseconds)
_UNASSEMBLABLE, _OTHER_MODE = int(Status.UNASSEMBLABLE), int(Status.OTHER_MODE)
_OUTSIDE_LIMITS = int(Status.OUTSIDE_LIMITS)


def _native_float64(a: np.ndarray) -> bool:
    """``a``'s elements are native float64: numpy's descriptor (one identity look-up,
    the common case) or an equal one."""
    return a.dtype is _F8 or a.dtype == _F8


def in_caller_batch(exc: KicError, first: int, size: int, batch: tuple) -> KicError:
    """An error raised for a block of ``size`` configurations (indices in that block)
    starting at flat configuration ``first`` of a batch of shape ``batch``, with its
    indices in that batch: the ``indices`` a ClosureError lists, the ``index`` of
    the others, and the message that names them."""
    def moved(i) -> tuple:
        return tuple(int(k) for k in np.unravel_index(first + int(i[0]), batch))
    indices = getattr(exc, "indices", None)
    if indices:
        new = copy.copy(exc)
        new.indices = [moved(i) for i in indices]
        new.index = new.indices[0]
        new.args = (str(exc).replace(at_batch_indices(indices, True),
                                     at_batch_indices(new.indices, True)),)
        return new
    if exc.index is not None:
        return exc.in_batch(first, size, batch)
    # no index attribute: a message that names "batch index (k,)" (a numpy int or not)
    found = _BLOCK_INDEX.search(str(exc))
    if found is None:
        return exc
    new = copy.copy(exc)
    new.args = (_BLOCK_INDEX.sub(f"batch index {moved((found.group(1),))}", str(exc),
                                 count=1),)
    return new


_BLOCK_INDEX = re.compile(r"batch index \((?:np\.int64\()?(\d+)\)?,\)")
_SINGULAR = (int(Status.SINGULAR), int(Status.SINGULAR_LOAD))


def _laid_out(a) -> np.ndarray:
    """``a`` as the compiled kernels take it: float64, C-contiguous and writable
    (numba types a read-only or strided array apart, and each type compiles the
    kernels' entry again, seconds), copied only where it is not."""
    if type(a) is not np.ndarray or a.dtype != _F8 or not a.flags.c_contiguous \
            or not a.flags.writeable:
        a = np.array(a, dtype=np.float64, order="C")
    return a


def design_loads(ibuf, floats, q, qd, x, act, phi0, path: bool, modes, skip) -> tuple | None:
    """The compiled loads of a design batch (:func:`kic.kernels.closed.design_loads`,
    arguments and result as there) where the compiled kernels are in force, else
    None: the caller, :class:`kic.DesignBatch`, then evaluates each design's model."""
    if use_compiled() and compiled_closed.load():
        return compiled_closed.design_loads(ibuf, floats, q, qd, x, act, phi0, path, modes,
                                            skip)
    return None


def evaluation_for(model, mode: np.ndarray, block_mode: np.ndarray) -> "NumpyEvaluation":
    """The evaluation of ``model`` under the backend in force: compiled where the
    compiled kernels are in force, else numpy.  ``mode`` (P,) and ``block_mode``
    (B,) are the model's assembly mode (float64)."""
    if use_compiled() and compiled_closed.available:
        return CompiledEvaluation(model, mode, block_mode)
    return NumpyEvaluation(model, mode, block_mode)


class NumpyEvaluation:
    """A closed model evaluated by the staged numpy path.

    Every method takes the configurations flattened, ``qf`` (n, M), with the
    ``batch`` shape they came in (for the reports), and rates batch-first
    (n, M); the model checks the arguments and shapes the answers.
    """

    compiled = False

    def __init__(self, model, mode: np.ndarray, block_mode: np.ndarray) -> None:
        self.model = model
        self.system = model.system
        self.mode = mode
        self.block_mode = block_mode
        # the compiled kernels check det A per block; where blocks refine, the finer
        # signs are checked on their results
        self.refined = len(self.system.mode_parts) > len(self.system.blocks)
        self._last_actuators: tuple | None = None
        self._pose_bytes: int | None = None
        # the model's joint limits (kic.limits), None where none applies: every
        # evaluation at a pose checks its assembled phi against them here
        limits = model.limits
        self.limits = limits if limits.checked else None

    # ------------------------------------------- compiled entries (none here)
    def one(self, what: str, q, qd, x, start, act=_NO_ACTUATORS, singular: bool = False):
        """The compiled answer for one configuration, or None (see
        :meth:`CompiledEvaluation.one`)."""
        return None

    def batch(self, what: str, qf, start, on_failure, *rates, act=None):
        """The compiled answer for a batch, or None (see :meth:`CompiledEvaluation.batch`)."""
        return None

    def track(self, q, start):
        """Joint values and condition at one configuration, or None (see
        :meth:`CompiledEvaluation.track`)."""
        return None

    def free_motion_steps(self, t, y, t_end, start, **options):
        """Compiled steps of the free motion, or None (see
        :meth:`CompiledEvaluation.free_motion_steps`)."""
        return None

    def motion_rhs(self):
        """A compiled right-hand side of the motion, or None (see
        :meth:`CompiledEvaluation.motion_rhs`)."""
        return None

    def joint_loads_at(self, loads, y, start):
        """Joint loads of ``loads`` at one state for the compiled right-hand side,
        or None (see :meth:`CompiledEvaluation.joint_loads_at`)."""
        return None

    def drive_terms(self, q, qd, start, act):
        """The terms of a driven model at one pose, or None (see
        :meth:`CompiledEvaluation.drive_terms`)."""
        return None

    def actuator_jacobian(self, q, act, start=None):
        """G^a_q at one configuration, or None (see
        :meth:`CompiledEvaluation.actuator_jacobian`)."""
        return None

    def closure_rows(self, phi):
        """The closure's reduced residual and Jacobian at joint values, or None (see
        :meth:`CompiledEvaluation.closure_rows`)."""
        return None

    def joint_space(self, phi, phid):
        """The joint-space dynamics' terms, or None (see
        :meth:`CompiledEvaluation.joint_space`)."""
        return None

    # ----------------------------------------------------------- arguments
    def start(self, start, n: int):
        """An explicit warm start as (n, N) or (1, N) rows, checked; None stays None."""
        if start is None:
            return None
        N = self.system.N
        s = np.asarray(start, dtype=float)
        if s.shape[-1:] != (N,) or not np.all(np.isfinite(s)):
            raise ModelError(f"start must give the {N} joint values {self.model.phi_names} "
                             f"(..., {N}) finite, got shape {s.shape}")
        return s.reshape(-1, N) if s.size // N == n else s.reshape(-1, N)[:1]

    def actuator_index(self, actuators) -> np.ndarray:
        """joint_indices of ``actuators``, kept for the last list asked (a control
        loop asks for the same actuators every time)."""
        key = tuple(actuators) if not isinstance(actuators, str) else (actuators,)
        cached = self._last_actuators
        if cached is None or cached[0] != key:
            cached = (key, np.ascontiguousarray(self.model.joint_indices(actuators), np.int64))
            self._last_actuators = cached
        return cached[1]

    # ------------------------------------------------------------ assembly
    def assembly(self, qf, batch, start) -> Assembly:
        """:meth:`kic.ClosedModel.assembly` of the flattened configurations."""
        m, N = self.model, self.system.N
        asm = assemble(self.system, qf, self.mode, m.reference_phi,
                       self.start(start, qf.shape[0]), m.guess)
        cond = self.conditions(asm)
        return Assembly(asm.phi.reshape(batch + (N,)), asm.status.reshape(batch),
                        asm.residual.reshape(batch), asm.mode.reshape(batch + (-1,)),
                        asm.attempt.reshape(batch + (N,)), cond.reshape(batch))

    def assemble(self, qf, batch, start, on_failure) -> tuple[np.ndarray, np.ndarray]:
        """Joint values (n, N) and status (n,), raising unless ``on_failure="nan"``."""
        fast = self.batch("assemble", qf, start, on_failure)
        if fast is None:
            asm = self.assembled_in_blocks(qf, batch, start, on_failure)
            fast = asm.phi, asm.status
        return fast

    def assembled(self, qf, batch, start=None, on_failure="raise") -> Assembly:
        """The numpy assembly, raising for failed configurations unless "nan"."""
        m = self.model
        asm = assemble(self.system, qf, self.mode, m.reference_phi,
                       self.start(start, qf.shape[0]), m.guess)
        if on_failure == "raise" and not asm.ok.all():
            self.raise_failures(asm, batch)
        status = self.within_limits(asm.phi, asm.status, batch, on_failure)
        if status is not asm.status:
            asm.phi = np.where((status == _OUTSIDE_LIMITS)[:, None], np.nan, asm.phi)
            asm.status = status
        return asm

    def within_limits(self, phi, status, batch, on_failure) -> np.ndarray:
        """``status`` (n,) with OUTSIDE_LIMITS where assembled joint values phi (n,
        N) violate the model's limits (:meth:`kic.limits.JointLimits.status`, the
        one test); ``status`` itself where no limit applies or fails.  Raises the
        :class:`kic.ClosureError` naming the joint, its value, its range and the
        batch indices unless ``on_failure="nan"``."""
        if self.limits is None:
            return status
        checked = self.limits.status(phi, status)
        outside = checked == _OUTSIDE_LIMITS
        if not outside.any():
            return status
        if on_failure == "raise":
            raise outside_limits_error(self.limits, phi, checked, batch, self.model.name)
        return checked

    def raise_failures(self, asm: Assembly, batch: tuple) -> None:
        m, s = self.model, self.system
        bad = np.nonzero(~asm.ok)[0]
        indices = [tuple(int(i) for i in np.unravel_index(k, batch)) if batch else ()
                   for k in bad]
        status = [Status(int(asm.status[k])) for k in bad]
        first = bad[0]
        res, _ = s.residuals(asm.attempt[first:first + 1])
        norms = [float(np.linalg.norm(r)) for r in res]
        loop = s.loops[int(np.argmax(norms))].name if norms else None
        why = ("it closes only in another assembly mode than the model's "
               f"{m.mode}" if status[0] == Status.OTHER_MODE else
               "outside the workspace, or not reachable in the model's assembly mode "
               f"{m.mode}")
        where = at_batch_indices(indices, bool(batch))
        raise ClosureError(
            f"{len(bad)} configuration(s) of {m.name or 'the model'} cannot be assembled "
            f"(loop {loop!r} stays open): "
            f"{why} (worst closure residual {asm.residual[first]:.3e}, rad or relative to the "
            f"characteristic length {s.length:.4g} m){where}",
            loop=loop, residual=float(asm.residual[first]),
            index=indices[0] if batch else None, indices=indices if batch else [],
            status=status)

    def conditions(self, asm: Assembly) -> np.ndarray:
        """Worst dimensionless block condition (n,), NaN where not assembled."""
        cond = np.full(asm.phi.shape[0], np.nan)
        ok = asm.ok
        if ok.any():
            cond[ok] = self.block_conditions(asm.phi[ok])
        return cond

    def block_conditions(self, phi: np.ndarray) -> np.ndarray:
        """Worst dimensionless block condition (n,) at assembled joint values (n, N)."""
        s = self.system
        rows, _ = s.rows(phi, 1, residual=False)
        c = np.ones(phi.shape[0])
        for block in s.blocks:
            A, _ = s.block_matrices(rows, block, phi.shape[0], need_q=False)
            c = np.maximum(c, s.condition(A, block))
        return c

    # --------------------------------------------------------------- loads
    def _owners(self) -> tuple[dict, dict]:
        """Body -> (chain, link name) and joint -> chain, for :meth:`kic.Loads.split`."""
        s = self.system
        owner = {b: (ci, s.chains[ci].link_names[li]) for b, (ci, li) in s.owner.items()}
        return owner, {j: ci for j, (ci, _) in s.joint_owner.items()}

    def split_loads(self, loads, phi=None, phid=None) -> list:
        """:meth:`kic.ClosedModel.split_loads`."""
        n_chains = len(self.system.chains)
        owner, joints = self._owners()
        cross: list = []
        parts = loads.split(owner, joints, n_chains, cross=cross)
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
        extra = forces.split(owner, joints, n_chains)
        return [a if b is None else b if a is None else a.combined(b)
                for a, b in zip(parts, extra)]

    def _element_states(self, elements, phi, phid, rates: bool = True) -> list:
        """(Pa, Pb, u, length, rate) of elements between body points at phi (n, N)."""
        N = self.system.N
        phi = np.asarray(phi, dtype=float).reshape(-1, N)
        chains = self.model.open_chains
        kins: dict = {}

        def state(body, p):
            if body is None:                   # the ground: a world point at rest
                P = np.broadcast_to(p, (phi.shape[0], 3))
                return P, np.zeros(P.shape)
            ci, li = self.system.owner[body]
            chain, idx = chains[ci]
            if ci not in kins:
                kins[ci] = chain.kinematics(phi[:, idx], 1)
            P = kins[ci].link_point(li, p)
            if phid is None:
                return P, None
            G = kins[ci].point(li, p).G
            return P, np.einsum("nkm,nm->nk", G, np.asarray(phid, float).reshape(-1, N)[:, idx])

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

    def loads_energy(self, loads, phi) -> np.ndarray:
        """:meth:`kic.ClosedModel.loads_energy_at`."""
        phi = np.asarray(phi, dtype=float).reshape(-1, self.system.N)
        owner, joints = self._owners()
        cross: list = []
        E = np.zeros(phi.shape[0])
        for (chain, idx), cl in zip(self.model.open_chains,
                                    loads.split(owner, joints, len(self.system.chains),
                                                cross=cross)):
            if cl is not None:
                E = E + chain.dynamics(phi[:, idx]).loads_energy(cl)
        for e, st in zip(cross, self._element_states(cross, phi, None, rates=False)):
            E = E + e.energy(st[3])
        return E

    # ------------------------------------------------- blocks of a large batch
    def bytes_per_pose(self) -> int:
        """An upper estimate of one configuration's temporary memory (bytes) on the
        numpy path: the closure's transfer to second order (about N (M + 1)^2
        floats: G, H and the rates) and each open chain's second-order influence
        coefficients (n_c^3 floats per chain of n_c joints).  (A Stewart platform
        measures 7 kB a pose against 12 kB estimated.)"""
        if self._pose_bytes is None:
            M = self.model.dof
            floats = self.system.N * (M + 1) ** 2 + sum(
                len(idx) ** 3 for _, idx in self.model.open_chains)
            self._pose_bytes = 8 * floats
        return self._pose_bytes

    def block_size(self) -> int:
        """Configurations per block of a large batch: :data:`kic.settings.BATCH_WORK_BYTES`
        over :meth:`bytes_per_pose`, at least two (numpy rounds some products of a
        lone configuration differently, in the last bit, than inside a batch)."""
        return max(2, BATCH_WORK_BYTES // self.bytes_per_pose())

    def in_blocks(self, call, qf, batch, start=None) -> tuple:
        """``call(qf_block, batch_block, start_block, first)`` -> arrays with a leading
        axis of the block's configurations, over blocks of :meth:`block_size`
        configurations of ``qf`` (n, M), joined: the same numbers as one call over
        the batch (every configuration is solved on its own), with temporary
        memory bounded whatever n.  ``first`` is the block's first configuration
        in ``qf`` (0 for one call).  A batch that fits in a block is one call; a
        failure raises for the first block that has one, its indices in the
        caller's ``batch``."""
        n = qf.shape[0]
        size = self.block_size()
        if n <= size:
            return call(qf, batch, start, 0)
        start = self.start(start, n)
        whole = start is not None and start.shape[0] == n
        edges = list(range(0, n, size)) + [n]
        if edges[-1] - edges[-2] == 1:      # no lone configuration (see block_size)
            del edges[-2]
        out = None
        for first, stop in zip(edges[:-1], edges[1:]):
            sl = slice(first, stop)
            try:
                part = call(qf[sl], (sl.stop - first,), start[sl] if whole else start, first)
            except KicError as exc:
                raise in_caller_batch(exc, first, sl.stop - first, batch) from None
            if out is None:
                out = tuple(None if a is None else np.empty((n,) + a.shape[1:], a.dtype)
                            for a in part)
            for o, a in zip(out, part):
                if o is not None:
                    o[sl] = a
        return out

    def assembled_in_blocks(self, qf, batch, start=None, on_failure="raise") -> Assembly:
        """:meth:`assembled` over blocks of configurations (:meth:`in_blocks`); where
        the batch takes several blocks, ``attempt`` is not kept (the failures are
        reported block by block)."""
        if qf.shape[0] <= self.block_size():
            return self.assembled(qf, batch, start, on_failure)

        def call(q, b, s, first):
            asm = self.assembled(q, b, s, on_failure)
            return asm.phi, asm.status, asm.residual, asm.mode
        return Assembly(*self.in_blocks(call, qf, batch, start))

    def evaluate_in_blocks(self, qf, batch, fn, tail, on_failure, start=None):
        """:meth:`evaluate` over blocks of configurations (:meth:`in_blocks`); ``fn``
        sees the configurations' indices in ``qf`` as in one call."""
        def call(q, b, s, first):
            return self.evaluate(q, b, lambda phi, idx: fn(phi, idx + first), tail,
                                 on_failure, s)
        return self.in_blocks(call, qf, batch, start)

    # ------------------------------------------------------------ dynamics
    def evaluate(self, qf, batch, fn, tail, on_failure, start=None):
        """Run ``fn(phi, idx)`` -> (n_idx,) + tail over the assembled configurations,
        in blocks of configurations; with ``on_failure="nan"`` failed ones give NaN
        and a status."""
        n = qf.shape[0]
        asm = self.assembled(qf, batch, start, on_failure)
        out = np.full((n,) + tail, np.nan)
        status = asm.status.copy()
        if on_failure == "nan":
            cond = self.conditions(asm)
            status[asm.ok & ~(cond < self.model.max_condition)] = Status.SINGULAR
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
        overflow = (status == Status.OK) & ~np.isfinite(out.reshape(n, int(np.prod(tail)))).all(-1)
        if overflow.any():
            k = int(np.argmax(overflow))
            where = f" at batch index {np.unravel_index(k, batch)}" if batch else ""
            raise ModelError(f"the result overflows float64{where}: the inputs are too large "
                             "for the model's units (finite inputs, non-finite result)")
        return out, status

    def _over_batch(self, qf, batch, fn, on_failure, start):
        """:meth:`evaluate`, or one pass over the whole batch where the loads vary
        along it (they cannot be split into sub-blocks of configurations)."""
        asm = self.assembled(qf, batch, start, on_failure)
        if not asm.ok.all():
            raise ModelError("batched loads need every configuration assembled")
        with located(batch, qf.shape[0]):
            out = fn(asm.phi, np.arange(qf.shape[0]))
        return out, asm.status

    def joint_loads(self, phi, phid, phidd, chain_loads) -> np.ndarray:
        """Joint loads of every open chain at (phi, phi', phi''), summed into phi (n, N)."""
        T = np.zeros(phi.shape)
        for (chain, idx), cl in zip(self.model.open_chains, chain_loads):
            if not chain.has_inertia and cl is None:
                continue
            T[:, idx] += chain.inverse_dynamics(phi[:, idx], phid[:, idx], phidd[:, idx],
                                                loads=cl)
        return T

    def loads_for(self, loads, phi=None, phid=None) -> list:
        if loads is None or not loads:
            return [None] * len(self.system.chains)
        return self.split_loads(loads, phi, phid)

    @staticmethod
    def per_configuration(loads) -> bool:
        """Loads that must be split at every batch of configurations: varying along
        the batch, or elements between bodies of two chains."""
        return loads is not None and (loads.batched or bool(loads.elements))

    def inertia(self, phi, tr) -> np.ndarray:
        """I*_q (n, M, M) from the open chains' I* and the transfer (zero where no
        chain carries mass or inertia)."""
        M = self.model.dof
        I = np.zeros((phi.shape[0], M, M))
        for chain, idx in self.model.open_chains:
            if not chain.has_inertia:
                continue
            I = I + tr.rows(idx).inertia(chain.dynamics(phi[:, idx]).I_star)
        return I

    def required(self, qf, batch, qd, qdd, loads, actuators=None, on_failure="raise",
                 start=None):
        """T_q (n, M) and, with ``actuators``, ``G^a_q`` (n, Na, M), and the status."""
        each = self.per_configuration(loads)
        chain_loads = None if each else self.loads_for(loads)
        na = 0 if actuators is None else len(actuators)
        M, max_condition = self.model.dof, self.model.max_condition

        def fn(phi, idx):
            tr, _, phid, phidd, _ = closure_transfer(self.system, phi, 1, max_condition,
                                                     velocity=(qd[idx], qdd[idx]))
            cl = self.loads_for(loads, phi, phid) if each else chain_loads
            T = tr.load(self.joint_loads(phi, phid, phidd, cl))
            if not na:
                return T
            return np.concatenate([T, tr.G[:, actuators].reshape(len(idx), na * M)], axis=1)

        if loads is not None and loads.batched and qf.shape[0] > 1:
            out, status = self._over_batch(qf, batch, fn, on_failure, start)
        else:
            out, status = self.evaluate_in_blocks(qf, batch, fn, (M + na * M,), on_failure,
                                                  start)
        return out[:, :M], (out[:, M:].reshape(out.shape[0], na, M) if na else None), status

    def inverse_dynamics(self, qf, batch, qd, qdd, loads, on_failure, start):
        """T_q (n, M) and the status (n,)."""
        fast = None if loads else self.batch("inverse_dynamics", qf, start, on_failure,
                                             qd, qdd)
        if fast is not None:
            return fast
        T, _, status = self.required(qf, batch, qd, qdd, loads, on_failure=on_failure,
                                     start=start)
        return T, status

    def forward_dynamics(self, qf, batch, qd, tau, loads, on_failure, start):
        """q'' (n, M) and the status (n,)."""
        fast = None if loads else self.batch("forward_dynamics", qf, start, on_failure,
                                             qd, tau)
        if fast is not None:
            return fast
        m = self.model
        each = self.per_configuration(loads)
        chain_loads = None if each else self.loads_for(loads)
        what = f"effective inertia I* in {m.coordinate_names}" + (
            "" if any(c.has_inertia for c, _ in m.open_chains)
            else " (no body of the model has mass or rotational inertia)")

        def fn(phi, idx):
            tr, _, phid, phidd, _ = closure_transfer(
                self.system, phi, 1, m.max_condition,
                velocity=(qd[idx], np.zeros((len(idx), m.dof))))
            cl = self.loads_for(loads, phi, phid) if each else chain_loads
            bias = tr.load(self.joint_loads(phi, phid, phidd, cl))
            return spd_solve(self.inertia(phi, tr), tau[idx] - bias, what)

        if loads is not None and loads.batched and qf.shape[0] > 1:
            asm = self.assembled(qf, batch, start, on_failure="raise")
            with located(batch, qf.shape[0]):
                return fn(asm.phi, np.arange(qf.shape[0])), asm.status
        return self.evaluate_in_blocks(qf, batch, fn, (m.dof,), on_failure, start)

    def actuator_loads(self, qf, batch, qd, qdd, idx, weights, loads, on_failure, start):
        """tau (n, Na) and the status (n,) (see :meth:`kic.ClosedModel.actuator_loads`)."""
        fast = None if loads or weights is not None else self.batch(
            "actuator_loads", qf, start, on_failure, qd, qdd, act=idx)
        if fast is not None:
            return fast
        if loads is not None and loads.batched:     # loads along the batch: one pass
            return self.actuator_loads_of(qf, batch, qd, qdd, idx, weights, loads,
                                          on_failure, start)

        def call(q, b, s, first):
            rows = slice(first, first + q.shape[0])
            return self.actuator_loads_of(q, b, qd[rows], qdd[rows], idx, weights, loads,
                                          on_failure, s)
        return self.in_blocks(call, qf, batch, start)

    def actuator_loads_of(self, qf, batch, qd, qdd, idx, weights, loads, on_failure, start):
        """:meth:`actuator_loads` on the numpy path, for configurations that fit in
        a block (or loads that vary along the batch)."""
        T, G, status = self.required(qf, batch, qd, qdd, loads, idx, on_failure, start)
        tau = np.full((qf.shape[0], len(idx)), np.nan)
        ok = status == Status.OK
        if G.shape[-2] == G.shape[-1]:
            # checked like the closures: near a singularity of the actuation the
            # loads grow without bound and a SingularityError says so
            Gt = np.swapaxes(G[ok], -1, -2)
            good = self.actuation_regular(Gt, idx, batch, np.nonzero(ok)[0], on_failure)
            sel = np.nonzero(ok)[0][good]
            tau[sel] = np.linalg.solve(Gt[good], T[sel][..., None])[..., 0]
            status[np.nonzero(ok)[0][~good]] = Status.SINGULAR_LOAD
        elif ok.any():
            tau[ok] = load_distribution(G[ok], T[ok], weights)
        return tau, status

    def actuation_regular(self, Gt, idx, batch, where, on_failure) -> np.ndarray:
        """Which actuation Jacobians (G^a_q)^T are regular (dimensionless condition
        below max_condition); raises for the first singular one unless "nan"."""
        if Gt.shape[0] == 0:
            return np.ones(0, bool)
        s = self.system
        cond = scaled_condition(Gt, s.is_prismatic[s.q_idx], s.is_prismatic[idx], s.length)
        good = cond < self.model.max_condition
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


class CompiledEvaluation(NumpyEvaluation):
    """A closed model evaluated by the compiled kernels from its :attr:`plan`,
    the numpy path answering wherever they decline."""

    compiled = True

    def __init__(self, model, mode, block_mode) -> None:
        super().__init__(model, mode, block_mode)
        self._plan = None
        self._planned = False
        # what every one-pose call checks, as plain values
        self._dof, self._n_joints = (model.dof,), (self.system.N,)
        # a writable copy of the start: numba types a read-only array apart, and
        # each type compiles the kernels' entry again (seconds)
        self._reference = np.array(model.reference_phi)
        # where :meth:`one` lets the kernel put joint values that no one keeps: it
        # reads them only for finer modes or joint limits (then a new array each call)
        self._phi = None if self.refined or self.limits is not None else \
            np.empty(self._n_joints)

    @property
    def plan(self):
        """The model flattened for the kernels (:class:`kic.closed_plan.ClosedPlan`),
        built on the first compiled call (the kernels are loaded then, not before
        a numpy-only question such as :meth:`kic.ClosedModel.kinematics`); None
        for closures the kernels do not cover (coordinate functions, loops
        reduced per configuration): every compiled entry then declines."""
        if not self._planned:
            self._plan = plan_from_model(self.model) if compiled_closed.load() else None
            self._planned = True
        return self._plan

    def closure_rows(self, phi: np.ndarray) -> tuple | None:
        """The reduced closure residual (n, R) and Jacobian ``dc/dphi`` (n, R, N) at
        joint values ``phi`` (n, N), rows in loop order as
        :meth:`kic.loops.LoopSystem.jacobian` gives them, by the compiled kernels
        (microseconds a pose); None where they do not cover the closures."""
        plan = self.plan
        return None if plan is None else compiled_closed.closure_rows(plan, phi)

    def joint_space(self, phi: np.ndarray, phid: np.ndarray) -> tuple | None:
        """``(M, b, J, c)`` of :func:`kic.joint_space.joint_space_dynamics` at joint
        values and rates (n, N) by the compiled kernels; None where they do not
        cover the closures."""
        plan = self.plan
        return None if plan is None else compiled_closed.joint_space(plan, phi, phid)

    def off_mode(self, phi, status) -> np.ndarray:
        """Poses a kernel assembled (status OK) outside the finer mode (n,)."""
        status = np.asarray(status).reshape(-1)
        bad = np.zeros(status.shape, bool)
        if not self.refined:
            return bad
        ok = np.nonzero(status == 0)[0]
        if ok.size:
            found = self.system.mode(np.asarray(phi, float).reshape(-1, self.system.N)[ok])
            bad[ok] = ~in_mode(found, self.mode)
        return bad

    def one(self, what: str, q, qd, x, start, act=_NO_ACTUATORS, singular: bool = False):
        """The compiled path for one configuration given as float vectors, with no
        argument handling beyond a type check: the output, or None where anything
        is unusual (another layout, a batch, a failed pose: the general path then
        answers or raises with its reports).  With ``singular``, a pose assembled
        but singular gives (NaN output, status): no other start helps.  Without
        ``start`` Newton starts from the reference (a guess function's call costs
        more than the pose), as :meth:`batch` starts every pose: the same answer,
        bit for bit.  A pose outside the joint limits declines
        (the general path reports it, before any singularity).

        This runs on every one-pose call: its checks are plain Python on plain
        values (a numpy reduction costs a microsecond, a fifth of a five-bar pose)."""
        M = self._dof
        # ``flags.carray``: C-contiguous, aligned and writable in one look-up; a
        # float64 array's dtype is mostly numpy's one float64 descriptor, so identity
        # answers first; an equal descriptor that is another object (arrays made by
        # compiled kernels loaded from numba's cache carry one) is accepted too, and a
        # byte-swapped one declines (the general path converts it)
        for a in (q, qd, x):
            if type(a) is not np.ndarray or not _native_float64(a) or a.shape != M \
                    or not a.flags.carray:
                # x may be the actuators' loads (checked only here: off the common path)
                if a is x and what == "actuated_forward_dynamics" and type(x) is np.ndarray \
                        and _native_float64(x) and x.shape == act.shape and x.flags.carray:
                    continue
                return None
        if start is None:
            phi0, path = self._reference, True
        elif type(start) is np.ndarray and start.shape == self._n_joints \
                and _native_float64(start) and start.flags.carray:
            phi0, path = start, False
        else:
            return None
        plan = self._plan if self._planned else self.plan
        if plan is None:
            return None
        phi_one = self._phi if self._phi is not None else np.empty(self._n_joints)
        out, status, _, finite = compiled_closed.one(plan, what, q, qd, x, act, phi0, path,
                                                     self.block_mode, phi_one)
        if status == 0:
            if self.refined and self.off_mode(phi_one, [0])[0]:
                return None
            if self.limits is not None and not self.limits.within(phi_one):
                return None            # outside the limits: the general path reports
            # a non-finite result of finite inputs (an overflow) takes the general path
            return out if finite else None
        if singular and status in _SINGULAR:
            if self.limits is not None and not self.limits.within(phi_one):
                return None            # outside the limits first: the general path reports
            return np.full(out.shape, np.nan), status
        return None

    def drive_terms(self, q, qd, start, act) -> tuple | None:
        """What a driven model's right-hand side needs at one pose (q, q') (M,)
        each, assembled from the joint values ``start`` (N,) (None: along the
        path from the reference): ``(I* (M, M), bias (M,), phi (N,), G^a_q (Na,
        M), a' (Na,), h (Na,))`` for the actuated joints ``act`` (int64 (Na,)),
        the bias the loads at q'' = 0 (velocity terms and gravity) and h the
        actuators' accelerations at q'' = 0; the last three are None for an
        empty ``act``.  None where the general path must answer (a failed pose,
        modes finer than the blocks, no plan)."""
        if self.refined or self.plan is None:
            return None
        plan, zero = self.plan, np.zeros(self._dof[0])
        phi0, path = (self._reference, True) if start is None else (_laid_out(start), False)
        q, qd = _laid_out(q), _laid_out(qd)
        phi = np.empty(self._n_joints)
        bias, status, _, _ = compiled_closed.one(plan, "inverse_dynamics", q, qd, zero,
                                                 _NO_ACTUATORS, phi0, path, self.block_mode, phi)
        if status != 0:
            return None            # the public path answers, or raises with the report
        I, st = compiled_closed.inertia(plan, phi)[:2]
        if st[0] != 0:
            return None
        if act.shape[0] == 0:
            return I[0], bias, phi, None, None, None
        G = compiled_closed.transfer(plan, phi)[0][0][act]
        phid, phidd = compiled_closed.rates(plan, q, qd, zero, phi)[:2]
        return I[0], bias, phi, G, phid[0][act], phidd[0][act]

    def actuator_jacobian(self, q, act, start=None) -> np.ndarray | None:
        """``G^a_q`` (Na, M) of the actuated joints ``act`` (int64 (Na,)) at one
        configuration q (M,) float64 assembled from ``start`` (N,) (a control
        loop's last joint values); None where the general path must answer.
        Without a start the general path answers: a pose's Jacobian then equals
        bit for bit the one it gets in a batch (:func:`kic.task_conditioning`
        relies on that), which is evaluated by that path."""
        if start is None or type(q) is not np.ndarray or q.dtype != _F8 \
                or q.shape != self._dof or type(start) is not np.ndarray \
                or start.shape != self._n_joints or self.plan is None:
            return None
        q = _laid_out(q)
        # one kernel call: the assembly and the transfer there
        phi = np.empty(self._n_joints)
        G, status, _, _ = compiled_closed.one(self.plan, "transfer", q, q, q, _NO_ACTUATORS,
                                              _laid_out(start), False, self.block_mode, phi)
        if status != 0 or (self.refined and self.off_mode(phi, [0])[0]):
            return None
        return G.reshape(self.system.N, self._dof[0])[act]

    def track(self, q, start) -> tuple | None:
        """Joint values (N,) at one configuration q (M,) assembled from ``start``
        (N,) (None: the reference), and the condition number of the coordinates
        there: the lean call a simulation makes at every step; None where the
        general path must answer."""
        if start is None:
            start = self._reference
        if type(q) is not np.ndarray or q.shape != self._dof \
                or q.dtype != _F8 or type(start) is not np.ndarray \
                or start.shape != self._n_joints or self.plan is None:
            return None
        q = _laid_out(q)
        phi = np.empty(self._n_joints)
        _, status, cond, _ = compiled_closed.one(self.plan, "assemble", q, q, q, _NO_ACTUATORS,
                                                 _laid_out(start), False, self.block_mode, phi)
        if status == 0 and self.refined and self.off_mode(phi, [0])[0]:
            return None
        return (phi, cond) if status == 0 else None

    def free_motion_steps(self, t: float, y, t_end: float, start, *, rtol: float,
                          atol: float, step: float = 0.0, max_step: float = np.inf,
                          stop_condition: float = np.inf, relax: float = np.inf,
                          capacity: int = 2048, tau=None, joint_loads=None,
                          times=None, method: str = "DOP853",
                          resume: tuple | None = None) -> dict | None:
        """Steps of the motion under gravity, a constant input ``tau`` (M,) at the
        coordinates (N m / N; default none) and constant ``joint_loads`` (N,) at
        the joints (kic's sign: the loads the joints must supply) from
        time ``t`` (s) and state ``y = (q, q')`` (2M,) towards ``t_end``, in one
        compiled call: scipy's DOP853 (Dormand-Prince 8(5,3), its coefficients,
        error norm and step-size control, step for step; ``method="LSODA"``:
        scipy's LSODA, step for step, started afresh at order 1, as a new scipy
        solver is, ``step`` its first step, or going on from the ``resume`` a
        call returned), every trial point
        assembled from the joint values of the last accepted step (``start`` (N,)
        first), every accepted step assembled and recorded with the worst block
        condition number there.  ``step`` > 0 is the first step size (s); 0 lets
        the integrator choose it as scipy does.  Once a step's condition is at
        most ``relax``, ``stop_condition`` falls to ``relax`` (hysteresis: a
        raised threshold holds only while the condition stays high).  ``times``
        (increasing, after ``t``; s): output times sampled by DOP853's dense
        output (scipy's interpolant, LSODA's: its Nordsieck polynomial),
        assembled and returned as ``samples``
        ``(t, y, phi)``.

        Returns None where the compiled path does not serve (another method,
        assembly modes finer than the blocks; on the numpy path always); else a
        dict: ``code``
        (0 reached ``t_end``; 1 stopped after a step whose condition exceeded
        ``stop_condition``; 2 a trial point failed with :class:`kic.Status`
        ``status``; 3 the step size underflowed; 4 ``capacity`` steps recorded;
        5 an accepted point could not be assembled (``status``), not recorded),
        the recorded ``t`` (k,), ``y`` (k, 2M), ``phi`` (k, N), ``condition``
        (k,) and joint ``rates`` (k, N), the ``state`` ``(t, y, phi)`` where it
        stopped (the last accepted step; the unrecorded point for code 5), the
        ``step`` size to try next
        (for code 2: the one that failed), ``last_step`` (the last accepted
        one), ``nfev`` and the ``threshold`` (``stop_condition``) in effect at
        the end; for LSODA ``resume``, its state there (to go on from the
        ``state`` towards the same ``t_end`` as if not interrupted: after code
        4 or 5).
        """
        if self.refined or self.plan is None or method not in ("DOP853", "LSODA"):
            return None
        M, N = self.model.dof, self.system.N
        y, start = _laid_out(y), _laid_out(start)
        if y.shape != (2 * M,) or start.shape != (N,):
            raise ModelError(f"free_motion_steps: y must have {2 * M} values and start "
                             f"{N}, got {y.shape} and {start.shape}")
        tau = np.zeros(M) if tau is None else np.ascontiguousarray(tau, dtype=float)
        tl = np.zeros(N) if joint_loads is None else np.ascontiguousarray(joint_loads,
                                                                          dtype=float)
        times = np.zeros(0) if times is None else np.ascontiguousarray(times, dtype=float)
        if tau.shape != (M,) or tl.shape != (N,) or times.ndim != 1:
            raise ModelError(f"free_motion_steps: tau must have {M} values and joint_loads "
                             f"{N}, got {tau.shape} and {tl.shape}")
        # scipy's own floor on the relative tolerance
        rtol = max(float(rtol), 100 * np.finfo(float).eps)
        (code, k, ts, ys, phis, conds, t_stop, y_stop, phi_stop, h, nfev, status, last,
         threshold, k_s, ts_s, ys_s, phis_s, phids, *memory) = compiled_closed.free_motion(
            self.plan, self.block_mode, t, t_end, y, start, tau, tl, times, step, rtol, atol,
            max_step, stop_condition, relax, capacity, method, resume)
        return {"code": int(code), "t": ts[:k], "y": ys[:k], "phi": phis[:k],
                "condition": conds[:k], "state": (float(t_stop), y_stop, phi_stop),
                "step": float(h), "last_step": float(last), "nfev": int(nfev),
                "status": int(status), "threshold": float(threshold),
                "samples": (ts_s[:k_s], ys_s[:k_s], phis_s[:k_s]), "rates": phids[:k],
                "resume": tuple(memory) or None}   # LSODA's float and integer memory

    def motion_rhs(self):
        """The right-hand side of the motion as one compiled call per evaluation,
        for integrators stepped from Python: ``rhs(y, start, tau, joint_loads) ->
        (f, phi, status, condition, phid)`` with ``y = (q, q')`` (2M,), the joint values
        assembled from ``start`` (N,), the input ``tau`` (M,) and ``joint_loads``
        (N,) float64 C-contiguous (not checked: the caller lays them out once);
        ``f = (q', q'')``, the worst block condition number and the joint rates
        ``phid`` (N,) (an accepted step's tracking).  None where the
        compiled path does not serve.  Where the assembly mode is finer than the
        blocks (:attr:`refined`), the kernel checks the blocks' signs only: every
        evaluation starts from the caller's ``start`` near it, and the caller
        checks the finer mode where it tracks the motion (:meth:`track`)."""
        if self.plan is None:
            return None
        plan, mode, kernel = self.plan, self.block_mode, compiled_closed.motion_rhs
        return lambda y, start, tau, tl: kernel(plan, mode, start, y, tau, tl)

    def joint_loads_at(self, loads, y, start) -> np.ndarray | None:
        """The joint loads T_L (N,) of applied ``loads`` (:class:`kic.Loads`; kic's
        sign, the loads the joints must supply) at the state ``y = (q, q')`` (2M,),
        assembled from ``start`` (N,) by the compiled kernels, the loads evaluated by
        each open chain's own model: what :meth:`motion_rhs` takes as
        ``joint_loads`` (the finer mode unchecked, as there).  None where the
        compiled assembly fails (the general path then answers or reports)."""
        M, N = self.model.dof, self.system.N
        if self.plan is None:
            return None
        phid, _, phi, status = compiled_closed.rates(self.plan, y[:M], y[M:], np.zeros(M),
                                                     start, mode=self.block_mode)[:4]
        if status[0] != 0:
            return None
        tl = np.zeros(N)
        for (chain, idx), cl in zip(self.model.open_chains,
                                    self.loads_for(loads, phi, phid)):
            if cl is not None:
                tl[idx] += cl.chain_load(chain, phi[:, idx], phid[:, idx])[0]
        return tl

    def batch(self, what: str, qf, start, on_failure, *rates, act=None):
        """One compiled call for the whole batch: (output, status), or None where
        the numpy path must answer (no plan; failures to raise with the numpy
        path's reports; an overflow).

        Every pose is solved as it would be alone (:mod:`kic.assembly`): from
        the warm start, else from the guess function (a closed form: Newton then
        converges in a step), else from the reference; a pose lost from the guess
        tries the reference, and one lost from there is assembled by the numpy
        path's continuation from the reference, the kernel then evaluating it
        from the joint values found.  Never from a batch-mate, so a batch equals
        its poses asked one by one, bit for bit."""
        if self.plan is None:
            return None
        fn = getattr(compiled_closed, what)
        at = 1 if what == "assemble" else 2           # where the kernel puts the status
        m, n = self.model, qf.shape[0]

        def call(rows, phi0, mode=self.block_mode):
            """(out, phi, status) of the poses ``rows`` (None: all) from phi0."""
            a = rates + ((act,) if act is not None else ())
            if rows is not None:
                a = tuple(r[rows] if r.shape[0] == n else r for r in rates) + a[len(rates):]
            res = fn(self.plan, qf if rows is None else qf[rows], *a, phi0, mode=mode)
            status = np.array(res[at], int)
            status[self.off_mode(res[at - 1], status)] = _OTHER_MODE
            return res[0], res[at - 1], status

        def again(rows, phi0, mode=self.block_mode):
            """Poses ``rows`` evaluated anew from phi0 (their rows), merged in."""
            o, p, st = call(rows, phi0, mode)
            out[rows], phi[rows], status[rows] = o, p, st

        s = None if start is None else self.start(start, n)
        unreachable = np.zeros(n, bool)       # declared by the guess: not searched
        # from the warm start, else from the reference, as the one-pose shortcut
        # (:meth:`one`) starts: a batch equals its poses asked one by one, bit for
        # bit; the guess function serves the poses the reference loses
        out, phi, status = call(None, s if s is not None else self._reference)
        lost = (status == _UNASSEMBLABLE) | (status == _OTHER_MODE)
        if lost.any():
            out, phi = out.copy(), phi.copy()
        if lost.any() and s is None and m.guess is not None:
            idx = np.nonzero(lost)[0]
            phi0, unreachable[idx] = guessed_start(self.system, qf[idx], m.reference_phi, None,
                                                   m.guess)
            go = ~unreachable[idx]
            if go.any():
                again(idx[go], phi0[go])
            out[unreachable] = np.nan
            status[unreachable] = _UNASSEMBLABLE
            lost = ((status == _UNASSEMBLABLE) | (status == _OTHER_MODE)) & ~unreachable
        if lost.any():
            # the numpy path's continuation from the reference, pose by pose as alone
            idx = np.nonzero(lost)[0]
            asm = assemble(self.system, qf[idx], self.mode, m.reference_phi,
                           None if s is None else (s[idx] if s.shape[0] == n else s), m.guess)
            found = idx[asm.ok]
            if found.size:         # in the mode already (the numpy path checked it)
                again(found, asm.phi[asm.ok], np.zeros_like(self.block_mode))
            status[idx[~asm.ok]] = asm.status[~asm.ok]
        if what == "assemble":
            phi = out = reference_branch(self.system, phi, m.reference_phi if s is None else s)
        status = self.within_limits(phi, status, (n,), "nan")
        if on_failure == "raise" and status.any():
            return None                # the numpy path's error report
        if what != "assemble" and not np.isfinite(out[status == 0]).all():
            return None                # an overflow: the numpy path reports it
        bad = status != 0
        if bad.any():
            out = np.where(bad.reshape((-1,) + (1,) * (out.ndim - 1)), np.nan, out)
        return out, status

    def assembly(self, qf, batch, start) -> Assembly:
        """:meth:`kic.ClosedModel.assembly`: the kernel from the starts
        :meth:`batch` takes (each pose as alone), the numpy path for the poses it
        loses (and only those)."""
        if self.plan is None:
            return super().assembly(qf, batch, start)
        m, N, n = self.model, self.system.N, qf.shape[0]
        s = None if start is None else self.start(start, n)
        ref = self._reference
        unreachable = np.zeros(n, bool)       # declared by the guess: the numpy path's report
        # the starts of :meth:`batch`: the warm start, else the reference, then the
        # guess function for the poses the reference loses
        phi, status, res, cond, sign = compiled_closed.assemble(
            self.plan, qf, s if s is not None else ref, mode=self.block_mode)
        status = np.array(status, int)
        status[self.off_mode(phi, status)] = _OTHER_MODE
        lost = (status == _UNASSEMBLABLE) | (status == _OTHER_MODE)
        if lost.any() and s is None and m.guess is not None:
            idx = np.nonzero(lost)[0]
            phi0, unreachable[idx] = guessed_start(self.system, qf[idx], ref, None, m.guess)
            retry = idx[~unreachable[idx]]
            if retry.size:
                got = compiled_closed.assemble(self.plan, qf[retry], phi0[~unreachable[idx]],
                                               mode=self.block_mode)
                for whole, part in zip((phi, status, res, cond, sign), got):
                    whole[retry] = part
                status[retry[self.off_mode(got[0], got[1])]] = _OTHER_MODE
            lost = (status == _UNASSEMBLABLE) | (status == _OTHER_MODE) | unreachable
        phi = reference_branch(self.system, phi, ref if s is None else s)
        ok = status == Status.OK
        if self.refined:
            sign = np.zeros((ok.size, len(self.mode)))
            if ok.any():
                sign[ok] = self.system.mode(phi[ok])
        sign = np.where(ok[:, None], sign, 0.0)
        cond = np.where(ok, cond.max(axis=1) if cond.shape[1] else 1.0, np.nan)
        attempt = phi.copy()
        if lost.any():             # the numpy path's continuation, for these poses alone
            idx = np.nonzero(lost)[0]
            sub = super().assembly(qf[idx], (idx.size,), None if s is None else
                                   (s[idx] if s.shape[0] == n else s))
            phi[idx], status[idx], res[idx], sign[idx], attempt[idx], cond[idx] = (
                sub.phi, sub.status, sub.residual, sub.mode, sub.attempt, sub.condition)
        return Assembly(phi.reshape(batch + (N,)), status.reshape(batch), res.reshape(batch),
                        sign.reshape(batch + (-1,)), attempt.reshape(batch + (N,)),
                        cond.reshape(batch))
