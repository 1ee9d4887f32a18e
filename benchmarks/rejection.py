"""How long kic takes to reject an impossible design or an unreachable pose.

Rows (fastest of a few repeats, milliseconds):

* a five-bar whose loop can never close (``mechanisms.five_bar``): the closed
  polygon inequality decides, no search over crank angles;
* ``five_bar_designs``, per design: 20 infeasible designs against 20 feasible ones;
* an unreachable pose whose guess function answers NaN: the built-in five-bar
  (its closed-form guess) and a generic model with a user's guess, assembled
  alone (``ClosureError``) and in a batch with ``on_failure="nan"``, per backend.

``--against PATH`` runs the same rows with another checkout of kic (e.g. the main
branch) in a subprocess and prints both columns.

    python benchmarks/rejection.py
    python benchmarks/rejection.py --against /work/main
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def fastest(call, repeat: int = 3) -> float:
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        try:
            call()
        except Exception as exc:      # noqa: BLE001 - only kic's errors are expected
            if not type(exc).__module__.startswith("kic"):
                raise
        best = min(best, time.perf_counter() - t)
    return best


def measure() -> dict:
    import kic
    import mechanisms

    rows = {}
    mechanisms.five_bar()                                   # imports, first calls
    rows["five_bar(base=2.0): refused"] = fastest(lambda: mechanisms.five_bar(base=2.0))
    rows["five_bar(crank1=1.5): refused"] = fastest(lambda: mechanisms.five_bar(crank1=1.5))
    mechanisms.five_bar_designs(base=[0.2])                 # the writer's template
    D = 20
    rows["five_bar_designs, per infeasible design"] = fastest(
        lambda: mechanisms.five_bar_designs(base=np.full(D, 2.0))) / D
    rows["five_bar_designs, per feasible design"] = fastest(
        lambda: mechanisms.five_bar_designs(base=np.full(D, 0.2))) / D

    short = mechanisms.five_bar(coupler1=0.3, coupler2=0.3)
    geometry = short.geometry
    names = ["crank1", "crank2", "elbow1", "elbow2", "tip"]

    def guess(q):        # a user's closed form: NaN where the couplers cannot meet
        return dict(zip(names, geometry.joint_values(np.asarray(q).reshape(-1, 2)).T))
    generic = short.in_coordinates(["crank1", "crank2"], guess=guess)
    far, near = [np.pi, 0.0], [2.0, 1.1]
    for backend in ("numba", "numpy"):
        kic.set_backend(backend)
        for label, model in (("built-in", short), ("generic", generic)):
            model.assemble(near)
            rows[f"[{backend}] {label} five-bar, unreachable pose: ClosureError"] = fastest(
                lambda: model.assemble(far))
            rows[f"[{backend}] {label} five-bar, unreachable + reachable, nan"] = fastest(
                lambda: model.assemble([far, near], on_failure="nan"))
    kic.set_backend("auto")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--against", help="another checkout of kic to compare with")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    rows = measure()
    if a.json:
        print(json.dumps(rows))
        return 0
    other = {}
    if a.against:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(a.against))
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "--json"], env=env,
                             capture_output=True, text=True, check=True,
                             cwd=os.path.abspath(a.against))
        other = json.loads(res.stdout.strip().splitlines()[-1])
    width = max(len(k) for k in rows)
    head = f"{'rejection (ms)':{width}s} {'this':>10s}"
    print(head + (f" {'against':>10s}" if other else ""))
    for k, v in rows.items():
        line = f"{k:{width}s} {v * 1e3:10.3f}"
        if other:
            line += f" {other[k] * 1e3:10.3f}" if k in other else f" {'-':>10s}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
