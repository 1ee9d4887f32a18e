"""An evaluation function for ``kic.sweep``: peak and RMS joint torques of planar
three-link arms along one trajectory.

Importable (worker processes load it by name: put this folder on ``sys.path``,
as docs/sweeps.md does), and runnable::

    python examples/sweep_example.py        # 200 designs, serially and on 2 processes
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                 # run from a fresh clone without installing
    sys.path.insert(0, str(ROOT))

from kic import ModelError  # noqa: E402
from mechanisms import planar_three_link  # noqa: E402

PARAMETERS = ("l1", "l2", "l3", "m1", "m2", "m3")


def arm_torques(chunk: np.ndarray, n_poses: int = 2000, duration: float = 2.0
                ) -> dict[str, np.ndarray]:
    """Peak and RMS joint torques of planar three-link arms along one trajectory.

    For each design (fields among ``l1, l2, l3`` (m) and ``m1, m2, m3`` (kg);
    the others keep the defaults of :func:`mechanisms.planar_three_link`) the
    arm is built and its inverse dynamics evaluated at ``n_poses`` instants of
    ``q_j(t) = a_j sin(2 pi t / T + phi_j)``, ``a = (1.0, 0.8, 0.6)`` rad,
    ``phi = (0, 0.5, 1.0)``, ``T = duration`` (s), one period, under gravity.

    Returns
    -------
    dict
        ``"peak_torque"``: ``(len(chunk), 3)`` max over the trajectory of
        ``|tau_j|`` (N m); ``"rms_torque"``: ``(len(chunk), 3)`` its RMS (N m).

    Raises
    ------
    kic.ModelError
        An unknown parameter name, or a design the builder rejects (a length <= 0).
    """
    unknown = [k for k in chunk.dtype.names if k not in PARAMETERS]
    if unknown:
        raise ModelError(f"arm_torques: unknown design parameters {unknown}; "
                         f"use some of {list(PARAMETERS)}")
    t = np.linspace(0.0, duration, n_poses, endpoint=False)
    a, phi, w = np.array([1.0, 0.8, 0.6]), np.array([0.0, 0.5, 1.0]), 2 * np.pi / duration
    angle = w * t[:, None] + phi
    q, qd, qdd = a * np.sin(angle), a * w * np.cos(angle), -a * w * w * np.sin(angle)
    peak = np.empty((len(chunk), 3))
    rms = np.empty((len(chunk), 3))
    for i, design in enumerate(chunk):
        arm = planar_three_link(**{k: float(design[k]) for k in chunk.dtype.names})
        tau = arm.inverse_dynamics(q, qd, qdd)
        peak[i] = np.abs(tau).max(axis=0)
        rms[i] = np.sqrt(np.mean(tau * tau, axis=0))
    return {"peak_torque": peak, "rms_torque": rms}


def main() -> int:
    from kic.sweep import sweep

    rng = np.random.default_rng(1)
    n = 200
    designs = {"l1": rng.uniform(0.4, 1.0, n), "l2": rng.uniform(0.3, 0.8, n),
               "m1": rng.uniform(1.0, 3.0, n)}
    serial = sweep(arm_torques, designs, chunk_size=25)
    pool = sweep(arm_torques, designs, chunk_size=25, scheduler="processes", n_workers=2)
    assert np.array_equal(serial.results["peak_torque"], pool.results["peak_torque"])
    print(serial)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
