"""Load time of kic's URDF import against Pinocchio's, robot by robot.

Run from the repository root (needs ``pin`` and ``example-robot-data``, both in the
``test`` extra)::

    python benchmarks/robot_files.py             # every robot, 7 repeats (~1 min)
    python benchmarks/robot_files.py --quick     # 3 repeats
    python benchmarks/robot_files.py --table     # the table of docs/models-from-files.md

For every URDF of example-robot-data that Pinocchio loads with a fixed base and
moving joints, the same file is loaded from its path by
``kic.Mechanism.from_urdf(path)`` (the whole tree, default options; its
RepairWarnings are silenced here) and by ``pinocchio.buildModelFromUrdf(path)``,
interleaved in one process, in CPU time of the process; the best of the repeats is
reported per robot (the median beside it), with the ratio kic / Pinocchio, and over
the collection the ratio of the total times and the median and largest per-robot
ratios.  The robots that are one chain for Pinocchio are also loaded by
``kic.SerialChain.from_urdf(path)`` (a chain ready for its dynamics), with the same
figures over them.
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


def timed(load, path: str) -> float:
    """CPU seconds of this process for one ``load(path)`` (not the wall clock: on a
    shared machine the wall clock counts the time other processes hold the CPU)."""
    gc.collect()
    t = time.process_time()
    load(path)
    return time.process_time() - t


def table(root: Path) -> None:
    """Markdown table: every URDF file, what Pinocchio and kic make of it."""
    import pinocchio as pin

    print("| file | joints (Pinocchio) | kic, default options | SerialChain.from_urdf |")
    print("|---|---|---|---|")
    counts = {"loaded": 0, "warned": 0, "refused": 0}
    for p in sorted(root.rglob("*.urdf")):
        path, name = str(p), str(p.relative_to(root))
        try:
            nv = pin.buildModelFromUrdf(path).nv
        except Exception:                   # noqa: BLE001
            print(f"| {name} | not loaded | (not counted) | |")
            continue
        if nv == 0:
            print(f"| {name} | 0 | (no moving joint: not counted) | |")
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", category=kic.io.RepairWarning)
            try:
                kic.Mechanism.from_urdf(path)
                said = [str(w.message) for w in caught]
                status = "loaded" if not said else "warned"
                note = status if not said else \
                    f"warned: {len(said[0].splitlines()) - 1} link(s) " + ", ".join(
                        line.split(":")[0].strip(" -").replace("link ", "")
                        for line in said[0].splitlines()[1:])
            except kic.ModelError as exc:
                status, note = "refused", f"refused: {exc}"
        counts[status] += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=kic.io.RepairWarning)
                c = kic.SerialChain.from_urdf(path)
            chain = f"{type(c).__name__}, {c.dof} joints"
        except kic.ModelError:
            chain = "a tree (tip_link needed)"
        print(f"| {name} | {nv} | {note} | {chain} |")
    print(f"\n{sum(counts.values())} robots with moving joints: {counts['loaded']} loaded, "
          f"{counts['warned']} loaded with a warning, {counts['refused']} refused")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    ap.add_argument("--table", action="store_true", help="print the robots table only")
    a = ap.parse_args(argv)
    import pinocchio as pin

    repeats = 3 if a.quick else 7
    root = robots_dir()
    if a.table:
        table(root)
        return 0
    warnings.simplefilter("ignore", category=kic.io.RepairWarning)
    rows = []
    for p in sorted(root.rglob("*.urdf")):
        path = str(p)
        try:
            if pin.buildModelFromUrdf(path).nv == 0:
                continue
        except Exception:                   # noqa: BLE001  (not loaded by Pinocchio)
            continue
        pm = pin.buildModelFromUrdf(path)
        one_chain = all(pm.parents[i] == i - 1 for i in range(1, pm.njoints))
        kic.Mechanism.from_urdf(path)       # warm: imports, first-call costs
        loads = [kic.Mechanism.from_urdf, pin.buildModelFromUrdf]
        if one_chain:
            kic.SerialChain.from_urdf(path)
            loads.append(kic.SerialChain.from_urdf)
        times = [[] for _ in loads]
        for _ in range(repeats):            # interleaved
            for load, t in zip(loads, times):
                t.append(timed(load, path))
        rows.append((str(p.relative_to(root)), *map(min, times[:2]),
                     *map(statistics.median, times[:2]), min(times[2]) if one_chain else None))
    print(f"{'robot':58s} {'kic ms':>8s} {'pin ms':>8s} {'kic/pin':>8s}   (medians)   "
          "SerialChain ms, /pin")
    for name, tk, tp, mk, mp, tc in rows:
        chain = "" if tc is None else f"   {tc * 1e3:6.2f} {tc / tp:5.2f}"
        print(f"{name:58s} {tk * 1e3:8.2f} {tp * 1e3:8.2f} {tk / tp:8.2f}   "
              f"({mk * 1e3:.2f} {mp * 1e3:.2f} {mk / mp:.2f}){chain}")
    print()
    summary(f"{len(rows)} robots, Mechanism.from_urdf", repeats,
            [(r[1], r[2]) for r in rows])
    summary(f"{sum(r[5] is not None for r in rows)} single chains, SerialChain.from_urdf",
            repeats, [(r[5], r[2]) for r in rows if r[5] is not None])
    return 0


def summary(what: str, repeats: int, pairs) -> None:
    """One line: total times, their ratio, the median and largest per-robot ratios."""
    ratios = [k / p for k, p in pairs]
    total_k, total_p = sum(k for k, _ in pairs), sum(p for _, p in pairs)
    print(f"{what}, best of {repeats}: total kic {total_k * 1e3:.1f} ms, Pinocchio "
          f"{total_p * 1e3:.1f} ms, ratio {total_k / total_p:.2f}; per robot median "
          f"{statistics.median(ratios):.2f}, largest {max(ratios):.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
