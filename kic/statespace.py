"""A sequence of linear state-space models along a trajectory, and exports
(python-control, scipy.signal, MATLAB .mat, numpy .npz)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import ModelError

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
    nominal : kic.NominalInputs
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

    def __len__(self) -> int:
        return self.t.size

    @classmethod
    def electromechanical(cls, t, inertia, damping, stiffness, G, dG, C_M, C_E, L, R,
                          C=None, coordinates=None, motors=None, outputs=None, nominal=None,
                          trajectory=None) -> "StateSpaceSequence":
        """The plant of a mechanism driven by DC motors, linearized along a motion.

        State ``x = (dq, dq', di)`` (2M + Na), inputs the voltage deviations
        ``dv`` (Na), disturbance ``dT`` (M) a generalized load added to the
        mechanism's load::

            I dq'' + C dq' + K dq = G^T C_M di - dT
            L di' + R di + C_E (G dq' + dG dq) = dv

        Parameters
        ----------
        t : ndarray (K,)
        inertia, damping, stiffness : ndarray (K, M, M)
            ``I``, ``C``, ``K`` of the linearized mechanism with the rotors (kg m^2,
            N m s/rad, N m/rad in rotational coordinates).
        G : ndarray (K, Na, M)
            ``G^a_q``: actuator rates per coordinate rate.
        dG : ndarray (K, Na, M)
            ``d(G^a_q q')/dq`` at the nominal rates.
        C_M, C_E, L, R : ndarray (Na, Na)
            Torque and back-emf constants through the drive train, inductances (H)
            and resistances (ohm).
        C : ndarray (K, p, 2M + Na), optional
            Output rows; default ``y = dq``.
        coordinates, motors, outputs : list of str, optional
            Signal names.
        """
        inertia = np.asarray(inertia, float)
        n, M = inertia.shape[:2]
        Na = C_M.shape[0]
        Gt = np.swapaxes(G, -1, -2)
        Ii = np.linalg.inv(inertia)
        Li = np.linalg.inv(L)
        N = 2 * M + Na
        A = np.zeros((n, N, N))
        A[:, :M, M:2 * M] = np.eye(M)
        A[:, M:2 * M, :M] = -Ii @ stiffness
        A[:, M:2 * M, M:2 * M] = -Ii @ damping
        A[:, M:2 * M, 2 * M:] = Ii @ Gt @ C_M
        A[:, 2 * M:, :M] = -Li @ C_E @ dG
        A[:, 2 * M:, M:2 * M] = -Li @ C_E @ G
        A[:, 2 * M:, 2 * M:] = -Li @ R
        B = np.zeros((n, N, Na))
        B[:, 2 * M:] = Li
        E = np.zeros((n, N, M))
        E[:, M:2 * M] = -Ii
        coordinates = list(coordinates or [f"q{k}" for k in range(M)])
        motors = list(motors or [f"m{k + 1}" for k in range(Na)])
        if C is None:
            C = np.zeros((n, M, N))
            C[:, :, :M] = np.eye(M)
            outputs = [f"q[{c}]" for c in coordinates]
        states = ([f"dq[{c}]" for c in coordinates] + [f"dqd[{c}]" for c in coordinates]
                  + [f"di[{m}]" for m in motors])
        return cls(t=np.asarray(t, float), A=A, B=B, E=E, C=C,
                   D=np.zeros((n, C.shape[1], Na)), states=states,
                   inputs=[f"dv[{m}]" for m in motors],
                   disturbances=[f"dT[{c}]" for c in coordinates], outputs=list(outputs),
                   nominal=nominal, trajectory=trajectory)

    def _k(self, k: int) -> int:
        K = len(self)
        if not -K <= int(k) < K:
            raise ModelError(f"index {k} out of range for {K} operating points")
        return int(k) % K

    def to_scipy(self, k: int = 0):
        """The frozen model at point k as a ``scipy.signal.StateSpace`` (continuous)."""
        from scipy.signal import StateSpace
        k = self._k(k)
        return StateSpace(self.A[k], self.B[k], self.C[k], self.D[k])

    def to_control(self, k: int = 0, disturbance: bool = False):
        """The frozen model at point k as a ``control.StateSpace`` with named
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
        return control.ss(self.A[k], B, self.C[k], D, states=clean(self.states),
                          inputs=clean(inputs), outputs=clean(self.outputs))

    def save_mat(self, path) -> None:
        """Save for MATLAB (``scipy.io.savemat``): variables ``A`` (n x n x K),
        ``B``, ``E``, ``C``, ``D`` (time last, as MATLAB users index ``A(:,:,k)``),
        ``t`` (K x 1), and cell arrays ``states``, ``inputs``, ``disturbances``,
        ``outputs``; ``v_nom`` and ``i_nom`` (K x Na) when available."""
        from scipy.io import savemat
        data = {k: np.moveaxis(getattr(self, k), 0, -1) for k in ("A", "B", "E", "C", "D")}
        data["t"] = self.t[:, None]
        for k in ("states", "inputs", "disturbances", "outputs"):
            data[k] = np.array(getattr(self, k), dtype=object)
        if self.nominal is not None:
            data["v_nom"] = self.nominal.voltage
            data["i_nom"] = self.nominal.current
        savemat(path, data)

    def save_npz(self, path) -> None:
        """Save everything as a plain ``.npz`` (arrays time first, names as str arrays)."""
        data = {k: getattr(self, k) for k in ("t", "A", "B", "E", "C", "D")}
        for k in ("states", "inputs", "disturbances", "outputs"):
            data[k] = np.array(getattr(self, k), dtype=str)
        if self.nominal is not None:
            data["v_nom"] = self.nominal.voltage
            data["i_nom"] = self.nominal.current
        np.savez(path, **data)

    def eigenvalues(self) -> np.ndarray:
        """Frozen-time eigenvalues of A at every point, (K, n), sorted by real part."""
        ev = np.linalg.eigvals(self.A)
        return np.take_along_axis(ev, np.argsort(ev.real, axis=1), axis=1)

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
                                       / max(nA[0], 1e-300)),
            "relative_change_B": float(np.max(np.linalg.norm(self.B - self.B[0], axis=(1, 2)))
                                       / max(nB[0], 1e-300)),
        }
        # the mechanical rows (accelerations) change with the configuration; the
        # electrical rows are constant and dominate ||A||, so report them apart
        n = self.A.shape[1]
        mech = slice(n - self.B.shape[2] - (n - self.B.shape[2]) // 2, n - self.B.shape[2])
        Am = self.A[:, mech]
        nAm = np.linalg.norm(Am, axis=(1, 2))
        out["relative_change_mechanical"] = float(
            np.max(np.linalg.norm(Am - Am[0], axis=(1, 2))) / max(nAm[0], 1e-300))
        if len(self) > 1:
            dA = np.gradient(self.A, self.t, axis=0)
            out["rate"] = float(np.max(np.linalg.norm(dA, axis=(1, 2)) / np.maximum(nA, 1e-300)))
            out["rate_mechanical"] = float(np.max(np.linalg.norm(dA[:, mech], axis=(1, 2))
                                                  / np.maximum(nAm, 1e-300)))
        else:
            out["rate"] = out["rate_mechanical"] = 0.0
        ev = self.eigenvalues()
        re = np.abs(ev.real)
        out["slowest_mode"] = float(np.min(np.where(re > 1e-12, re, np.inf)))
        out["ratio"] = (out["rate_mechanical"] / out["slowest_mode"]
                        if np.isfinite(out["slowest_mode"]) else float("inf"))
        return out
