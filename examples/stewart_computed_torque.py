"""A Stewart platform under a computed-torque loop at 1 kHz, driven by its six leg
motors, following a platform trajectory.

The plant: ``mechanisms.stewart_platform()`` in platform coordinates (x, y, z,
yaw, pitch, roll), each leg's length driven by a DC motor (1 ohm, 0.1 N m/A,
rotor 2e-5 kg m^2) on a ball screw of 5 mm lead, 48 V supplies; the quasi-static
electrical model (no inductance: the armature poles are far beyond 1 kHz).
Through the screws the rotors weigh about 32 kg each on the legs, three times
the platform: they belong in the model.

The controller runs every millisecond on the sampled state and holds its
voltages for the period (zero-order hold)::

    q''_cmd = q''_ref + K_d (q'_ref - q') + K_p (q_ref - q)
    (i, v)  = plant.inverse(q, q', q''_cmd)        # the motor model's computed torque

``ActuatedSystem.inverse`` solves the leg forces of the mechanism with the
reflected rotors (``G^T C_M i = (I* + G^T I_r G) q'' + bias + G^T (I_r h + B_r a')``,
one pose, on the compiled kernels) and the voltages ``v = R i + C_E a'``.  The
nonlinear plant (mechanism, rotors, armatures, the 48 V limits) is integrated by
``kic.simulate(plant, ..., voltage=controller, period=1e-3)``; the motion starts
5 mm and 20 mrad off the reference.

Printed: the controller's cost per step (us, the median over the run) and the
tracking error; a plot (tracking error, leg voltages) goes to ``--out`` when
matplotlib is installed.

Run::

    python examples/stewart_computed_torque.py           # 1 s of motion
    python examples/stewart_computed_torque.py --quick   # 0.3 s
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

PERIOD = 1e-3                                 # s: the 1 kHz controller
LEAD = 0.005                                  # m per screw turn


def platform():
    sp = mechanisms.stewart_platform()
    motors = [kic.DCMotor(resistance=1.0, inductance=0.0, torque_constant=0.1,
                          back_emf_constant=0.1, rotor_inertia=2e-5, rotor_damping=1e-5,
                          name=f"leg{k}", voltage_limit=48.0) for k in range(6)]
    return kic.ActuatedSystem(sp, motors, gear_ratios=[2 * np.pi / LEAD] * 6)


def run(duration: float, out: Path) -> dict:
    plant = platform()
    q0 = np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.0])
    q1 = np.array([0.05, -0.03, 0.65, 0.1, -0.05, 0.08])   # m and rad
    ref = kic.Trajectory.quintic(q0, q1, duration=1.0, samples=1001)
    n = int(round(duration / PERIOD))
    wn = 2 * np.pi * 15.0                                 # 15 Hz closed-loop bandwidth
    Kp, Kd = wn ** 2, 2 * 0.9 * wn
    cost = []

    def controller(t, x):
        start = time.perf_counter()
        k = min(int(round(t / PERIOD)), len(ref) - 1)
        q, qd = x[:6], x[6:12]
        qdd = ref.qdd[k] + Kd * (ref.qd[k] - qd) + Kp * (ref.q[k] - q)
        _, v = plant.inverse(q, qd, qdd)
        cost.append(time.perf_counter() - start)
        return v

    offset = np.array([0.005, -0.003, 0.0, 0.02, 0.0, -0.01])
    start = time.perf_counter()
    sim = kic.simulate(plant, (0.0, n * PERIOD), q0 + offset, np.zeros(6), voltage=controller,
                       period=PERIOD, t_eval=ref.t[:n + 1], rtol=1e-8, atol=1e-10)
    elapsed = time.perf_counter() - start
    err = sim.q - ref.q[:n + 1]
    position = np.linalg.norm(err[:, :3], axis=1)               # m
    angle = np.abs(err[:, 3:]).max(axis=1)                      # rad
    step_us = float(np.median(cost)) * 1e6
    print(f"computed torque at {1 / PERIOD:.0f} Hz: {len(cost)} controller steps, "
          f"{step_us:.0f} us per step (median; {np.percentile(cost, 90) * 1e6:.0f} us at the "
          "90th percentile)")
    print(f"the plant simulated by kic.simulate in {elapsed:.1f} s ({sim.nfev} evaluations, "
          f"energy balance error {sim.energy_drift:.1e})")
    print(f"leg voltages up to {np.abs(sim.voltages).max():.1f} V (limit 48 V), saturated at "
          f"{int(sim.saturated.any(axis=1).sum())} of {len(sim.t)} samples")
    for t in sorted({0.0, 0.05, 0.1, 0.2, duration / 2, duration}):
        j = int(round(t / PERIOD))
        print(f"t = {t:5.3f} s  tracking error {position[j] * 1e3:7.4f} mm, "
              f"{angle[j] * 1e3:7.4f} mrad")
    _plot(sim, position, angle, out)
    return {"position": position, "angle": angle, "step_us": step_us,
            "drift": sim.energy_drift}


def _plot(sim, position, angle, out: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    ax[0].semilogy(sim.t, np.maximum(position, 1e-12) * 1e3, label="position (mm)")
    ax[0].semilogy(sim.t, np.maximum(angle, 1e-12) * 1e3, label="orientation (mrad)")
    ax[0].set_ylabel("tracking error")
    ax[0].legend()
    ax[1].plot(sim.t, sim.voltages)
    ax[1].set_ylabel("leg motor voltages (V)")
    ax[1].set_xlabel("t (s)")
    fig.suptitle("Stewart platform, computed torque at 1 kHz")
    fig.tight_layout()
    figure = out / "stewart_computed_torque.png"
    fig.savefig(figure, dpi=100)
    plt.close(fig)
    print("plot saved to", figure)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the first 0.3 s of the motion")
    ap.add_argument("--out", type=Path, default=ROOT / "examples" / "out")
    args = ap.parse_args()
    res = run(0.3 if args.quick else 1.0, args.out)
    assert res["position"][-1] < 1e-2 * res["position"][0]
    assert res["drift"] < 1e-6


if __name__ == "__main__":
    main()
