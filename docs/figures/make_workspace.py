"""Draw docs/figures/five_bar_workspace.png (docs/workspace.md).

Run from the repository root:  python docs/figures/make_workspace.py
"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import kic  # noqa: E402
import mechanisms  # noqa: E402
from kic import workspace  # noqa: E402

fb = mechanisms.five_bar()
mech = fb.mechanism.copy()
mech.set_limits("crank1", (0.0, np.pi))           # both cranks above the base line
mech.set_limits("crank2", (0.0, np.pi))
model = mech.model(["crank1", "crank2"], reference=dict(zip(fb.phi_names, fb.reference_phi)))

x, y = np.linspace(-0.45, 0.65, 221), np.linspace(-0.1, 0.65, 151)
W = workspace.point_workspace(model, workspace.grid(x, y), "coupler1", (0.35, 0.0, 0.0),
                              inverse=fb.geometry.inverse)
bound = 10.0
fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
kic.plot.workspace_map(x, y, W.map(bound=100.0), ax=axes[0], label="condition number",
                       log=True, bound=bound)
kic.plot.draw(model, model.reference, ax=axes[0], labels=False)
axes[0].set_title("five-bar tip, elbows (-1, +1), tip side +1, cranks in [0, pi]:\n"
                  "condition number where reachable (up to 100)", fontsize=9)
# one colour per outcome
kinds = np.select([W.conditioned(bound), W.reachable,
                   W.status == kic.Status.OUTSIDE_LIMITS, W.status == kic.Status.OTHER_MODE],
                  [4, 3, 2, 1], 0)
colors = ["0.92", "burlywood", "salmon", "lightskyblue", "tab:blue"]
names = ["out of reach", "other mode", "outside limits", "reachable",
         f"reachable, condition <= {bound:g}"]
axes[1].pcolormesh(x, y, kinds, shading="auto",
                   cmap=matplotlib.colors.ListedColormap(colors), vmin=-0.5, vmax=4.5)
axes[1].legend(handles=[matplotlib.patches.Patch(color=c, label=n)
                        for c, n in zip(colors, names)], loc="upper right", fontsize=8)
axes[1].set_aspect("equal")
axes[1].set_xlabel("x (m)")
axes[1].set_ylabel("y (m)")
axes[1].set_title("status of each grid point", fontsize=9)
fig.tight_layout()
out = Path(__file__).with_name("five_bar_workspace.png")
fig.savefig(out, dpi=90)
print(f"wrote {out}: {int(W.reachable.sum())} of {W.reachable.size} points reachable, "
      f"{int(W.conditioned(bound).sum())} with condition <= {bound:g}")
