"""The interface kic's models share, stated as protocols.

Three classes model a mechanism's dynamics in its coordinates q:
:class:`kic.SerialChain` (an open chain in its joints), :class:`kic.ClosedModel`
(any mechanism, transferred to chosen coordinates) and
:class:`kic.MimicModel` (a chain whose joints follow others).  They share
:class:`Model`; the functions that take "a model" (:func:`kic.simulate`,
:func:`kic.linear_dynamics`, :func:`kic.plot.skeleton`,
:class:`kic.DesignSensitivity`) ask which further interface it offers with
``isinstance(model, ...)`` against these protocols, never by looking for single
attributes:

* :class:`ChainModel`: the frames of a chain's links and tool (drawing);
* :class:`TransferredModel`: the open chains the model is made of and the
  transfer from their joints to q (linearization);
* :class:`ClosedLoopModel`: joint values phi of every joint assembled at q, the
  loop closure and its conditioning (simulation tracks phi along the motion,
  switches coordinates and crosses singular configurations).

The protocols are runtime-checkable: ``isinstance`` checks that every member
is present (not the signatures), which is what a branch on the kind of model
needs.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Model", "ChainModel", "TransferredModel", "ClosedLoopModel"]


@runtime_checkable
class Model(Protocol):
    """The dynamic model in coordinates q (M,): what every kic model offers.

    Every function takes batches ``(..., M)``; SI units (rad, m; N m, N)."""

    @property
    def dof(self) -> int:
        """Number M of coordinates."""

    @property
    def coordinate_names(self) -> list:
        """The coordinates' names (M)."""

    def kinematics(self, q, order: int = 2):
        """Influence coefficients (G, H, D) of the bodies in q."""

    def dynamics(self, q):
        """The dynamic model at q: I*, P*, loads and energies."""

    def inverse_dynamics(self, q, qd, qdd, loads=None) -> np.ndarray:
        """Required loads ``T = I* q'' + q'^T P* q' + T_L`` (..., M)."""

    def forward_dynamics(self, q, qd, tau, loads=None) -> np.ndarray:
        """Accelerations ``q'' = I*^-1 (T - q'^T P* q' - T_L)`` (..., M)."""

    def gravity_load(self, q) -> np.ndarray:
        """T_L of gravity (..., M)."""

    def kinetic_energy(self, q, qd) -> np.ndarray:
        """Kinetic energy (J) (...)."""

    def potential_energy(self, q) -> np.ndarray:
        """Gravitational potential energy (J) (...)."""


@runtime_checkable
class ChainModel(Model, Protocol):
    """A serial chain: its links' and tool's world frames in its joints."""

    def frames(self, q) -> np.ndarray:
        """World frames of the links (..., M, 4, 4)."""

    def tool_frame(self, q) -> np.ndarray:
        """World frame of the tool (..., 4, 4)."""

    def link_index(self, name: str) -> int:
        """Position of the named link."""


@runtime_checkable
class TransferredModel(Model, Protocol):
    """A model made of open chains whose joints phi follow q by a transfer."""

    @property
    def open_chains(self) -> list:
        """(SerialChain, phi indices) of each open chain."""

    def transfer_at(self, q, order: int = 2) -> tuple:
        """Joint values phi (n, N) and the transfer G^phi_q, H, D at q."""

    def split_loads(self, loads, *args) -> list:
        """The parts of ``loads`` acting on each open chain."""


@runtime_checkable
class ClosedLoopModel(TransferredModel, Protocol):
    """A mechanism with loops in chosen coordinates: every joint value phi (N,)
    is assembled at q by solving the loop closure (:class:`kic.ClosedModel`)."""

    mechanism: object           # the kic.Mechanism described
    coordinates: tuple          # the coordinates as given to mechanism.model
    system: object              # its kic.loops.LoopSystem
    max_condition: float

    @property
    def N(self) -> int:
        """Number of joint values phi."""

    @property
    def phi_names(self) -> list:
        """The joints' names (N)."""

    @property
    def characteristic_length(self) -> float:
        """L (m): lengths divided by it are dimensionless."""

    @property
    def evaluation(self):
        """The evaluation chosen for the model (:mod:`kic.closed_eval`)."""

    def assemble(self, q, start=None, on_failure: str = "raise"):
        """Joint values phi (..., N) at q."""

    def assembly(self, q, start=None):
        """Joint values at q and how each configuration fared (never raises)."""

    def joint_rates(self, q, qd, qdd=None, start=None):
        """phi' (and phi'') of every joint (..., N)."""

    def joint_indices(self, names) -> np.ndarray:
        """Positions of the named joints in phi."""

    def in_coordinates(self, coordinates, guess=None, name=None, reference=None,
                       characteristic_length=None):
        """The same mechanism modelled in other coordinates."""

    def best_coordinates(self, phi, max_candidates: int = 5000) -> tuple:
        """The set of joint coordinates best conditioned at phi, and its condition."""

    def closure_jacobian(self, phi) -> np.ndarray:
        """dc/dphi (..., R, N)."""

    def mode_at(self, phi) -> np.ndarray:
        """The signs of the assembly mode at joint values phi (..., S)."""

    def project(self, phi) -> tuple:
        """The assembled joint values nearest to phi, and the residual."""

    def joint_space_dynamics(self, phi, phid) -> tuple:
        """M, b, J, c of the open chains held together by the closure."""

    def loads_energy_at(self, loads, phi) -> np.ndarray:
        """Potential energy (J) of conservative loads at joint values phi."""
