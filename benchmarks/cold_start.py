"""First use after install: CPU time of whole processes with an empty numba cache.

Each case runs in a fresh Python process whose numba cache is a new empty
temporary folder (``NUMBA_CACHE_DIR``), so every kernel it needs is compiled,
as on a user's first call after ``pip install``; then once more with that
folder filled (a warm process: the cache is loaded, nothing compiled).  The
figure is the CPU time (user + system) of the whole child process, imports
included, from the operating system's accounting.  A Pinocchio process doing
the same PUMA work is timed beside it when Pinocchio is installed.

Targets (issue 21): five-bar assemble + inverse + forward dynamics + actuator
loads <= 10 s cold; PUMA 560 inverse + forward dynamics <= 2 s cold; a warm
process <= 1.5 s.  ``import kic`` alone is timed too (it imports no scipy,
networkx, matplotlib or numba; ``import mechanisms`` imports networkx).

``--compare CHECKOUT`` times another checkout of kic (e.g. an export of the
main branch) beside this one, case by case, for before/after figures;
``--case five-bar`` or ``--case puma`` runs one case (each cold run costs
tens of seconds of CPU).  ``--cold-repeats K`` takes the best of K cold runs,
each with a new empty cache, the checkouts interleaved run by run (a shared,
loaded machine inflates CPU time: compare figures of one run of this script).
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "five-bar: assemble, inverse, forward, actuator loads": """
import numpy as np, mechanisms
m = mechanisms.five_bar()
q = m.reference
phi = m.assemble(q)
tau = m.inverse_dynamics(q, [0.3, -0.2], [0.1, 0.4])
qdd = m.forward_dynamics(q, [0.3, -0.2], tau)
acts = m.actuator_loads(q, [0.3, -0.2], [0.1, 0.4], m.coordinate_names)
""",
    "PUMA 560: inverse and forward dynamics": """
import numpy as np, mechanisms
arm = mechanisms.puma560()
q, qd, qdd = np.full(6, 0.3), np.full(6, 0.5), np.full(6, 0.1)
tau = arm.inverse_dynamics(q, qd, qdd)
back = arm.forward_dynamics(q, qd, tau)
""",
}

PEER = """
import numpy as np, pinocchio as pin
model = pin.buildSampleModelManipulator()
data = model.createData()
q = pin.neutral(model) + 0.3
v = np.full(model.nv, 0.5)
a = np.full(model.nv, 0.1)
tau = pin.rnea(model, data, q, v, a)
back = pin.aba(model, data, q, v, tau)
"""


def cpu_of(code: str, cache: str | None, backend: str | None = None, root: Path = ROOT) -> float:
    """CPU seconds (user + system) of a child process running ``code`` with the
    checkout ``root`` first on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    if backend is not None:
        env["KIC_BACKEND"] = backend
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=root,
                   stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=1, help="warm runs (best of)")
    p.add_argument("--cold-repeats", type=int, default=1,
                   help="cold runs, each with a new empty cache (best of; interleaved "
                        "with the --compare checkout's)")
    p.add_argument("--case", choices=("all", "five-bar", "puma"), default="all")
    p.add_argument("--compare", type=Path, default=None, metavar="CHECKOUT",
                   help="another checkout of kic (e.g. the main branch) timed beside this "
                        "one, case by case (before and after a change)")
    a = p.parse_args(argv)
    roots = [("", ROOT)] + ([(" (" + a.compare.name + ")", a.compare.resolve())]
                            if a.compare else [])
    cases = {k: v for k, v in CASES.items()
             if a.case == "all" or k.lower().startswith(a.case)}
    print("CPU seconds of the whole process (imports included)")
    print(f"  {'case':52s} {'cold':>7s} {'warm':>7s} {'numpy':>7s}")
    for name, code in cases.items():
        cold = {label: float("inf") for label, _ in roots}
        warm = dict(cold)
        for _ in range(a.cold_repeats):
            for label, root in roots:            # interleaved: this checkout, the other
                with tempfile.TemporaryDirectory(prefix="kic-numba-cache-") as cache:
                    cold[label] = min(cold[label], cpu_of(code, cache, root=root))
                    warm[label] = min([warm[label]] + [cpu_of(code, cache, root=root)
                                                       for _ in range(a.repeats)])
        for label, root in roots:
            numpy = cpu_of(code, None, backend="numpy", root=root)
            print(f"  {name[:52 - len(label)] + label:52s} {cold[label]:7.2f} "
                  f"{warm[label]:7.2f} {numpy:7.2f}")
    if a.case != "all":
        return
    imports = min(cpu_of("import kic", None) for _ in range(max(a.repeats, 3)))
    bare = min(cpu_of("import numpy", None) for _ in range(max(a.repeats, 3)))
    print(f"  {'import kic (numpy alone: ' + f'{bare:.2f})':52s} {'':7s} {imports:7.2f}")
    try:
        peer = cpu_of(PEER, None)
        print(f"  {'Pinocchio process (sample manipulator: rnea, aba)':52s} {peer:7.2f}")
    except subprocess.CalledProcessError:
        print("  (Pinocchio not installed: pip install pin)")


if __name__ == "__main__":
    main()
