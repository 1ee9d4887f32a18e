"""A sequence of linear state-space models along a trajectory, and exports
(python-control, scipy.signal, MATLAB .mat, numpy .npz)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .backend import spd_solve
from ._files import write_atomically
from .errors import ModelError
from .settings import RANK_RTOL, TINY

__all__ = ["StateSpaceSequence"]


@dataclass
class StateSpaceSequence:
    """``x' = A(t) x + B(t) u + E(t) w``, ``y = C(t) x + D(t) u`` at K times.

    Attributes
    ----------
    t : ndarray (K,)
    A : ndarray (K, n, n)
    B : ndarray (K, n, m)
    E : ndarray (K, n, d)
        Disturbance input (generalized load deviations).
    C : ndarray (K, p, n)
    D : ndarray (K, p, m)
    states, inputs, disturbances, outputs : list of str
        Signal names; every state, input and output is a deviation from the
        nominal motion and named so (``dq[...]``, ``dv[...]``, ``dp[tip.x]``).
    nominal : kic.NominalInputs
    dt : float or None
        Sample period (s) of a discrete-time sequence (:meth:`discrete`); None
        for continuous time.
    status : ndarray (K,) of kic.Status or None
        Per sample, from ``on_failure="nan"``: NaN models where not OK.
    """

    t: np.ndarray
    A: np.ndarray
    B: np.ndarray
    E: np.ndarray
    C: np.ndarray
    D: np.ndarray
    states: list
    inputs: list
    disturbances: list
    outputs: list
    nominal: object = None
    trajectory: object = field(default=None, repr=False)
    dt: float | None = None
    status: object = field(default=None, repr=False)

    def __len__(self) -> int:
        return self.t.size

    @classmethod
    def electromechanical(cls, t, inertia, damping, stiffness, G, dG, C_M, C_E, L, R,
                          C=None, coordinates=None, motors=None, outputs=None, nominal=None,
                          trajectory=None, D=None, status=None) -> "StateSpaceSequence":
        """The plant of a mechanism driven by DC motors, linearized along a motion.

        With armature inductances ``L`` the state is ``x = (dq, dq', di)``
        (2M + Na), inputs the voltage deviations ``dv`` (Na), disturbance ``dT``
        (M) a generalized load added to the mechanism's load::

            I dq'' + C dq' + K dq = G^T C_M di - dT
            L di' + R di + C_E (G dq' + dG dq) = dv

        With ``L=None`` (the reduced, quasi-static model: currents follow the
        voltages at once) the state is ``x = (dq, dq')`` (2M) and
        ``di = R^-1 (dv - C_E (G dq' + dG dq))`` is substituted.

        Parameters
        ----------
        t : ndarray (K,)
        inertia, damping, stiffness : ndarray (K, M, M)
            ``I``, ``C``, ``K`` of the linearized mechanism with the rotors (kg m^2,
            N m s/rad, N m/rad in rotational coordinates); ``I`` symmetric
            positive definite (checked by the caller, see ActuatedSystem).
        G : ndarray (K, Na, M)
            ``G^a_q``: actuator rates per coordinate rate.
        dG : ndarray (K, Na, M)
            ``d(G^a_q q')/dq`` at the nominal rates.
        C_M, C_E, R : ndarray (Na, Na)
            Torque and back-emf constants through the drive train, resistances (ohm).
        L : ndarray (Na, Na) or None
            Inductances (H); None for the quasi-static model.
        C, D : ndarray (K, p, n), (K, p, Na), optional
            Output rows; default ``y = dq``.
        coordinates, motors, outputs : list of str, optional
            Signal names.
        status : ndarray (K,) of kic.Status, optional
            Per sample; NaN rows where not OK.
        """
        inertia = np.asarray(inertia, float)
        n, M = inertia.shape[:2]
        Na = C_M.shape[0]
        Gt = np.swapaxes(G, -1, -2)
        reduced = L is None
        N = 2 * M + (0 if reduced else Na)
        A = np.zeros((n, N, N))
        A[:, :M, M:2 * M] = np.eye(M)
        B = np.zeros((n, N, Na))
        if reduced:
            Ri = np.linalg.inv(R)
            drive = Gt @ C_M @ Ri                          # load per volt
            stiffness = stiffness + drive @ C_E @ dG       # back-emf currents
            damping = damping + drive @ C_E @ G
            cols = [stiffness, damping, drive, np.broadcast_to(np.eye(M), (n, M, M))]
        else:
            cols = [stiffness, damping, Gt @ C_M, np.broadcast_to(np.eye(M), (n, M, M))]
        widths = [c.shape[-1] for c in cols]
        X = _inertia_solve(inertia, np.concatenate(cols, axis=-1))
        IK, IC, IT, Ii = np.split(X, np.cumsum(widths)[:-1], axis=-1)
        A[:, M:2 * M, :M] = -IK
        A[:, M:2 * M, M:2 * M] = -IC
        if reduced:
            B[:, M:2 * M] = IT
        else:
            Li = np.linalg.inv(L)
            A[:, M:2 * M, 2 * M:] = IT
            A[:, 2 * M:, :M] = -Li @ C_E @ dG
            A[:, 2 * M:, M:2 * M] = -Li @ C_E @ G
            A[:, 2 * M:, 2 * M:] = -Li @ R
            B[:, 2 * M:] = Li
        E = np.zeros((n, N, M))
        E[:, M:2 * M] = -Ii
        coordinates = list(coordinates or [f"q{k}" for k in range(M)])
        motors = list(motors or [f"m{k + 1}" for k in range(Na)])
        if C is None:
            C = np.zeros((n, M, N))
            C[:, :, :M] = np.eye(M)
            outputs = [f"dq[{c}]" for c in coordinates]
        if D is None:
            D = np.zeros((n, C.shape[1], Na))
        states = [f"dq[{c}]" for c in coordinates] + [f"dqd[{c}]" for c in coordinates]
        if not reduced:
            states += [f"di[{m}]" for m in motors]
        out = cls(t=np.asarray(t, float), A=A, B=B, E=E, C=C, D=D, states=states,
                  inputs=[f"dv[{m}]" for m in motors],
                  disturbances=[f"dT[{c}]" for c in coordinates], outputs=list(outputs),
                  nominal=nominal, trajectory=trajectory)
        if status is not None:
            out.status = np.asarray(status)
            bad = out.status != 0
            for M_ in (out.A, out.B, out.E, out.C, out.D):
                M_[bad] = np.nan
        return out

    @property
    def is_discrete(self) -> bool:
        return self.dt is not None

    def discrete(self, dt: float) -> "StateSpaceSequence":
        """The models sampled with a zero-order hold at period ``dt`` (s).

        ``x[k+1] = Ad x[k] + Bd u[k] + Ed w[k]``, ``y[k] = C x[k] + D u[k]`` with
        ``[Ad Bd; 0 1] = expm([A B; 0 0] dt)`` (and Ed likewise from E, the
        disturbance held over the period too), computed at every sample of the
        sequence exactly as ``scipy.signal.cont2discrete(..., method="zoh")``
        does.  Returns a new sequence with ``dt`` set; its exports
        (:meth:`to_control`, :meth:`to_scipy`, ``.mat``, ``.npz``) carry ``dt``.
        """
        from scipy.linalg import expm
        if self.dt is not None:
            raise ModelError(f"these models are discrete already (dt = {self.dt} s)")
        h = _positive(dt, "dt")
        K, n = self.A.shape[:2]

        def hold(B):
            m = B.shape[2]
            em = np.zeros((K, n + m, n + m))
            em[:, :n, :n] = self.A
            em[:, :n, n:] = B
            ms = np.full(em.shape, np.nan)
            for k in range(K):
                if np.isfinite(em[k]).all():          # failed samples stay NaN
                    ms[k] = expm(h * em[k])
            return ms[:, :n, :n], ms[:, :n, n:]

        Ad, Bd = hold(self.B)
        _, Ed = hold(self.E)
        return replace(self, A=Ad, B=Bd, E=Ed, dt=h)

    def index(self, t: float) -> int:
        """The sample whose time is ``t`` (s): the nearest sample, which must lie
        within half a sample spacing of ``t`` (else a ModelError)."""
        try:
            t = float(t)
        except (TypeError, ValueError):
            raise ModelError(f"t must be a time in s, got {t!r}") from None
        if not np.isfinite(t):
            raise ModelError(f"t must be finite, got {t!r}")
        k = int(np.argmin(np.abs(self.t - t)))
        spacing = np.diff(self.t)
        half = 0.5 * (min(spacing[max(k - 1, 0)], spacing[min(k, spacing.size - 1)])
                      if spacing.size else 0.0)
        if abs(self.t[k] - t) > half + 8 * np.finfo(float).eps * max(abs(t), 1.0):
            raise ModelError(f"t = {t!r} s is not on the samples of this sequence "
                             f"({self.t[0]:g} .. {self.t[-1]:g} s, {len(self)} samples)")
        return k

    def at(self, t: float) -> "StateSpaceSequence":
        """The frozen model at time ``t`` (s) (see :meth:`index`), as a sequence of one."""
        return self[self.index(t)]

    def __getitem__(self, k) -> "StateSpaceSequence":
        """Samples ``k`` (an integer index or a slice) as a new sequence."""
        if isinstance(k, slice):
            sel = k
        else:
            k = self._k(k)
            sel = slice(k, k + 1)
        nom = self.nominal.select(sel) if self.nominal is not None else None
        tr = None if self.trajectory is None else self.trajectory.select(sel)
        out = replace(self, t=self.t[sel], A=self.A[sel], B=self.B[sel], E=self.E[sel],
                      C=self.C[sel], D=self.D[sel], nominal=nom, trajectory=tr)
        out.status = None if self.status is None else self.status[sel]
        return out

    def _k(self, k: int) -> int:
        K = len(self)
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise ModelError(f"a sample index must be an integer, got {k!r}; to look a "
                             "model up by time use at(t) or index(t)")
        if not -K <= int(k) < K:
            raise ModelError(f"index {k} out of range for {K} operating points")
        return int(k) % K

    def to_scipy(self, k: int = 0):
        """The frozen model at sample k (an integer) as a ``scipy.signal.StateSpace``
        (continuous, or discrete with ``dt`` after :meth:`discrete`)."""
        from scipy.signal import StateSpace
        k = self._k(k)
        extra = {} if self.dt is None else {"dt": self.dt}
        return StateSpace(self.A[k], self.B[k], self.C[k], self.D[k], **extra)

    def to_control(self, k: int = 0, disturbance: bool = False):
        """The frozen model at sample k (an integer index; :meth:`at` looks one up
        by time) as a ``control.StateSpace`` (discrete with ``dt`` after
        :meth:`discrete`) with named
        states, inputs and outputs (requires python-control, the ``control`` extra).

        Names are kic's with "." replaced by "_" (python-control reserves the
        dot), e.g. ``q[platform_x]``; ``disturbance=True`` appends the
        disturbance inputs ``dT[...]`` after the voltages."""
        try:
            import control
        except ImportError as exc:            # pragma: no cover - depends on the extra
            raise ImportError("to_control needs python-control: pip install 'kic[control]'") \
                from exc
        k = self._k(k)
        B, D, inputs = self.B[k], self.D[k], list(self.inputs)
        if disturbance:
            B = np.concatenate([B, self.E[k]], axis=1)
            D = np.concatenate([D, np.zeros((D.shape[0], self.E.shape[2]))], axis=1)
            inputs += self.disturbances
        # python-control reserves "." in signal names (subsystem paths)
        clean = lambda names: [n.replace(".", "_") for n in names]      # noqa: E731
        extra = {} if self.dt is None else {"dt": self.dt}
        return control.ss(self.A[k], B, self.C[k], D, states=clean(self.states),
                          inputs=clean(inputs), outputs=clean(self.outputs), **extra)

    def save_mat(self, path) -> None:
        """Save for MATLAB (``scipy.io.savemat``): variables ``A`` (n x n x K),
        ``B``, ``E``, ``C``, ``D`` (time last, as MATLAB users index ``A(:,:,k)``),
        ``t`` (K x 1), and cell arrays ``states``, ``inputs``, ``disturbances``,
        ``outputs``; ``v_nom`` and ``i_nom`` (K x Na) when available; ``dt`` (the
        sample period in s, 0 for continuous time).  The file is written whole
        or not at all (a temporary file in the same folder, then renamed)."""
        from scipy.io import savemat
        data = {k: np.moveaxis(getattr(self, k), 0, -1) for k in ("A", "B", "E", "C", "D")}
        data["t"] = self.t[:, None]
        data["dt"] = 0.0 if self.dt is None else self.dt
        for k in ("states", "inputs", "disturbances", "outputs"):
            data[k] = np.array(getattr(self, k), dtype=object)
        if self.nominal is not None:
            data["v_nom"] = self.nominal.voltage
            data["i_nom"] = self.nominal.current
        path = Path(path)
        write_atomically(path if path.suffix else path.with_suffix(".mat"),
                      lambda f: savemat(f, data))

    def save_npz(self, path) -> None:
        """Save everything as a plain ``.npz`` (arrays time first, names as str
        arrays, ``dt`` 0 for continuous time), written whole or not at all (a
        temporary file in the same folder, then renamed over ``path``)."""
        data = {k: getattr(self, k) for k in ("t", "A", "B", "E", "C", "D")}
        data["dt"] = np.array(0.0 if self.dt is None else self.dt)
        for k in ("states", "inputs", "disturbances", "outputs"):
            data[k] = np.array(getattr(self, k), dtype=str)
        if self.nominal is not None:
            data["v_nom"] = self.nominal.voltage
            data["i_nom"] = self.nominal.current
        path = Path(path)
        write_atomically(path if path.name.endswith(".npz") else Path(f"{path}.npz"),
                      lambda f: np.savez(f, **data))

    def eigenvalues(self) -> np.ndarray:
        """Frozen-time eigenvalues of A at every point, (K, n), sorted by real part."""
        ev = np.full(self.A.shape[:2], np.nan, dtype=complex)
        good = np.isfinite(self.A).all((1, 2))            # failed samples stay NaN
        if good.any():
            e = np.linalg.eigvals(self.A[good])
            ev[good] = np.take_along_axis(e, np.argsort(e.real, axis=1), axis=1)
        return ev

    def variation(self) -> dict:
        """How fast A(t) and B(t) vary, to judge whether a constant model will do.

        Returns a dict with
        ``relative_change_A``, ``relative_change_B``: max over t of
        ||A(t) - A(t0)|| / ||A(t0)|| (and for B); ``relative_change_mechanical``:
        the same for the acceleration rows of A alone (the electrical rows are
        constant and dominate ||A||); ``rate``, ``rate_mechanical``: max
        ||dA/dt|| / ||A|| (1/s), the inverse of the time over which A (or its
        mechanical rows) changes by its own size; ``slowest_mode``: min |Re
        lambda| over the frozen eigenvalues (1/s, stable or not); ``ratio``:
        rate_mechanical / slowest_mode.  The seed's
        open question has a quantitative answer here: with ``ratio << 1`` the
        plant changes slowly compared with its own dynamics and a frozen-time
        design is defensible; near or above 1 it is not.
        """
        nA = np.linalg.norm(self.A, axis=(1, 2))
        nB = np.linalg.norm(self.B, axis=(1, 2))
        out = {
            "relative_change_A": float(np.max(np.linalg.norm(self.A - self.A[0], axis=(1, 2)))
                                       / max(nA[0], TINY)),
            "relative_change_B": float(np.max(np.linalg.norm(self.B - self.B[0], axis=(1, 2)))
                                       / max(nB[0], TINY)),
        }
        # the mechanical rows (accelerations) change with the configuration; the
        # electrical rows are constant and dominate ||A||, so report them apart
        M = self.E.shape[2]                        # the coordinates: rows M..2M
        mech = slice(M, 2 * M)
        Am = self.A[:, mech]
        nAm = np.linalg.norm(Am, axis=(1, 2))
        out["relative_change_mechanical"] = float(
            np.max(np.linalg.norm(Am - Am[0], axis=(1, 2))) / max(nAm[0], TINY))
        if len(self) > 1:
            dA = np.gradient(self.A, self.t, axis=0)
            out["rate"] = float(np.max(np.linalg.norm(dA, axis=(1, 2)) / np.maximum(nA, TINY)))
            out["rate_mechanical"] = float(np.max(np.linalg.norm(dA[:, mech], axis=(1, 2))
                                                  / np.maximum(nAm, TINY)))
        else:
            out["rate"] = out["rate_mechanical"] = 0.0
        ev = self.eigenvalues()
        re = np.abs(ev.real)
        floor = RANK_RTOL * np.nanmax(np.abs(ev), initial=0.0)     # zero to rounding
        out["slowest_mode"] = float(np.min(np.where(re > floor, re, np.inf)))
        out["ratio"] = (out["rate_mechanical"] / out["slowest_mode"]
                        if np.isfinite(out["slowest_mode"]) else float("inf"))
        return out


def _positive(x, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ModelError(f"{name} must be a number, got {x!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise ModelError(f"{name} must be a finite number > 0, got {x!r}")
    return v


def _inertia_solve(inertia: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``I^-1 X`` for stacked SPD ``I`` (n, M, M) and ``X`` (n, M, k) by kic's SPD
    rule (:func:`kic.backend.spd_solve`); rows with NaN stay NaN."""
    good = np.isfinite(inertia).all((1, 2)) & np.isfinite(cols).all((1, 2))
    out = np.full(cols.shape, np.nan)
    if good.any():
        x = spd_solve(inertia[good][:, None], np.swapaxes(cols[good], -1, -2),
                      "inertia of the mechanism with the rotors")
        out[good] = np.swapaxes(x, -1, -2)
    return out
