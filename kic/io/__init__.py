"""Robot and mechanism files: URDF in and out (:mod:`kic.io.urdf`), MJCF out for
MuJoCo (:mod:`kic.io.mjcf`).

The description classes offer them as thin methods (``SerialChain.from_urdf``,
``Mechanism.from_urdf``, ``.to_urdf()``, ``.to_mjcf()``) that import these
modules when called: the formats sit above the description in the data flow.
"""
from ._xml import RepairWarning
from .mjcf import spanning_tree, to_mjcf
from .urdf import UrdfRobot, chain_from_urdf, mechanism_from_urdf, parse_urdf, to_urdf

__all__ = ["RepairWarning", "UrdfRobot", "parse_urdf", "chain_from_urdf",
           "mechanism_from_urdf", "to_urdf", "to_mjcf", "spanning_tree"]
