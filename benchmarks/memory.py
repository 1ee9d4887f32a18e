"""Peak resident memory of large batches of Stewart-platform poses on the numpy path.

Each measured call runs in a fresh process (``resource.getrusage``'s peak is per
process): the model, the poses and the rates are built first, the peak resident
set size read, then the call made and the peak read again.  The growth minus the
output's own size is the temporary memory of the call, which kic bounds by
evaluating in blocks of poses (:data:`kic.settings.BATCH_WORK_BYTES`).

    KIC_BACKEND=numpy python benchmarks/memory.py            # 1e6 poses (minutes)
    KIC_BACKEND=numpy python benchmarks/memory.py --n 100000
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

CALLS = ("actuator_loads", "inverse_dynamics", "I_star")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KiB on Linux


def measure(call: str, n: int) -> dict:
    """One call on n poses in this process: peak RSS before and after (MB)."""
    import numpy as np
    import kic
    import mechanisms

    kic.set_backend("numpy")
    sp = mechanisms.stewart_platform()
    rng = np.random.default_rng(0)
    q = sp.reference + rng.uniform(-1, 1, (n, 6)) * [0.02, 0.02, 0.02, 0.05, 0.05, 0.05]
    qd = rng.standard_normal((n, 6)) * 0.1
    qdd = rng.standard_normal((n, 6)) * 0.1
    sp.inverse_dynamics(q[:10], qd[:10], qdd[:10])      # warm-up: lazy state, imports
    before = _peak_mb()
    t = time.perf_counter()
    if call == "actuator_loads":
        out = sp.actuator_loads(q, qd, qdd, sp.actuators)
    elif call == "inverse_dynamics":
        out = sp.inverse_dynamics(q, qd, qdd)
    else:
        out = sp.dynamics(q).I_star
    seconds = time.perf_counter() - t
    after = _peak_mb()
    return {"call": call, "n": n, "before_mb": before, "peak_mb": after,
            "output_mb": out.nbytes / 2 ** 20, "seconds": seconds,
            "finite": bool(np.isfinite(out).all())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--calls", nargs="+", choices=CALLS, default=list(CALLS))
    p.add_argument("--one", choices=CALLS, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(measure(a.one, a.n)))
        return 0
    env = dict(os.environ, KIC_BACKEND="numpy")
    print(f"Stewart platform, {a.n} poses, numpy path: peak resident memory (MB)")
    print(f"{'call':18s} {'before':>8s} {'peak':>8s} {'output':>8s} {'temporary':>10s} "
          f"{'time (s)':>9s}")
    for call in a.calls:
        res = subprocess.run([sys.executable, __file__, "--n", str(a.n), "--one", call],
                             env=env, capture_output=True, text=True, check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        temp = r["peak_mb"] - r["before_mb"] - r["output_mb"]
        print(f"{call:18s} {r['before_mb']:8.0f} {r['peak_mb']:8.0f} {r['output_mb']:8.0f} "
              f"{temp:10.0f} {r['seconds']:9.1f}" + ("" if r["finite"] else "  (non-finite!)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
