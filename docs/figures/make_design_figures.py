"""The figures of docs/design.md, made by the two examples' own code.

* the optimum of ``examples/five_bar_optimization.py`` (its full search, or
  ``--quick``), drawn with its task circle, and its crank torques;
* a sweep of ``examples/stewart_sweep.py`` (the quick grid) and its Pareto plot.

Run from the repository root::

    python docs/figures/make_design_figures.py [--quick]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import five_bar_optimization as fbo  # noqa: E402
import stewart_sweep as sws  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small search")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp())
    fbo.main(["--out", str(tmp)] + (["--quick"] if a.quick else []))
    sws.main(["--quick", "--out", str(tmp)])
    for src, dst in (("five_bar_optimum.png", "design_five_bar_optimum.png"),
                     ("five_bar_torques.png", "design_five_bar_torques.png"),
                     ("stewart_pareto.png", "design_stewart_pareto.png")):
        shutil.copy(tmp / src, HERE / dst)
        print("wrote", HERE / dst)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
