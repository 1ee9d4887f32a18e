"""Load time of kic's URDF import against Pinocchio's, robot by robot.

Run from the repository root (needs ``pin`` and ``example-robot-data``, both in the
``test`` extra)::

    python benchmarks/robot_files.py             # every robot, 7 repeats (~1 min)
    python benchmarks/robot_files.py --quick     # 3 repeats

For every URDF of example-robot-data that Pinocchio loads with a fixed base and
moving joints, the same file is loaded from its path by
``kic.Mechanism.from_urdf(path)`` (the whole tree, default options; its
RepairWarnings are silenced here) and by ``pinocchio.buildModelFromUrdf(path)``,
interleaved in one process; the median of the repeats is reported per robot, with
the ratio kic / Pinocchio, and over the collection the ratio of the total times
and the median and largest per-robot ratios.
"""
from __future__ import annotations

import argparse
import gc
import importlib.metadata
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import kic  # noqa: E402
import kic.io  # noqa: E402


def robots_dir() -> Path:
    for f in importlib.metadata.files("example-robot-data") or []:
        parts = Path(str(f)).parts
        if parts[-1].endswith(".urdf") and "robots" in parts:
            return Path(str(f.locate())).parents[len(parts) - parts.index("robots") - 2]
    raise SystemExit("example-robot-data has no robots here")


def timed(load, path: str, repeats: int) -> float:
    """Median seconds of ``load(path)`` over ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        load(path)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    a = ap.parse_args(argv)
    import pinocchio as pin

    repeats = 3 if a.quick else 7
    root = robots_dir()
    warnings.simplefilter("ignore", category=kic.io.RepairWarning)
    rows = []
    for p in sorted(root.rglob("*.urdf")):
        path = str(p)
        try:
            if pin.buildModelFromUrdf(path).nv == 0:
                continue
        except Exception:                   # noqa: BLE001  (not loaded by Pinocchio)
            continue
        kic.Mechanism.from_urdf(path)       # warm: imports, first-call costs
        tk, tp = [], []
        for _ in range(repeats):            # interleaved
            tk.append(timed(kic.Mechanism.from_urdf, path, 1))
            tp.append(timed(pin.buildModelFromUrdf, path, 1))
        rows.append((str(p.relative_to(root)), statistics.median(tk), statistics.median(tp)))
    print(f"{'robot':58s} {'kic ms':>8s} {'pin ms':>8s} {'kic/pin':>8s}")
    for name, tk, tp in rows:
        print(f"{name:58s} {tk * 1e3:8.2f} {tp * 1e3:8.2f} {tk / tp:8.2f}")
    ratios = [tk / tp for _, tk, tp in rows]
    total_k, total_p = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"\n{len(rows)} robots: total kic {total_k * 1e3:.1f} ms, Pinocchio "
          f"{total_p * 1e3:.1f} ms, ratio {total_k / total_p:.2f}; per robot median "
          f"{statistics.median(ratios):.2f}, largest {max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
