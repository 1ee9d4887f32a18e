"""kic: kinematics and dynamics of rigid-link mechanisms by kinematic influence
coefficients (R. A. Freeman, 1985, after Tesar, Benedict and Thomas).

Description (what a mechanism is): :class:`Joint`, :class:`Link`,
:class:`SerialChain`.  Per-configuration results (what it does at q):
``chain.kinematics(q)`` -> :class:`ChainKinematics` (influence coefficients
G, H, D), ``chain.dynamics(q)`` -> :class:`DynamicModel` (I*, P*, loads,
energies).  Inverse and forward dynamics, :class:`Loads` by virtual work and
:func:`simulate`.  Errors: :class:`ModelError`, :class:`SingularityError`,
:class:`ClosureError`, all :class:`KicError`.
"""
from .actuation import (internal_loads, load_distribution, redundant_rates, task_inertia,
                        weighted_pseudo_inverse)
from .actuators import ActuatedSystem, DCMotor, NominalInputs
from .chain import Joint, Link, SerialChain
from .closure import BodyPose, ClosedModel, PointPosition
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

__all__ = [
    "Joint", "Link", "SerialChain",
    "Mechanism", "ClosedModel", "BodyPose", "PointPosition",
    "ChainKinematics", "Influence", "DynamicModel", "Loads",
    "simulate", "Simulation", "linear_dynamics", "LinearDynamics",
    "DCMotor", "ActuatedSystem", "NominalInputs", "Trajectory", "StateSpaceSequence",
    "load_distribution", "internal_loads", "weighted_pseudo_inverse", "redundant_rates",
    "task_inertia",
    "scalar_product", "cross_product",
    "Transfer", "solve_transfer", "transfer_influence",
    "KicError", "ModelError", "SingularityError", "ClosureError",
]
__version__ = "0.1.0"
