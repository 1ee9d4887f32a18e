"""Joint limits along a simulation (:func:`kic.simulate`'s ``on_limit``): the
limits that apply to a model, the limit a crossing reaches, the same model
without limits, and the signals the integration passes when it meets one."""
from __future__ import annotations

import numpy as np

from .limits import ConeLimit

__all__ = ["LimitCrossed", "BeyondLimit", "limit_text", "without_limits", "limits_of",
           "nearest_limit"]


class LimitCrossed(Exception):
    """The motion crossed a joint limit (:func:`kic.simulate` stops there)."""

    def __init__(self, stop: dict) -> None:
        super().__init__(stop["joint"])
        self.stop = stop


class BeyondLimit(Exception):
    """A trial point of a step lies beyond a joint limit (internal)."""


def limit_text(stop: dict) -> str:
    """The value and the limit of a crossing (:func:`nearest_limit`) in words."""
    limit, unit = stop["limit"], stop["unit"]
    if isinstance(limit, ConeLimit):
        return f"cone angle {stop['value']:.9g} rad, limit {limit.angle:.6g} rad"
    return (f"{stop['value']:.9g} {unit}, range [{limit.lower:.6g}, {limit.upper:.6g}] "
            f"{unit}")


def without_limits(model):
    """The same closed model (coordinates, reference, guess) of a copy of its
    mechanism without joint limits (``on_limit="ignore"``)."""
    mech = model.mechanism.copy()
    mech.limits = {}
    physical = set(mech.primitive_joints)
    ref = {k: model.reference_phi[i] for k, i in model.system.index.items() if k in physical}
    return mech.model(list(model.coordinate_names), reference=ref, guess=model.guess,
                      name=model.name)


def limits_of(model):
    """The model's joint limits where any applies to its joint values, else None."""
    limits = getattr(model, "limits", None)
    return limits if limits is not None and limits.checked else None


def nearest_limit(model, limits, phi) -> dict:
    """The limit nearest to phi (N,) (the one a crossing reaches): its joint,
    value (rad or m, a cone's angle), limit and unit."""
    check = limits.check(phi)
    k = int(np.nanargmin(check.margin))
    name, limit = check.names[k], limits[check.names[k]]
    if isinstance(limit, ConeLimit):
        return {"joint": name, "value": float(limit.angle - check.margin[k]), "limit": limit,
                "unit": "rad"}
    kind = {p.name: p.kind for p in model.mechanism.all_primitives()}[name]
    return {"joint": name, "value": float(phi[list(model.phi_names).index(name)]),
            "limit": limit, "unit": "rad" if kind == "R" else "m"}
