"""kic: kinematics and dynamics of rigid-link mechanisms by kinematic influence
coefficients (R. A. Freeman, 1985, after Tesar, Benedict and Thomas).

The data flow one way, and so do the modules:

* description (what a mechanism is): :class:`Joint`, :class:`Link`,
  :class:`SerialChain`; :class:`Mechanism` (a graph of bodies and joints);
* influence coefficients at q: ``chain.kinematics(q)`` ->
  :class:`ChainKinematics` (G, H, D of any rotation or point, as
  :class:`Influence`);
* the dynamic model at q: ``chain.dynamics(q)`` -> :class:`DynamicModel` (I*,
  P*, gravity and applied :class:`Loads`, energies); inverse and forward
  dynamics, :func:`simulate`;
* transfer to new coordinates: :class:`Transfer`; closed mechanisms in any
  coordinates, ``mechanism.model(...)`` -> :class:`ClosedModel` (with
  :class:`BodyPose`, :class:`PointPosition`), :func:`load_distribution` and
  redundancy helpers;
* linearized model: :func:`linear_dynamics`; DC motors and the state space:
  :class:`DCMotor`, :class:`ActuatedSystem`, :class:`Trajectory`,
  :class:`StateSpaceSequence` (export to python-control, scipy, MATLAB);
* design sensitivities: :func:`sensitivities` (:class:`Length`, :class:`Mass`,
  :class:`Centroid`, :class:`Inertia` parameters -> :class:`Sensitivities`:
  dI*/dp, dT_gravity/dp, dT/dp, dtau_a/dp).

Speed: every per-configuration call takes a batch ``q`` of shape ``(..., M)``;
:func:`set_backend` / :func:`get_backend` choose between the numpy kernels and
compiled ones (numba, the optional ``fast`` extra) for the serial-chain dynamics.
``import kic`` imports the description and the serial chain's dynamics; the
other names import their modules on first use.

Errors, in one place (:mod:`kic.errors`): :class:`ModelError` (bad input,
a ``ValueError``), :class:`SingularityError` (with the smallest singular
value, the condition number and where), :class:`ClosureError` (a loop that
cannot be assembled), all :class:`KicError`.
"""
# The description and the serial chain's dynamics are imported with kic (numpy
# only); everything else -- closed mechanisms (networkx), simulation, state
# space and sensitivities (scipy), plots (matplotlib) -- on first use of its
# name, so that `import kic` takes a fraction of a second.
from .backend import get_backend, set_backend
from .chain import Joint, Link, SerialChain, composite_body
from .dynamics import DynamicModel
from .errors import ClosureError, KicError, ModelError, SingularityError, Status
from .kinematics import ChainKinematics, Influence

_LAZY = {
    "internal_loads": "actuation", "load_distribution": "actuation",
    "redundant_rates": "actuation", "task_inertia": "actuation",
    "weighted_pseudo_inverse": "actuation",
    "ActuatedSystem": "actuators", "DCMotor": "actuators", "NominalInputs": "actuators",
    "ClosedModel": "closure",
    "BodyPose": "coordinates", "CoordinateFunction": "coordinates",
    "PointPosition": "coordinates",
    "LinearDynamics": "linearize", "linear_dynamics": "linearize",
    "Loads": "loads",
    "cross_product": "products", "scalar_product": "products",
    "Simulation": "simulation", "simulate": "simulation",
    "StateSpaceSequence": "statespace",
    "Trajectory": "trajectory",
    "Mechanism": "topology",
    "Transfer": "transfer", "solve_transfer": "transfer", "transfer_influence": "transfer",
    "MimicModel": "mimic",
    "Centroid": "sensitivity", "DesignSensitivity": "sensitivity", "Inertia": "sensitivity",
    "Length": "sensitivity", "Mass": "sensitivity", "Sensitivities": "sensitivity",
    "sensitivities": "sensitivity",
}
# kic.io holds the file formats (URDF, MJCF); the description's file methods
# (SerialChain.from_urdf, ...) import it when called.  kic.sweep is imported on its
# own, `from kic.sweep import sweep`
_MODULES = ("indices", "io", "limits", "plot", "simulation", "workspace")


def __getattr__(name: str):
    """The names of :data:`_LAZY` and the modules of :data:`_MODULES`, imported on
    first use (PEP 562) and then bound here."""
    import importlib
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _MODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'kic' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | set(_MODULES))


__all__ = [
    "Joint", "Link", "SerialChain", "composite_body",
    "Mechanism", "ClosedModel", "BodyPose", "PointPosition", "CoordinateFunction",
    "ChainKinematics", "Influence", "DynamicModel", "Loads",
    "simulate", "Simulation", "linear_dynamics", "LinearDynamics",
    "DCMotor", "ActuatedSystem", "NominalInputs", "Trajectory", "StateSpaceSequence",
    "load_distribution", "internal_loads", "weighted_pseudo_inverse", "redundant_rates",
    "task_inertia",
    "scalar_product", "cross_product",
    "Transfer", "solve_transfer", "transfer_influence",
    "KicError", "ModelError", "SingularityError", "ClosureError", "Status",
    "set_backend", "get_backend", "MimicModel", "indices", "io", "plot",
    "limits", "workspace",
    "Length", "Mass", "Centroid", "Inertia", "Sensitivities", "DesignSensitivity",
    "sensitivities",
]
__version__ = "0.1.0"
