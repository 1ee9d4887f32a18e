"""A two-second tour of kic: ``python -m kic.demo`` (or ``make demo``).

Prints, for the PUMA 560 of :mod:`mechanisms`, Freeman's dynamic model at one
configuration -- the effective inertia I*, the velocity term q'^T P* q' and
the gravity load -- and the joint torques along a short smooth trajectory;
then one line for the planar two-link arm.
"""
from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["main", "table"]


def table(headers, rows, fmt="{:.4f}", first_fmt=None) -> str:
    """Plain-text table with right-aligned columns.

    Examples
    --------
    >>> print(table(["x", "y [m]"], [[1, 2.5], [10, -3.25]], fmt="{:.2f}"))
         x  y [m]
    ------  -----
      1.00   2.50
     10.00  -3.25
    """
    def cell(k, v):
        if isinstance(v, str):
            return v
        text = (first_fmt if (k == 0 and first_fmt) else fmt).format(v)
        return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # -0.000

    cells = [[cell(k, v) for k, v in enumerate(row)] for row in rows]
    widths = [max(len(h), *(len(r[k]) for r in cells)) for k, h in enumerate(headers)]
    widths[0] = max(widths[0], 6)
    widths[1:] = [max(widths[1:], default=0)] * (len(widths) - 1)   # uniform data columns
    line = lambda items: "  ".join(s.rjust(w) for s, w in zip(items, widths))  # noqa: E731
    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def _vec(x, fmt="{:+.3f}") -> str:
    return "(" + ", ".join(fmt.format(v) for v in np.ravel(x)) + ")"


def quintic(q0, q1, T, t):
    """Rest-to-rest quintic blend from q0 to q1 in time T: (q, q', q'') at times t."""
    s = np.clip(np.asarray(t, float) / T, 0.0, 1.0)[..., None]
    d = np.asarray(q1, float) - np.asarray(q0, float)
    pos = 10 * s**3 - 15 * s**4 + 6 * s**5
    vel = (30 * s**2 - 60 * s**3 + 30 * s**4) / T
    acc = (60 * s - 180 * s**2 + 120 * s**3) / T**2
    return q0 + d * pos, d * vel, d * acc


def main(argv=None) -> int:
    import kic
    import mechanisms

    start = time.perf_counter()
    arm = mechanisms.puma560()
    M = arm.dof
    names = [f"q{k + 1}" for k in range(M)]
    unit = ["N m" if j.kind == "R" else "N" for j in arm.joints]

    q = np.array([0.0, -np.pi / 4, np.pi / 4, 0.3, 0.5, -0.2])
    qd = np.array([0.6, -0.4, 0.8, 1.0, -0.5, 0.3])
    dyn = arm.dynamics(q)
    I, g = dyn.I_star, dyn.gravity_load
    vt = dyn.velocity_term(qd)

    title = f"kic {kic.__version__} demo: Freeman's kinematic influence coefficients"
    print(title)
    print("=" * len(title))
    print(f"\n{arm.name or 'PUMA 560'}: {M} joints ({''.join(j.kind for j in arm.joints)}), "
          f"{arm.total_mass:.2f} kg, gravity {_vec(arm.gravity, '{:g}')} m/s^2")
    print(f"configuration q  = {_vec(q)} rad")
    print(f"joint rates   q' = {_vec(qd)} rad/s")

    print("\nEffective inertia I* (kg m^2), symmetric positive definite:")
    print(table(["I*"] + names, [[n] + list(r) for n, r in zip(names, I)]))
    ev = np.linalg.eigvalsh(I)
    print(f"eigenvalues {ev.min():.3g} .. {ev.max():.3g} kg m^2, "
          f"kinetic energy q'^T I* q' / 2 = {dyn.kinetic_energy(qd):.4f} J")

    print(f"\nInertia power P* ({M} x {M} x {M}, load index first) and the model's "
          "loads at q, q' (N m):")
    rows = [[names[n], vt[n], g[n], vt[n] + g[n]] for n in range(M)]
    print(table(["joint", "q'^T P* q' [N m]", "gravity T_L [N m]", "T at q''=0 [N m]"], rows))
    h = 1e-6          # central-difference step (s): truncation and round-off ~1e-10 here
    dI_dt = (arm.dynamics(q + h * qd).I_star - arm.dynamics(q - h * qd).I_star) / (2 * h)
    print(f"power of the velocity term q' . (q'^T P* q') = {float(qd @ vt):+.6f} W; "
          f"q'^T (dI*/dt) q' / 2 = {float(qd @ dI_dt @ qd) / 2:+.6f} W (finite difference)")

    # torques along a rest-to-rest quintic, checked against the model form
    q1 = q + np.array([0.8, 0.4, -0.6, 1.0, -0.7, 0.9])
    Tf = 1.5
    t = np.linspace(0.0, Tf, 11)
    qt, qdt, qddt = quintic(q, q1, Tf, t)
    tau = arm.inverse_dynamics(qt, qdt, qddt)              # batched: all 11 at once
    model = arm.dynamics(qt).torque(qdt, qddt)              # I* q'' + q'^T P* q' + T_L
    print(f"\nJoint torques along a quintic from q to q + {_vec(q1 - q, '{:+.1f}')} rad "
          f"in {Tf} s:")
    head = ["t [s]"] + [f"tau{k + 1} [{u}]" for k, u in enumerate(unit)]
    print(table(head, [[tk, *row] for tk, row in zip(t, tau)], fmt="{:.3f}",
                first_fmt="{:.2f}"))
    print(f"recursive inverse dynamics vs I* q'' + q'^T P* q' + T_L: "
          f"max difference {np.abs(tau - model).max():.1e} N m")

    # the planar two-link arm (seed 001)
    two = mechanisms.planar_two_link()
    q2, qd2, qdd2 = np.array([0.4, 1.1]), np.array([0.7, -0.5]), np.array([0.1, 0.2])
    tau2 = two.inverse_dynamics(q2, qd2, qdd2)
    print(f"\nPlanar two-link arm (seed 001) at q = {_vec(q2, '{:.1f}')} rad, "
          f"q' = {_vec(qd2, '{:.1f}')} rad/s, q'' = {_vec(qdd2, '{:.1f}')} rad/s^2: "
          f"tau = {_vec(tau2, '{:.4f}')} N m")

    # closed mechanisms: the five-bar in its crank angles, the Stewart platform
    fb = mechanisms.five_bar()
    qf = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])
    dynf = fb.dynamics(qf)
    print(f"\nFive-bar linkage in its crank angles q = {_vec(qf, '{:.3f}')} rad "
          f"(closure solved for the 3 passive joints):")
    print(table(["I*", "crank1", "crank2"], [[n] + list(r) for n, r in
                                             zip(["crank1", "crank2"], dynf.I_star)]))
    print(f"holding torques (gravity) {_vec(dynf.gravity_load, '{:.4f}')} N m; "
          f"condition of the closure {float(fb.condition(qf)):.2f}")
    sp = mechanisms.stewart_platform()
    xp = np.array([0.02, -0.01, 0.62, 0.05, -0.03, 0.08])
    xdd = np.array([0.5, 0.0, 1.0, 0.0, 0.0, 0.5])
    legs = sp.actuator_loads(xp, np.zeros(6), xdd, sp.actuators)
    print(f"\nStewart platform at pose {_vec(xp, '{:.2f}')} (m, rad), accelerating at "
          f"{_vec(xdd, '{:.1f}')}: leg forces {_vec(legs, '{:.2f}')} N")

    # linearized plant with DC motors along a short move of the two-link arm
    motor = kic.DCMotor(1.0, 1e-3, 0.1, 0.1, rotor_inertia=1e-4, rotor_damping=1e-5)
    plant = kic.ActuatedSystem(two, [motor, motor], gear_ratios=[50, 50])
    traj = kic.Trajectory.quintic(q2, q2 + [0.5, -0.5], duration=1.0, samples=11)
    ss = plant.state_space(traj)
    var = ss.variation()
    print(f"\nTwo-link arm with two geared DC motors: state space {ss.A.shape[1]} states, "
          f"{ss.B.shape[2]} inputs at {len(ss)} points; nominal voltages "
          f"{ss.nominal.voltage.min():.2f} .. {ss.nominal.voltage.max():.2f} V; "
          f"the mechanical rows of A(t) change by {var['relative_change_mechanical']:.0%} "
          f"along the move (rate {var['rate_mechanical']:.2g} 1/s)")
    hint = "" if kic.get_backend() == "numba" else " (pip install -e '.[fast]' compiles them)"
    print(f"\n(done in {time.perf_counter() - start:.2f} s with the {kic.get_backend()} "
          f"serial-chain kernels{hint}; see docs/tutorial.md for more)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
