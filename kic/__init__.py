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

Errors, in one place (:mod:`kic.errors`): :class:`ModelError` (bad input,
a ``ValueError``), :class:`SingularityError` (with the smallest singular
value, the condition number and where), :class:`ClosureError` (a loop that
cannot be assembled), all :class:`KicError`.
"""
from .actuation import (internal_loads, load_distribution, redundant_rates, task_inertia,
                        weighted_pseudo_inverse)
from .actuators import ActuatedSystem, DCMotor, NominalInputs
from .backend import get_backend, set_backend
from .chain import Joint, Link, SerialChain, composite_body
from .closure import ClosedModel
from .coordinates import BodyPose, CoordinateFunction, PointPosition
from .errors import Status
from .dynamics import DynamicModel
from .errors import ClosureError, KicError, ModelError, SingularityError
from .kinematics import ChainKinematics, Influence
from .linearize import LinearDynamics, linear_dynamics
from .loads import Loads
from .products import cross_product, scalar_product
from .simulate import Simulation, simulate
from .statespace import StateSpaceSequence
from .trajectory import Trajectory
from .topology import Mechanism
from .transfer import Transfer, solve_transfer, transfer_influence
from .mimic import MimicModel
# kic.io holds the file formats (URDF, MJCF); the description's file methods
# (SerialChain.from_urdf, ...) import it when called.  kic.sweep is imported on its
# own, `from kic.sweep import sweep`
from . import indices, io, limits, plot, workspace  # noqa: E402
from .sensitivity import (Centroid, DesignSensitivity, Inertia, Length, Mass, Sensitivities,
                          sensitivities)

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
