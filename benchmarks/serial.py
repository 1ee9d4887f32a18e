"""Timings of kic's serial-chain kernels, with Pinocchio alongside when installed.

Run from the repository root (``make bench`` installs the ``bench`` extra)::

    python benchmarks/serial.py            # full run, ~1-2 minutes
    python benchmarks/serial.py --quick    # smaller N and fewer repeats (smoke test)

What is measured (PUMA 560 from :mod:`mechanisms`, random configurations,
velocities and accelerations):

* per-configuration microseconds at N = 1 (one call per configuration) and at
  N = 10,000 (kic: one batched call; Pinocchio: the same configurations in a
  Python loop, as a Python user would call it);
* Pinocchio's cost of the full inertia-power tensor (crba + M calls of
  computeCoriolisMatrix with unit velocities), next to kic's I* + P*;
* growth with the number of joints M (chained PUMA-like arms, M = 6..48);
* with ``--cold``, first use: the CPU time of whole fresh processes, each with an
  empty numba cache in a temporary folder, that compute one pose's inverse dynamics,
  forward dynamics, or both (target of issue 21: both <= 2 s), and the kernels they
  compiled (numba's cache index files, one per compiled function).

Every measurement is repeated, kic and Pinocchio interleaved in the same
process, and the median of the repeats is reported (``--stat min`` for the
minimum).  Absolute times drift between processes by ~30%; ratios measured
in one run are the meaningful numbers.  Before timing, Pinocchio's model
(built by ``pin_model.build_pin_model`` from the kic chain) is checked against
kic: rnea vs inverse_dynamics, crba vs I*, aba vs forward_dynamics, the
generalized gravity, and the symmetric part of P* vs the Coriolis tensor.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kic  # noqa: E402
import mechanisms  # noqa: E402

try:  # optional peer
    import pinocchio as pin  # noqa: E402
    from pin_model import build_pin_model  # noqa: E402
except ImportError:  # pragma: no cover - depends on the environment
    pin = None


# ----------------------------------------------------------------------------
# chains and inputs
# ----------------------------------------------------------------------------
def chained_puma(copies: int) -> kic.SerialChain:
    """``copies`` PUMA 560 arms joined end to end (6 * copies joints)."""
    base = mechanisms.puma560()
    joints, links, offsets = [], [], []
    for c in range(copies):
        for j, (jt, lk) in enumerate(zip(base.joints, base.links)):
            joints.append(kic.Joint(jt.kind, jt.axis, jt.origin, name=f"j{c}_{j}"))
            links.append(kic.Link(lk.mass, lk.com, lk.inertia, name=f"l{c}_{j}",
                                  check_triangle=False))
            offsets.append(base.frame_offsets[j])
    return kic.SerialChain(joints, links, gravity=base.gravity, base=base.base,
                           tool=base.tool, frame_offsets=np.stack(offsets),
                           name=f"{copies} x PUMA 560")


def inputs(M: int, N: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, (N, M))
    qd = rng.uniform(-1.0, 1.0, (N, M))
    qdd = rng.uniform(-1.0, 1.0, (N, M))
    return q, qd, qdd


# ----------------------------------------------------------------------------
# timing
# ----------------------------------------------------------------------------
def _clock(fn, loops: int) -> float:
    """Seconds per call of ``fn`` over ``loops`` back-to-back calls."""
    t0 = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - t0) / loops


def _calibrate(fn, budget: float = 0.02) -> int:
    """Number of loops so that one sample takes about ``budget`` seconds."""
    fn()
    t = _clock(fn, 1)
    loops = 1
    while t * loops < budget and loops < 100_000:
        loops *= 2
    return loops


def measure(cases: dict, repeats: int, stat: str) -> dict:
    """Time several callables, interleaving them; return seconds per call.

    ``cases`` maps a key to ``(fn, count)`` or ``(fn, count, backend)``: ``count``
    is the number of configurations one call of ``fn`` handles (the result is per
    configuration), ``backend`` the kic backend set before the case is clocked.
    """
    cases = {k: (v + (None,))[:3] for k, v in cases.items()}

    def use(backend):
        if backend is not None:
            kic.set_backend(backend)

    loops = {}
    for k, (fn, _, backend) in cases.items():
        use(backend)
        loops[k] = _calibrate(fn)
    samples = {k: [] for k in cases}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for k, (fn, count, backend) in cases.items():
                use(backend)
                samples[k].append(_clock(fn, loops[k]) / count)
    finally:
        if gc_was:
            gc.enable()
    pick = np.median if stat == "median" else np.min
    return {k: float(pick(v)) for k, v in samples.items()}


# ----------------------------------------------------------------------------
# kic and Pinocchio workloads
# ----------------------------------------------------------------------------
def kic_cases(chain, q, qd, qdd, tau):
    """name -> callable over the whole batch (q of shape (N, M) or (M,))."""
    tool = lambda: chain.kinematics(q, order=1).tool().G  # noqa: E731

    def kin2():
        kin = chain.kinematics(q, order=2)
        t, r = kin.tool(), kin.rotation(chain.dof - 1)
        return t.H, r.H

    def istar():
        return chain.dynamics(q).I_star

    def istar_pstar():
        d = chain.dynamics(q)
        return d.I_star, d.P_star

    return {
        "tool G": tool,
        "kinematics G, H": kin2,
        "I*": istar,
        "I* + P*": istar_pstar,
        "gravity load": lambda: chain.gravity_load(q),
        "inverse dynamics": lambda: chain.inverse_dynamics(q, qd, qdd),
        "forward dynamics": lambda: chain.forward_dynamics(q, qd, tau),
    }


def pin_cases(model, q, qd, qdd, tau):
    """name -> callable looping Pinocchio over the batch (rows of q)."""
    data = model.createData()
    tool_id = model.getFrameId("tool")
    LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    Q, V, A, T = (list(np.ascontiguousarray(x).reshape(-1, model.nq)) for x in (q, qd, qdd, tau))
    rnea, crba, cor, aba, grav = (pin.rnea, pin.crba, pin.computeCoriolisMatrix, pin.aba,
                                  pin.computeGeneralizedGravity)
    fjac = pin.computeFrameJacobian
    units = list(np.eye(model.nv))

    def tool():
        for x in Q:
            fjac(model, data, x, tool_id, LWA)

    def crba_loop():
        for x in Q:
            crba(model, data, x)

    def crba_cor():
        for x, v in zip(Q, V):
            crba(model, data, x)
            cor(model, data, x, v)

    def full_tensor():
        for x in Q:
            crba(model, data, x)
            for e in units:
                cor(model, data, x, e)

    def gravity():
        for x in Q:
            grav(model, data, x)

    def inverse():
        for x, v, a in zip(Q, V, A):
            rnea(model, data, x, v, a)

    def forward():
        for x, v, t in zip(Q, V, T):
            aba(model, data, x, v, t)

    return {
        "tool G": tool,
        "I*": crba_loop,
        "I* + P*": crba_cor,
        "full tensor": full_tensor,
        "gravity load": gravity,
        "inverse dynamics": inverse,
        "forward dynamics": forward,
    }


PIN_NAMES = {
    "tool G": "computeFrameJacobian",
    "kinematics G, H": "-",
    "I*": "crba",
    "I* + P*": "crba + computeCoriolisMatrix",
    "gravity load": "computeGeneralizedGravity",
    "inverse dynamics": "rnea",
    "forward dynamics": "aba",
}

# (N, task) -> (limit, description); ratios are kic / Pinocchio unless noted
TARGETS = {
    (10_000, "inverse dynamics"): ("ratio", 1.0),
    (10_000, "I*"): ("ratio", 1.0),
    (10_000, "I* + P*"): ("ratio", 2.0),
    (10_000, "forward dynamics"): ("ratio", 1.5),
    (1, "inverse dynamics"): ("us", 100.0),
}


# ----------------------------------------------------------------------------
# checks
# ----------------------------------------------------------------------------
def pin_tensor(model, data, q):
    """Pinocchio's (I*, Coriolis tensor T[n, m, l] = C(q, e_l)[n, m])."""
    Mq = pin.crba(model, data, q).copy()
    Mq = np.triu(Mq) + np.triu(Mq, 1).T
    T = np.stack([pin.computeCoriolisMatrix(model, data, q, e).copy()
                  for e in np.eye(model.nv)], axis=-1)
    return Mq, T


def check_against_pin(chain, model, n: int = 50, seed: int = 1) -> dict:
    """Largest differences between kic and Pinocchio on ``n`` random states.

    Returns ``{check: (max abs difference, relative to the largest |value|)}``.
    """
    data = model.createData()
    q, qd, qdd = inputs(chain.dof, n, seed)
    tau_k = chain.inverse_dynamics(q, qd, qdd)
    dyn = chain.dynamics(q)
    Ik, Pk, gk = dyn.I_star, dyn.P_star, dyn.gravity_load
    tau_fd = tau_k + np.random.default_rng(seed).normal(size=tau_k.shape)
    qdd_k = chain.forward_dynamics(q, qd, tau_fd)
    keys = ("rnea - inverse_dynamics", "crba - I*", "gravity", "aba - forward_dynamics",
            "sym(Coriolis tensor) - sym(P*)")
    out = {k: [0.0, 0.0] for k in keys}             # [max abs difference, largest |value|]
    for i in range(n):
        tau_p = pin.rnea(model, data, q[i], qd[i], qdd[i])
        Mp, Tp = pin_tensor(model, data, q[i])
        gp = pin.computeGeneralizedGravity(model, data, q[i])
        ap = pin.aba(model, data, q[i], qd[i], tau_fd[i])
        symP = 0.5 * (Pk[i] + Pk[i].transpose(0, 2, 1))
        symT = 0.5 * (Tp + Tp.transpose(0, 2, 1))
        for key, val in (("rnea - inverse_dynamics", tau_p - tau_k[i]),
                         ("crba - I*", Mp - Ik[i]), ("gravity", gp - gk[i]),
                         ("aba - forward_dynamics", ap - qdd_k[i]),
                         ("sym(Coriolis tensor) - sym(P*)", symT - symP)):
            out[key][0] = max(out[key][0], float(np.abs(val).max()))
        for key, ref in zip(keys, (tau_p, Mp, gp, ap, symT)):
            out[key][1] = max(out[key][1], float(np.abs(ref).max()))
    return {k: (d, d / max(scale, 1e-300)) for k, (d, scale) in out.items()}


# ----------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------
def fmt_us(seconds: float | None) -> str:
    if seconds is None:
        return f"{'-':>9}"
    us = seconds * 1e6
    return f"{us:9.2f}" if us < 1000 else f"{us:9.0f}"


def environment(skipped: bool = False) -> str:
    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}",
             f"{os.cpu_count()} CPUs", platform.machine()]
    if pin is not None:
        parts.append(f"Pinocchio {pin.__version__}")
    elif skipped:
        parts.append("Pinocchio not used (--no-pin)")
    else:
        parts.append("Pinocchio not installed (pip install -e '.[bench]')")
    return ", ".join(parts)


def target_text(N, task, t, backends) -> str:
    """'<= 1.0: numba ok, numpy MISS' for the tasks with a target."""
    if (N, task) not in TARGETS:
        return ""
    kind, lim = TARGETS[(N, task)]
    tp = t.get(("pin", task))
    if kind == "ratio" and tp is None:
        return f"<= {lim:.1f}"
    verdicts = []
    for b in backends:
        tk = t[(b, task)]
        ok = tk / tp <= lim if kind == "ratio" else tk * 1e6 < lim
        verdicts.append(f"{b} {'ok' if ok else 'MISS'}")
    return (f"<= {lim:.1f}: " if kind == "ratio" else f"< {lim:.0f} us: ") + ", ".join(verdicts)


def run_main_table(chain, model, sizes, repeats, stat, backends):
    print(f"\n## {chain.name or 'PUMA 560'}: microseconds per configuration "
          f"({stat} of {repeats} interleaved repeats)\n")
    head = (f"{'N':>6}  {'task':<18}" + "".join(f" {b + ' us':>9}" for b in backends)
            + f"  {'pin us':>9}" + "".join(f"  {b + '/pin':>9}" for b in backends)
            + f"  {'target':<30} {'Pinocchio call'}")
    print(head)
    print("-" * len(head))
    results = {}
    for N in sizes:
        q, qd, qdd = inputs(chain.dof, N, seed=2)
        tau = chain.inverse_dynamics(q, qd, qdd)
        if N == 1:  # single configuration: the unbatched call
            q, qd, qdd, tau = q[0], qd[0], qdd[0], tau[0]
        cases = {(b, k): (fn, N, b) for b in backends
                 for k, fn in kic_cases(chain, q, qd, qdd, tau).items()}
        if model is not None:
            cases.update({("pin", k): (fn, N)
                          for k, fn in pin_cases(model, q, qd, qdd, tau).items()})
        t = measure(cases, repeats, stat)
        results[N] = t
        for task in PIN_NAMES:
            tp = t.get(("pin", task))
            ratios = "".join(
                f"  {t[(b, task)] / tp:9.2f}" if tp is not None else f"  {'-':>9}"
                for b in backends)
            print(f"{N:>6}  {task:<18}" + "".join(f" {fmt_us(t[(b, task)])}" for b in backends)
                  + f"  {fmt_us(tp)}{ratios}  {target_text(N, task, t, backends):<30} "
                  f"{PIN_NAMES[task] if model is not None else ''}")
        if model is not None:
            tf = t[("pin", "full tensor")]
            print(f"{N:>6}  {'full tensor':<18}"
                  + "".join(f" {fmt_us(t[(b, 'I* + P*')])}" for b in backends)
                  + f"  {fmt_us(tf)}"
                  + "".join(f"  {t[(b, 'I* + P*')] / tf:9.2f}" for b in backends)
                  + f"  {'':<30} crba + {chain.dof} x computeCoriolisMatrix(e_l) vs kic I* + P*")
        print()
    return results


def run_growth(sizes_m, repeats, stat, n_max, backend):
    print(f"\n## growth with the number of joints (chained PUMA 560 arms; kic backend "
          f"{backend}; {stat} of {repeats} repeats; microseconds per configuration)\n")
    cols = ["M", "N", "kic I*+P*", "ns/entry", "kic ID"]
    if pin is not None:
        cols += ["pin crba+C", "pin tensor", "pin rnea", "P*/tensor", "ID/rnea"]
    print("  ".join(f"{c:>10}" for c in cols))
    print("-" * (12 * len(cols)))
    for M in sizes_m:
        chain = chained_puma(M // 6)
        N = int(min(n_max, max(20, 2e7 // M**3)))
        q, qd, qdd = inputs(M, N, seed=3)
        tau = chain.inverse_dynamics(q, qd, qdd)
        kc = kic_cases(chain, q, qd, qdd, tau)
        cases = {"kic I*+P*": (kc["I* + P*"], N, backend),
                 "kic ID": (kc["inverse dynamics"], N, backend)}
        if pin is not None:
            model = build_pin_model(chain)
            pc = pin_cases(model, q, qd, qdd, tau)
            cases.update({"pin crba+C": (pc["I* + P*"], N), "pin tensor": (pc["full tensor"], N),
                          "pin rnea": (pc["inverse dynamics"], N)})
        t = measure(cases, max(3, repeats // 2), stat)
        row = [f"{M:>10d}", f"{N:>10d}", f"{t['kic I*+P*'] * 1e6:>10.1f}",
               f"{t['kic I*+P*'] * 1e9 / M**3:>10.1f}", f"{t['kic ID'] * 1e6:>10.1f}"]
        if pin is not None:
            row += [f"{t['pin crba+C'] * 1e6:>10.1f}", f"{t['pin tensor'] * 1e6:>10.1f}",
                    f"{t['pin rnea'] * 1e6:>10.1f}",
                    f"{t['kic I*+P*'] / t['pin tensor']:>10.2f}",
                    f"{t['kic ID'] / t['pin rnea']:>10.2f}"]
        print("  ".join(row))


COLD_CASES = {
    "inverse dynamics": "tau = arm.inverse_dynamics(q, qd, qdd)",
    "forward dynamics": "qdd = arm.forward_dynamics(q, qd, qdd)",
    "inverse + forward dynamics": "tau = arm.inverse_dynamics(q, qd, qdd)\n"
                                  "back = arm.forward_dynamics(q, qd, tau)",
}
COLD_SETUP = """
import numpy as np, mechanisms
arm = mechanisms.puma560()
q, qd, qdd = np.full(6, 0.3), np.full(6, 0.5), np.full(6, 0.1)
"""


def cold_start(repeats: int) -> None:
    """CPU seconds of fresh processes with an empty numba cache (one pose, PUMA 560)."""
    import resource
    import subprocess
    import tempfile

    def run(code: str, cache: str) -> float:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache,
                   PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
        env.pop("KIC_BACKEND", None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=HERE.parent,
                       stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    print(f"\n## first use (PUMA 560, one pose): CPU seconds of a fresh process, empty numba "
          f"cache (best of {repeats}), then warm\n")
    print(f"  {'case':<28} {'cold':>6} {'warm':>6}  compiled kernels")
    for name, code in COLD_CASES.items():
        cold, warm, compiled = np.inf, np.inf, []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="kic-numba-cache-") as cache:
                cold = min(cold, run(COLD_SETUP + code, cache))
                warm = min(warm, run(COLD_SETUP + code, cache))
                compiled = sorted(f.name.split(".py")[0].split("-")[0]
                                  for f in Path(cache).rglob("*.nbi"))
        target = "  (target <= 2 s)" if "+" in name else ""
        print(f"  {name:<28} {cold:6.2f} {warm:6.2f}  {len(compiled)}: {', '.join(compiled)}"
              f"{target}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 1 and 1,000, 3 repeats")
    ap.add_argument("--repeats", type=int, default=None, help="repeats per measurement (7)")
    ap.add_argument("--stat", choices=("median", "min"), default="median")
    ap.add_argument("--no-pin", action="store_true", help="time kic alone")
    ap.add_argument("--no-growth", action="store_true", help="skip the growth table")
    ap.add_argument("--backend", choices=("both", "numpy", "numba"), default="both",
                    help="kic kernels to time (both: numpy and, if installed, numba)")
    ap.add_argument("--cold", action="store_true",
                    help="first use only: fresh processes with an empty numba cache")
    args = ap.parse_args(argv)
    if args.cold:
        cold_start(args.repeats or (1 if args.quick else 3))
        return 0
    global pin
    if args.no_pin:
        pin = None
    repeats = args.repeats or (3 if args.quick else 7)
    sizes = (1, 1_000) if args.quick else (1, 10_000)

    print("kic serial benchmarks")
    print(environment(skipped=args.no_pin))
    chain = mechanisms.puma560()
    model = None
    if pin is not None:
        model = build_pin_model(chain)
        diffs = check_against_pin(chain, model)
        print("\nkic vs Pinocchio on 50 random states:")
        print(f"  {'check':<34} {'max |diff|':>10}  {'relative':>10}")
        bad = False
        for k, (d, r) in diffs.items():
            flag = "" if r < 1e-10 else "   <-- MISMATCH"
            bad |= bool(flag)
            print(f"  {k:<34} {d:10.2e}  {r:10.2e}{flag}")
        if bad:
            print("  the two models disagree: timings below compare different computations")
    from kic.kernels import jit as _compiled
    backends = (["numpy", "numba"] if _compiled.available else ["numpy"]) \
        if args.backend == "both" else [args.backend]
    if not _compiled.available:
        print("numba cannot be imported: numpy kernels only (numba is a dependency: pip install numba)")
    run_main_table(chain, model, sizes, repeats, args.stat, backends)
    if not args.no_growth:
        for b in backends:
            run_growth((6, 12, 24) if args.quick else (6, 12, 24, 48), repeats, args.stat,
                       n_max=200 if args.quick else 1000, backend=b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
