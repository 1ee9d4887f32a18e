"""The figure of docs/closed.md section 12: the default five-bar's free fall for
2 s, its crank angles and the condition number of the crank coordinates along
it, with the coordinate switches and the crossings of the flat configuration.

Run from the repository root::

    python docs/figures/make_closed_figures.py
"""
import importlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import kic  # noqa: E402
import mechanisms  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> Path:
    fb = mechanisms.five_bar()
    # output every millisecond (the integrator's own steps are tens of milliseconds)
    sim = kic.simulate(fb, (0.0, 2.0), fb.reference, [0.0, 0.0], rtol=1e-10, atol=1e-12,
                       t_eval=np.linspace(0.0, 2.0, 2001))
    cond = fb.condition_at(sim.phi)
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7.0, 5.0))
    ax1.plot(sim.t, sim.q[:, 0], label="crank1")
    ax1.plot(sim.t, sim.q[:, 1], label="crank2")
    ax1.set_ylabel("angle (rad)")
    ax1.legend(loc="upper left")
    ax2.semilogy(sim.t, cond, color="k", lw=1, label="crank coordinates")
    ax2.axhline(importlib.import_module("kic.simulation").SWITCH_CONDITION, color="0.6", ls=":",
                label="switch_condition")
    for ax in (ax1, ax2):
        for t_switch, *_ in sim.switches:
            ax.axvline(t_switch, color="tab:green", lw=0.8, alpha=0.7)
        for c in sim.crossings:
            ax.axvline(c["t"], color="tab:red", lw=1.2)
    ax2.set_ylabel("condition number")
    ax2.set_xlabel("t (s)")
    ax2.legend(loc="upper left")
    ax1.set_title(f"default five-bar, free fall: {len(sim.switches)} coordinate switches "
                  f"(green), {len(sim.crossings)} crossings of the flat configuration (red)",
                  fontsize=9)
    fig.tight_layout()
    out = HERE / "five_bar_free_motion.png"
    fig.savefig(out, dpi=110)
    print("wrote", out, "energy drift", f"{sim.energy_drift:.1e}")
    return out


if __name__ == "__main__":
    main()
