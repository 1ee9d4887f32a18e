"""Hostile and random inputs over kic's public API: what comes back?

Every call is classified as

* ``ok``        -- returned finite numbers (or empty, for an empty batch);
* ``status``    -- returned NaN where a status array says why (failures as data);
* ``kic error`` -- raised a :class:`kic.KicError` (the message names the part at fault);
* ``silent``    -- returned non-finite numbers without a status, or accepted an input
  that has no meaning as joint values (complex, NaN, a wrong length, ...): a silent
  wrong answer;
* ``foreign``   -- raised an exception that is not a kic error (numpy's, Python's).

``silent`` and ``foreign`` must be 0.  ``tests/test_fuzz.py`` runs these cases (and
random mechanisms with random bad inputs) and asserts the two zeros;
``python tests/fuzzing.py`` prints the table (``--verbose`` lists each silent or
foreign call).
"""
from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import kic
import mechanisms


@dataclass
class Outcome:
    kind: str
    detail: str = ""


def _arrays(result) -> list[np.ndarray]:
    """The float arrays in a result (a value, a tuple, an object's public arrays)."""
    if isinstance(result, np.ndarray):
        return [result] if result.dtype.kind in "fc" else []
    if isinstance(result, (float, np.floating)):
        return [np.asarray(result)]
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _arrays(r)]
    out = []
    for name in ("phi", "tau", "qdd", "torque", "I_star", "G", "condition", "x"):
        v = getattr(result, name, None)
        if isinstance(v, np.ndarray) and v.dtype.kind in "fc":
            out.append(v)
    return out


def _has_status(result) -> bool:
    if isinstance(result, (tuple, list)):
        return any(_has_status(r) for r in result)
    if getattr(result, "status", None) is not None:
        return True
    return isinstance(result, np.ndarray) and result.dtype.kind in "iu"


#: inputs that must be refused with a kic error, never taken
MUST_REFUSE = {"dict", "string", "none", "ragged", "complex", "nan", "inf", "wrong length",
               "object array"}


def classify(call: Callable[[], Any], refuse: bool = False, empty: bool = False) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                result = call()
    except kic.KicError as exc:
        return Outcome("kic error", str(exc)[:160])
    except RecursionError as exc:       # not a subclass of anything kic raises
        return Outcome("foreign", f"RecursionError: {exc}"[:160])
    except Exception as exc:            # noqa: BLE001 - the point is to catch them
        return Outcome("foreign", f"{type(exc).__name__}: {exc}"[:160])
    arrays = _arrays(result)
    if refuse:
        return Outcome("silent", "accepted an input it must refuse")
    if empty and any(a.size for a in arrays):
        return Outcome("silent", "an empty batch gave a non-empty result")
    if all(np.all(np.isfinite(a)) for a in arrays):
        return Outcome("ok")
    if _has_status(result):
        return Outcome("status")
    return Outcome("silent", f"non-finite {[a.shape for a in arrays]}")


# ------------------------------------------------------------------ inputs
def bad_values(M: int) -> dict[str, Any]:
    """Inputs a user (or a buggy script) can pass where (..., M) joint values go."""
    good = np.linspace(0.1, 0.3, M)
    ragged = [list(good), list(good[:-1])] if M > 1 else [[0.1], []]
    return {
        "dict": {"q": 1.0},
        "string": "0.1, 0.2",
        "none": None,
        "ragged": ragged,
        "complex": good + 0.5j,
        "nan": np.where(np.arange(M) == 0, np.nan, good),
        "inf": np.where(np.arange(M) == 0, np.inf, good),
        "huge": np.full(M, 1e160),
        "largest float": np.full(M, np.finfo(float).max),
        "wrong length": np.zeros(M + 1),
        "scalar": 0.3,
        "empty batch": np.zeros((0, M)),
        "object array": np.array([object()] * M, dtype=object),
        "bool": np.ones(M, bool),
    }


def serial_cases(model, name: str):
    M = model.dof
    q, qd, qdd = np.full(M, 0.2), np.full(M, 0.3), np.full(M, 0.1)
    calls = {
        "inverse_dynamics": lambda x: model.inverse_dynamics(x, qd, qdd),
        "forward_dynamics": lambda x: model.forward_dynamics(x, qd, qdd),
        "dynamics.I_star": lambda x: model.dynamics(x).I_star,
        "gravity_load": lambda x: model.gravity_load(x),
        "kinetic_energy": lambda x: model.kinetic_energy(x, qd),
        "potential_energy": lambda x: model.potential_energy(x),
        "rates: inverse_dynamics(q, x)": lambda x: model.inverse_dynamics(q, x, qdd),
    }
    for (fname, fn), (bname, bad) in itertools.product(calls.items(), bad_values(M).items()):
        yield f"{name}.{fname} <- {bname}", bname, (lambda fn=fn, bad=bad: fn(bad))


def closed_cases(model, name: str, q0):
    M = model.dof
    qd, qdd = np.full(M, 0.1), np.zeros(M)
    acts = list(getattr(model, "actuators", None) or model.coordinate_names)
    calls = {
        "assemble": lambda x: model.assemble(x),
        "assemble nan": lambda x: model.assemble(x, on_failure="nan"),
        "inverse_dynamics": lambda x: model.inverse_dynamics(x, qd, qdd),
        "inverse_dynamics nan": lambda x: model.inverse_dynamics(x, qd, qdd, on_failure="nan"),
        "forward_dynamics": lambda x: model.forward_dynamics(x, qd, qdd),
        "actuator_loads": lambda x: model.actuator_loads(x, qd, qdd, acts),
        "condition": lambda x: model.condition(x),
        "gravity_load": lambda x: model.gravity_load(x),
        "potential_energy": lambda x: model.potential_energy(x),
        "rates: inverse_dynamics(q0, x)": lambda x: model.inverse_dynamics(q0, x, qdd),
    }
    for (fname, fn), (bname, bad) in itertools.product(calls.items(), bad_values(M).items()):
        yield f"{name}.{fname} <- {bname}", bname, (lambda fn=fn, bad=bad: fn(bad))


def models():
    yield "serial", "puma560", mechanisms.puma560(), None
    yield "serial", "planar_two_link", mechanisms.planar_two_link(), None
    fb = mechanisms.five_bar()
    yield "closed", "five_bar", fb, fb.reference
    sp = mechanisms.stewart_platform()
    yield "closed", "stewart", sp, sp.reference
    fo = mechanisms.four_bar()
    yield "closed", "four_bar", fo, fo.reference


def _one_joint_without_inertia():
    mech = kic.Mechanism()
    mech.add_body("a", mass=0.0)
    mech.add_joint("j", "R", "ground", "a")
    return mech.model(["j"])


def _mimic_with_singular_inertia():
    # point masses on the common axis of two revolutes: I* = 0
    z = kic.Joint("R", [0, 0, 1], np.eye(4))
    return kic.MimicModel(kic.SerialChain([z, z], [kic.Link(1.0), kic.Link(1.0)]), {})


def _unreachable_by_guess():
    """A five-bar whose guess answers NaN at crank angles where the couplers
    cannot meet; evaluated there."""
    return mechanisms.five_bar(coupler1=0.3, coupler2=0.3)


def bad_models():
    """Models a user can build whose dynamics cannot be evaluated, or which cannot
    close: (name, builder, pose to evaluate at or None for the reference)."""
    massless = dict.fromkeys(("m_crank1", "m_crank2", "m_coupler1", "m_coupler2", "m_tip"),
                             0.0)
    heavy = dict.fromkeys(massless, 1e300)
    yield "one joint without inertia", _one_joint_without_inertia, None
    yield "massless five-bar", lambda: mechanisms.five_bar(**massless), None
    yield "mimic with a singular I*", _mimic_with_singular_inertia, np.zeros(2)
    yield "five-bar that never closes", lambda: mechanisms.five_bar(base=2.0), None
    yield "pose unreachable by the guess", _unreachable_by_guess, np.array([np.pi, 0.0])
    yield "five-bar of 1e300 kg", lambda: mechanisms.five_bar(**heavy), None
    yield "Stewart platform of 1e300 kg", lambda: mechanisms.stewart_platform(
        m_plat=1e300, m_cyl=1e300, m_rod=1e300), None


def _infeasible_design_loads():
    """Loads of a five-bar design batch whose first design never closes."""
    batch = mechanisms.five_bar_designs(base=[2.0, 0.2])
    q = np.array([[[2.0, 1.1]]])
    return batch.loads(q, np.zeros_like(q), np.zeros_like(q))


def bad_model_cases():
    """Every evaluation of each of :func:`bad_models` at its pose (single and a
    batch of two): a kic error or a status, never a non-kic exception or NaN
    without a status; a model that cannot be built must be refused clearly."""
    yield "five-bar designs, one never closes: loads", "design", _infeasible_design_loads
    for name, build, at in bad_models():
        try:
            model = build()
        except Exception:                      # noqa: BLE001 - classified below
            yield f"{name}: build", "build", build
            continue
        q = model.reference if at is None else at
        M = model.dof
        qd, x = np.full(M, 0.1), np.ones(M)
        calls = {
            "forward_dynamics": lambda q: model.forward_dynamics(q, qd, x),
            "inverse_dynamics": lambda q: model.inverse_dynamics(q, qd, x),
            "dynamics.I_star": lambda q: model.dynamics(q).I_star,
            "gravity_load": lambda q: model.gravity_load(q),
            "kinetic_energy": lambda q: model.kinetic_energy(q, qd),
            "potential_energy": lambda q: model.potential_energy(q),
        }
        if isinstance(model, kic.ClosedModel):
            calls.update({
                "assemble nan": lambda q: model.assemble(q, on_failure="nan"),
                "forward_dynamics nan": lambda q: model.forward_dynamics(q, qd, x,
                                                                         on_failure="nan"),
                "inverse_dynamics nan": lambda q: model.inverse_dynamics(q, qd, x,
                                                                         on_failure="nan"),
            })
        for (fname, fn), (bname, arg) in itertools.product(
                calls.items(), (("one", q), ("batch", np.stack([q, q])))):
            yield f"{name}.{fname} <- {bname}", bname, (lambda fn=fn, arg=arg: fn(arg))


def all_cases():
    for kind, name, model, q0 in models():
        if kind == "serial":
            yield from serial_cases(model, name)
        else:
            yield from closed_cases(model, name, q0)
    yield from bad_model_cases()


def run(verbose: bool = False, backends=("numba", "numpy")) -> Counter:
    counts: Counter = Counter()
    for backend in backends:
        kic.set_backend(backend)
        for label, bname, call in all_cases():
            out = classify(call, refuse=bname in MUST_REFUSE, empty=bname == "empty batch")
            counts[out.kind] += 1
            if verbose and out.kind in ("silent", "foreign"):
                print(f"[{backend}] {out.kind:8s} {label}: {out.detail}")
    kic.set_backend("auto")
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--backend", choices=("numba", "numpy", "both"), default="both")
    a = p.parse_args(argv)
    backends = ("numba", "numpy") if a.backend == "both" else (a.backend,)
    counts = run(a.verbose, backends)
    total = sum(counts.values())
    print(f"inputs tried: {total}")
    for kind in ("ok", "status", "kic error", "silent", "foreign"):
        print(f"  {kind:10s} {counts.get(kind, 0):6d}")
    return 0 if counts.get("silent", 0) == counts.get("foreign", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
