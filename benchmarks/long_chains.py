"""Forward dynamics of long serial chains: kic against Pinocchio's ``aba`` (issue 21, item 5).

Run from the repository root::

    python benchmarks/long_chains.py            # numba and numpy, 6..96 joints
    python benchmarks/long_chains.py --quick    # fewer repeats

Chains of 1..16 PUMA 560 arms joined end to end (6..96 joints,
``benchmarks/serial.py``'s ``chained_puma``), one configuration per call from
Python, as a user calls it: ``chain.forward_dynamics(q, qd, tau)`` against
``pinocchio.aba`` on the same model (``benchmarks/pin_model.py``), interleaved
in one process (``serial.measure``: best of the repeats).  kic takes the O(M)
articulated-body recursion from ``kic.settings.ABA_MIN_JOINTS`` joints on; the
column "via I*" times the kernel that forms and factors I* (what every chain
took before), so the crossover can be read off.  Target: kic <= 1x aba at 96
joints (numba).  Results are checked against aba before anything is timed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kic  # noqa: E402
from kic.kernels import serial_numba, serial_numpy  # noqa: E402
from kic.settings import ABA_MIN_JOINTS  # noqa: E402
from serial import chained_puma, environment, fmt_us, inputs, measure  # noqa: E402

try:
    import pinocchio as pin  # noqa: E402
    from pin_model import build_pin_model  # noqa: E402
except ImportError as err:  # pragma: no cover - depends on the environment
    sys.exit(f"long_chains.py needs pinocchio (pip install -e '.[bench]'): {err}")

TARGET_96 = 1.0


def via_inertia(backend: str, chain, q, qd, tau):
    """The I*-based forward dynamics kernel of ``backend``, one configuration."""
    d, out, ok = chain.kernel_data, np.empty(chain.dof), np.empty(1, bool)
    if backend == "numba":
        return lambda: serial_numba._forward(d.packed, q[None], qd[None], tau[None], out[None], ok)
    plain_one = serial_numpy.forward_dynamics_one

    def run():                         # below the threshold the numpy kernel is I*-based
        return plain_one(d, q, qd, tau, out)
    return run if chain.dof < ABA_MIN_JOINTS else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--backend", choices=("numba", "numpy", "both"), default="both")
    ap.add_argument("--copies", type=int, nargs="*", default=[1, 2, 4, 8, 16])
    args = ap.parse_args(argv)
    backends = ("numba", "numpy") if args.backend == "both" else (args.backend,)
    repeats = 3 if args.quick else 7
    print(f"# forward dynamics, one configuration per call ({environment()})")
    print(f"# kic switches to the articulated-body recursion at ABA_MIN_JOINTS = {ABA_MIN_JOINTS}")
    print(f"{'joints':>6} {'backend':>7} {'kic us':>9} {'via I* us':>9} {'aba us':>9} "
          f"{'kic/aba':>8}  target")
    worst = 0.0
    for copies in args.copies:
        chain = chained_puma(copies)
        model = build_pin_model(chain)
        data = model.createData()
        M = chain.dof
        q, qd, _ = (x[0].copy() for x in inputs(M, 1))
        tau = np.random.default_rng(M).normal(size=M) * 10.0
        ref = pin.aba(model, data, q, qd, tau)
        for backend in backends:
            kic.set_backend(backend)
            got = chain.forward_dynamics(q, qd, tau)
            err = np.abs(got - ref).max() / max(1.0, np.abs(ref).max())
            if err > 1e-7:
                sys.exit(f"{M} joints, {backend}: kic and aba differ by {err:.2e}")
            cases = {"kic": (lambda: chain.forward_dynamics(q, qd, tau), 1, backend),
                     "aba": (lambda: pin.aba(model, data, q, qd, tau), 1, backend)}
            old = via_inertia(backend, chain, q, qd, tau)
            if old is not None:
                cases["I*"] = (old, 1, backend)
            t = measure(cases, repeats, "min")
            ratio = t["kic"] / t["aba"]
            target = f"<= {TARGET_96:g}" if M == 96 and backend == "numba" else ""
            if target:
                worst = max(worst, ratio)
            print(f"{M:6d} {backend:>7} {fmt_us(t['kic'])} {fmt_us(t.get('I*'))} "
                  f"{fmt_us(t['aba'])} {ratio:8.2f}  {target}")
    kic.set_backend("auto")
    if worst:
        print(f"# 96 joints, numba: {worst:.2f}x aba (target <= {TARGET_96:g}): "
              + ("met" if worst <= TARGET_96 else "MISSED"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
