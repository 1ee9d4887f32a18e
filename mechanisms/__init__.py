"""Ready-made mechanism models for kic.

Every builder takes its dimensions and masses as keyword arguments with SI
defaults (m, kg, kg m^2, m/s^2) and returns a :class:`kic.SerialChain`;
invalid dimensions (a negative length or mass, a non-finite value) raise
:class:`kic.ModelError`.

Seed models (closed-form oracles, docs/theory.md section 8):

- :func:`planar_two_link`, :func:`planar_three_link`: Horn's planar arms of
  uniform rods (seed 001);
- :func:`horn_three_dof`: Horn, Hirokawa & Vazirani's spatial three-DOF chain
  with point masses and MIT-Scheinman offsets (seed 000);
- :func:`craig_three_link`: Craig's three-link exercise, modified DH (seed 003);
- :func:`fu_two_link`: Fu, Gonzalez & Lee's two-link arm, standard DH (seed 002).

Published arms:

- :func:`puma560` (+ :func:`puma560_drives`): standard DH, Armstrong-Khatib-
  Burdick inertial parameters as tabulated in Corke's Robotics Toolbox;
- :func:`stanford_arm` (+ :func:`stanford_drives`): RRPRRR, standard DH,
  Corke's ``mdl_stanford``;
- :func:`panda`: Franka Emika Panda, seven joints, modified DH, inertial
  parameters of Gaz et al. (2019).

Examples
--------
>>> import numpy as np
>>> import mechanisms
>>> arm = mechanisms.planar_two_link(l1=1.0, l2=0.8, m1=2.0, m2=1.5)
>>> [round(float(t), 9) for t in arm.gravity_load([0.4, 1.1])]   # seed 001, case B5
[23.005380047, 0.416359169]
"""
from .industrial import (PANDA_POSES, PUMA560_POSES, DriveTrain, panda, puma560,
                         puma560_drives, stanford_arm, stanford_drives)
from .closed import (bricard, five_bar, four_bar, redundant_planar_arm, slider_crank,
                     stewart_platform, two_arm_object)
from .designs import five_bar_designs, five_bar_task, stewart_designs
from .planar import craig_three_link, fu_two_link, planar_three_link, planar_two_link
from .spatial import horn_three_dof

__all__ = [
    "planar_two_link", "planar_three_link", "craig_three_link", "fu_two_link",
    "horn_three_dof",
    "puma560", "puma560_drives", "stanford_arm", "stanford_drives", "panda",
    "DriveTrain", "PUMA560_POSES", "PANDA_POSES",
    "five_bar", "four_bar", "slider_crank", "bricard", "stewart_platform",
    "redundant_planar_arm", "two_arm_object", "five_bar_designs", "five_bar_task",
    "stewart_designs",
]
