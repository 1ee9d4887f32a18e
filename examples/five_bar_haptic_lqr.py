"""A five-bar haptic device under a discrete LQR at 1 kHz: the nonlinear plant
with its motors' saturation, against the linear prediction.

The device: ``mechanisms.five_bar()`` in its crank angles, each crank driven by a
24 V brushed DC motor (1 ohm, 0.2 mH, 0.035 N m/A, rotor 1e-5 kg m^2) through a
12:1 capstan, the supply limiting each motor to 24 V and its amplifier to 10 A.

The controller runs at 1 kHz: at each sample it reads the state, computes
``v = v_ff,k - K (x_k - x_nom(t_k))`` and holds it for the period (zero-order
hold; ``v_ff,k`` the mean of the nominal voltage over the period).  ``K`` is the
discrete LQR gain of the plant linearized at mid-motion (``ss.discrete(1e-3)``: the
ZOH model, not a continuous gain sampled).  The nonlinear plant (mechanism, rotors,
armatures, voltage and current saturation) is simulated by
``kic.simulate(plant, ..., voltage=controller, period=1e-3)`` (the controller called
every period and its voltages held, the limits switched at located events); the linear
prediction is the discrete closed loop ``dx[k+1] = (Ad_k - Bd_k K) dx[k]`` of the
time-varying sampled models along the motion.

The motion starts 60 mrad off its nominal crank angles: the regulator asks for more
than the 24 V at first (saturated, where the linear prediction is optimistic); from
the end of the saturation the linear prediction, restarted from the nonlinear state,
follows the nonlinear plant.  What remains at the end (a few 1e-7 rad) is the price
of holding the feedforward: the nominal voltage varies within each period.  Plots
(tracking error, voltages, currents) go to ``--out`` (default ``examples/out/``).

Run::

    python examples/five_bar_haptic_lqr.py            # 0.5 s of motion (~10-30 s)
    python examples/five_bar_haptic_lqr.py --quick    # its first 0.2 s
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                 # run from a fresh clone without installing
    sys.path.insert(0, str(ROOT))

import kic  # noqa: E402
import mechanisms  # noqa: E402

PERIOD = 1e-3             # s: the 1 kHz controller


def device():
    fb = mechanisms.five_bar()
    motors = [kic.DCMotor(resistance=1.0, inductance=0.2e-3, torque_constant=0.035,
                          back_emf_constant=0.035, rotor_inertia=1e-5, rotor_damping=1e-6,
                          name=side, voltage_limit=24.0, current_limit=10.0)
              for side in ("left", "right")]
    return kic.ActuatedSystem(fb, motors, gear_ratios=[12.0, 12.0])


def dlqr(A, B, Q, R, iterations=20000, tol=1e-12):
    """The discrete LQR gain by the Riccati recursion (no python-control needed)."""
    P = Q.copy()
    for _ in range(iterations):
        BtP = B.T @ P
        K = np.linalg.solve(R + BtP @ B, BtP @ A)
        P_next = Q + A.T @ P @ (A - B @ K)
        if np.abs(P_next - P).max() <= tol * np.abs(P_next).max():
            return K
        P = P_next
    raise RuntimeError("the Riccati recursion did not converge")


def run(duration: float, out: Path, motion: float = 0.5) -> dict:
    plant = device()
    q0 = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])
    q1 = q0 + np.array([0.25, 0.2])
    steps = int(round(duration / PERIOD))
    whole = kic.Trajectory.quintic(q0, q1, duration=motion,
                                   samples=int(round(motion / PERIOD)) + 1)
    traj = kic.Trajectory(whole.t[:steps + 1], whole.q[:steps + 1], whole.qd[:steps + 1],
                          whole.qdd[:steps + 1], whole.qddd[:steps + 1])
    ss = plant.state_space(traj)          # continuous, every 1 ms; raises beyond a limit
    dss = ss.discrete(PERIOD)                                 # zero-order hold
    nom = ss.nominal
    x_nom = np.hstack([traj.q, traj.qd, nom.current])
    mid = steps // 2
    Q = np.diag([1 / 0.001**2] * 2 + [1 / 0.2**2] * 2 + [1 / 2.0**2] * 2)
    R = np.diag([1 / 4.0**2] * 2)
    K = dlqr(dss.A[mid], dss.B[mid], Q * PERIOD, R * PERIOD)
    rho = np.abs(np.linalg.eigvals(dss.A - dss.B @ K)).max()
    print(f"discrete LQR at {1 / PERIOD:.0f} Hz, gain (V per rad, rad/s, A):\n{K.round(2)}")
    print(f"largest closed-loop eigenvalue magnitude along the motion: {rho:.4f}")

    dx0 = np.array([0.06, -0.04, 0.0, 0.0, 0.0, 0.0])
    x0 = x_nom[0] + dx0

    def controller(t, x):
        # held for the period: the feedforward is the nominal voltage's mean over it
        # (trapezoid), so that holding it does not itself pull off the trajectory
        k = int(round(t / PERIOD))
        return 0.5 * (nom.voltage[k] + nom.voltage[k + 1]) - K @ (x - x_nom[k])

    start = time.perf_counter()
    sim = kic.simulate(plant, (0.0, traj.t[steps]), x0[:2], x0[2:4], i0=x0[4:],
                       voltage=controller, period=PERIOD, t_eval=traj.t, rtol=1e-8,
                       atol=1e-10)
    elapsed = time.perf_counter() - start
    calls = sim.nfev
    X = np.hstack([sim.q, sim.qd, sim.currents])
    # a sample is taken after the controller's update there: sample k holds period k's
    V, V_applied, saturated = sim.commanded[:-1], sim.voltages[:-1], sim.saturated[:-1]
    print(f"energy balance (supplied = stored + dissipated): {sim.supplied[-1]:.3f} J "
          f"supplied, error {sim.energy_drift:.1e}")

    # the linear prediction: the time-varying discrete closed loop from the same start,
    # and again from the nonlinear state once the saturation has ended
    def predict(k0, dx):
        dX = np.full((steps + 1, 6), np.nan)
        dX[k0] = dx
        for k in range(k0, steps):
            dX[k + 1] = (dss.A[k] - dss.B[k] @ K) @ dX[k]
        return dX

    dX = predict(0, dx0)
    sat_steps = int(saturated.any(axis=1).sum())
    k0 = int(np.nonzero(saturated.any(axis=1))[0].max()) + 1 if sat_steps else 0
    dX2 = predict(k0, X[k0] - x_nom[k0])
    err_nl = np.abs(X[:, :2] - traj.q).max(axis=1)
    err_lin = np.abs(dX[:, :2]).max(axis=1)
    err_lin2 = np.abs(dX2[:, :2]).max(axis=1)
    dev = (X - x_nom)[k0:, :2]
    agree = np.abs(dev - dX2[k0:, :2]).max() / np.abs(dev).max()
    print(f"nonlinear plant: {steps} periods, {calls} rhs calls in {elapsed:.1f} s "
          f"({elapsed / calls * 1e6:.0f} us per call)")
    print(f"saturated during {sat_steps} of {steps} periods, the last ending at "
          f"t = {traj.t[k0]:.3f} s (commanded up to {np.abs(V).max():.0f} V, applied <= "
          f"{np.abs(V_applied).max():.0f} V)")
    for t in sorted({0.0, 0.01, 0.02, 0.05, 0.1, duration / 2, duration}):
        j = int(round(t / PERIOD))
        print(f"t = {t:5.3f} s  tracking error {err_nl[j]:.2e} rad (linear prediction "
              f"{err_lin[j]:.2e} rad from the start, {err_lin2[j]:.2e} rad from the end of "
              "saturation)")
    print(f"after the saturation the nonlinear deviation and the linear prediction differ "
          f"by {agree:.2%} of the deviation's peak")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(3, 1, sharex=True, figsize=(7, 8))
    ax[0].semilogy(traj.t, np.maximum(err_nl, 1e-12), label="nonlinear plant, saturated")
    ax[0].semilogy(traj.t, np.maximum(err_lin, 1e-12), "--", label="linear prediction")
    ax[0].semilogy(traj.t, np.maximum(err_lin2, 1e-12), ":",
                   label="linear prediction from the end of saturation")
    ax[0].set_ylabel("tracking error (rad)")
    ax[0].legend()
    ax[1].plot(traj.t[:-1], V, lw=0.8, alpha=0.5)
    ax[1].plot(traj.t[:-1], V_applied)
    ax[1].axhline(24.0, color="k", lw=0.5)
    ax[1].axhline(-24.0, color="k", lw=0.5)
    ax[1].set_ylabel("voltages (V): commanded, applied")
    ax[2].plot(traj.t, X[:, 4:])
    ax[2].plot(traj.t, nom.current, "k--", lw=0.8)
    ax[2].set_ylabel("currents (A)")
    ax[2].set_xlabel("t (s)")
    fig.suptitle("five-bar haptic device, discrete LQR at 1 kHz")
    fig.tight_layout()
    figure = out / "five_bar_haptic_lqr.png"
    fig.savefig(figure, dpi=100)
    plt.close(fig)
    print("plot saved to", figure)
    return {"error": err_nl, "prediction": err_lin, "saturated": sat_steps, "agree": agree}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the first 0.2 s of the motion")
    ap.add_argument("--out", type=Path, default=ROOT / "examples" / "out")
    args = ap.parse_args()
    res = run(0.2 if args.quick else 0.5, args.out)
    assert res["saturated"] > 0 and res["error"][-1] < 1e-3 * res["error"][0]
    assert res["agree"] < 0.05


if __name__ == "__main__":
    main()
