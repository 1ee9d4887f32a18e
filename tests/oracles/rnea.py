"""Independent reference implementation (test oracle) for serial chains.

Written from scratch for the test-suite, in plain numpy with per-configuration
Python loops (clarity over speed).  It reads only the *description* of a
``kic.SerialChain`` (``joints[k].kind/.axis/.origin``, ``links[k].mass/.com/
.inertia``, ``frame_offsets``, ``base``, ``tool``, ``gravity``, ``joint_names``,
``link_names``) and never calls kic's numeric code.

Formulation: Luh-Walker-Paul recursive Newton-Euler in *link-frame* components
with rotation matrices (kic itself works with world-frame influence
coefficients):

* kinematic frame ``K_j = K_{j-1} @ origin_j @ motion_j(q_j)``, ``K_{-1} = base``,
  ``motion`` = Rodrigues rotation about ``axis`` by ``q`` (R) or translation
  ``q * axis`` (P);
* the link's mass properties and points are given in ``F_j = K_j @ frame_offsets[j]``;
* forward recursion of (omega, omega_dot, v, v_dot) in frame j, gravity as a
  fictitious base acceleration ``-g``;
* backward recursion of the force/moment each link receives from its parent,
  about the origin of its kinematic frame (which lies on a revolute axis);
* joint load = axis . moment (R) or axis . force (P), plus springs and dampers.

Sign conventions follow the kic spec: the result is the load the actuators
must supply, ``T = I* q'' + q'^T P* q' + T_L`` with ``T_L = -sum G^T (applied
force or moment) + k (q - rest) + c q'`` and the gravity load ``+dV/dq``.

All functions take a single configuration (1-D arrays of length M).
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "OracleLoads", "rodrigues", "skew", "joint_motion", "kinematic_frames",
    "oracle_frames", "oracle_tool_frame", "point_position", "rnea",
    "oracle_mass_matrix", "oracle_gravity", "oracle_bias", "oracle_forward_dynamics",
    "oracle_point_jacobian", "oracle_rotation_jacobian", "oracle_link_motion",
    "oracle_point_motion", "oracle_kinetic_energy", "oracle_potential_energy",
    "oracle_spring_energy", "oracle_load",
]


# --------------------------------------------------------------------- basics
def skew(v):
    """Cross-product matrix: ``skew(a) @ b == a x b``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rodrigues(axis, angle):
    """Rotation matrix about the unit ``axis`` by ``angle`` (Rodrigues' formula)."""
    k = np.asarray(axis, float)
    k = k / np.linalg.norm(k)
    K = skew(k)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def _hom(R=None, p=None):
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def joint_motion(joint, qj):
    """4x4 motion of a joint at coordinate ``qj`` (in the joint frame)."""
    if joint.kind == "R":
        return _hom(R=rodrigues(joint.axis, qj))
    if joint.kind == "P":
        return _hom(p=qj * np.asarray(joint.axis, float))
    raise ValueError(f"unknown joint kind {joint.kind!r}")


def _q(chain, q):
    q = np.asarray(q, float)
    if q.shape != (len(chain.joints),):
        raise ValueError(f"oracle takes one configuration of shape ({len(chain.joints)},), "
                         f"got {q.shape}")
    return q


def kinematic_frames(chain, q):
    """World kinematic frames ``K_j`` (M, 4, 4) (before ``frame_offsets``)."""
    q = _q(chain, q)
    T = np.array(chain.base, float)
    out = []
    for joint, qj in zip(chain.joints, q):
        T = T @ np.asarray(joint.origin, float) @ joint_motion(joint, qj)
        out.append(T)
    return np.array(out)


def oracle_frames(chain, q):
    """World frames the links are described in, ``F_j = K_j @ frame_offsets[j]``."""
    K = kinematic_frames(chain, q)
    off = np.asarray(chain.frame_offsets, float)
    return np.array([K[j] @ off[j] for j in range(len(K))])


def oracle_tool_frame(chain, q):
    """World tool frame: last *described* link frame times ``chain.tool``.

    ``chain.tool`` is given in the frame the last link's data are given in
    (``K_{M-1} @ frame_offsets[-1]``; for ``from_dh``, the last DH frame).
    """
    return oracle_frames(chain, q)[-1] @ np.asarray(chain.tool, float)


def point_position(chain, q, link, p):
    """World position of point ``p`` given in link ``link``'s described frame."""
    F = oracle_frames(chain, q)[link]
    return F[:3, :3] @ np.asarray(p, float) + F[:3, 3]


def _mass_props_in_K(chain, j):
    """Mass, centroid and centroidal inertia of link j in its kinematic frame K_j."""
    off = np.asarray(chain.frame_offsets[j], float)
    Ro, po = off[:3, :3], off[:3, 3]
    link = chain.links[j]
    c = Ro @ np.asarray(link.com, float) + po
    I = Ro @ np.asarray(link.inertia, float) @ Ro.T
    return float(link.mass), c, I


def _local(chain, j, qj):
    """Rotation and position of K_j relative to K_{j-1} (expressed in K_{j-1})."""
    joint = chain.joints[j]
    O = np.asarray(joint.origin, float)
    A = O @ joint_motion(joint, qj)
    return A[:3, :3], A[:3, 3]


# ------------------------------------------------------------------ loads
class OracleLoads:
    """Applied loads in the oracle's own representation (mirrors ``kic.Loads``).

    Builder methods return ``self``.  Link and joint keys may be indices or
    names; they are resolved against the chain's name tuples.
    """

    def __init__(self):
        self.forces = []     # (link, force_world, point_in_link)
        self.moments = []    # (link, moment_world)
        self.springs = []    # (joint, k, rest)
        self.dampers = []    # (joint, c)

    def force(self, link, force, point=(0.0, 0.0, 0.0)):
        self.forces.append((link, np.asarray(force, float), np.asarray(point, float)))
        return self

    def moment(self, link, moment):
        self.moments.append((link, np.asarray(moment, float)))
        return self

    def spring(self, joint, stiffness, rest=0.0):
        self.springs.append((joint, float(stiffness), float(rest)))
        return self

    def damper(self, joint, coefficient):
        self.dampers.append((joint, float(coefficient)))
        return self

    def replay(self, target):
        """Apply the same builder calls to another object (e.g. ``kic.Loads()``)."""
        for link, f, p in self.forces:
            target = target.force(link, f, point=p)
        for link, mu in self.moments:
            target = target.moment(link, mu)
        for joint, k, rest in self.springs:
            target = target.spring(joint, k, rest=rest)
        for joint, c in self.dampers:
            target = target.damper(joint, c)
        return target


def _resolve(key, names):
    if isinstance(key, str):
        return list(names).index(key)
    k = int(key)
    return k % len(names)


# -------------------------------------------------------------------- RNEA
def _forward(chain, q, qd, qdd, base_acc):
    """Link-frame recursion.  Returns per-link dicts in K_j components."""
    M = len(chain.joints)
    Rw = np.array(chain.base, float)[:3, :3]     # world rotation of the previous frame
    w = np.zeros(3)
    wd = np.zeros(3)
    v = np.zeros(3)
    vd = Rw.T @ base_acc                         # base origin acceleration in base axes
    out = []
    for j in range(M):
        joint = chain.joints[j]
        a = np.asarray(joint.axis, float)
        Rrel, r = _local(chain, j, q[j])         # r: origin of K_j in K_{j-1}
        Rt = Rrel.T
        # origin of K_j moves with frame j-1 (plus the slide for P)
        v_o = Rt @ (v + np.cross(w, r))
        vd_o = Rt @ (vd + np.cross(wd, r) + np.cross(w, np.cross(w, r)))
        w_p = Rt @ w                             # parent's angular velocity, K_j axes
        wd_p = Rt @ wd
        if joint.kind == "R":
            w_n = w_p + a * qd[j]
            wd_n = wd_p + np.cross(w_p, a * qd[j]) + a * qdd[j]
        else:
            w_n, wd_n = w_p, wd_p
            v_o = v_o + a * qd[j]
            vd_o = vd_o + a * qdd[j] + 2.0 * np.cross(w_n, a * qd[j])
        Rw = Rw @ Rrel
        out.append(dict(R=Rw.copy(), Rrel=Rrel, r=r, w=w_n, wd=wd_n, v=v_o, vd=vd_o))
        w, wd, v, vd = w_n, wd_n, v_o, vd_o
    return out


def rnea(chain, q, qd, qdd, loads=None, gravity=None):
    """Required joint loads (M,) for one configuration.

    ``gravity`` overrides ``chain.gravity`` (use zeros to switch it off).
    ``loads`` is an :class:`OracleLoads` (springs and dampers included).
    """
    q = _q(chain, q)
    qd = np.asarray(qd, float)
    qdd = np.asarray(qdd, float)
    g = np.asarray(chain.gravity if gravity is None else gravity, float)
    M = len(chain.joints)
    st = _forward(chain, q, qd, qdd, -g)
    # external loads per link in K_j components: force, moment about K_j origin
    f_ext = [np.zeros(3) for _ in range(M)]
    n_ext = [np.zeros(3) for _ in range(M)]
    if loads is not None:
        for key, f, p in loads.forces:
            j = _resolve(key, chain.link_names)
            off = np.asarray(chain.frame_offsets[j], float)
            pK = off[:3, :3] @ p + off[:3, 3]
            fK = st[j]["R"].T @ f
            f_ext[j] = f_ext[j] + fK
            n_ext[j] = n_ext[j] + np.cross(pK, fK)
        for key, mu in loads.moments:
            j = _resolve(key, chain.link_names)
            n_ext[j] = n_ext[j] + st[j]["R"].T @ mu
    tau = np.zeros(M)
    f_child = np.zeros(3)      # force exerted by link j on link j+1, in K_{j+1} axes
    n_child = np.zeros(3)
    R_child = np.eye(3)        # K_{j+1} relative to K_j
    r_child = np.zeros(3)      # origin of K_{j+1} in K_j
    for j in range(M - 1, -1, -1):
        m, c, I = _mass_props_in_K(chain, j)
        s = st[j]
        w, wd, vd = s["w"], s["wd"], s["vd"]
        a_c = vd + np.cross(wd, c) + np.cross(w, np.cross(w, c))
        F = m * a_c
        N = I @ wd + np.cross(w, I @ w)
        fc = R_child @ f_child
        f = fc + F - f_ext[j]
        n = R_child @ n_child + np.cross(r_child, fc) + np.cross(c, F) + N - n_ext[j]
        a = np.asarray(chain.joints[j].axis, float)
        tau[j] = a @ n if chain.joints[j].kind == "R" else a @ f
        f_child, n_child = f, n
        R_child, r_child = s["Rrel"], s["r"]
    if loads is not None:
        for key, k, rest in loads.springs:
            i = _resolve(key, chain.joint_names)
            tau[i] += k * (q[i] - rest)
        for key, cdamp in loads.dampers:
            i = _resolve(key, chain.joint_names)
            tau[i] += cdamp * qd[i]
    return tau


def oracle_mass_matrix(chain, q):
    """I* by RNEA with unit accelerations, zero velocity and zero gravity."""
    q = _q(chain, q)
    M = len(q)
    Z = np.zeros(M)
    cols = [rnea(chain, q, Z, np.eye(M)[k], gravity=np.zeros(3)) for k in range(M)]
    return np.array(cols).T


def oracle_gravity(chain, q):
    """Gravity load +dV/dq: RNEA at rest."""
    q = _q(chain, q)
    Z = np.zeros(len(q))
    return rnea(chain, q, Z, Z)


def oracle_bias(chain, q, qd):
    """Velocity term q'^T P* q': RNEA with zero acceleration and gravity."""
    q = _q(chain, q)
    return rnea(chain, q, qd, np.zeros(len(q)), gravity=np.zeros(3))


def oracle_load(chain, q, loads, qd=None):
    """T_L of applied loads only (no gravity, no inertia)."""
    q = _q(chain, q)
    Z = np.zeros(len(q))
    qd = Z if qd is None else np.asarray(qd, float)
    # inertial part at zero acceleration is the bias; subtract it
    return (rnea(chain, q, qd, Z, loads=loads, gravity=np.zeros(3))
            - rnea(chain, q, qd, Z, gravity=np.zeros(3)))


def oracle_forward_dynamics(chain, q, qd, tau, loads=None):
    """q'' = I*^-1 (tau - RNEA(q, q', 0)) (RNEA includes gravity and loads)."""
    q = _q(chain, q)
    h = rnea(chain, q, qd, np.zeros(len(q)), loads=loads)
    return np.linalg.solve(oracle_mass_matrix(chain, q), np.asarray(tau, float) - h)


# --------------------------------------------------------- kinematics (FD)
def oracle_point_jacobian(chain, q, link, p, step=1e-6):
    """d(world position of p on link)/dq (3, M) by central finite differences."""
    q = _q(chain, q)
    M = len(q)
    J = np.zeros((3, M))
    for n in range(M):
        e = np.zeros(M)
        e[n] = step
        J[:, n] = (point_position(chain, q + e, link, p)
                   - point_position(chain, q - e, link, p)) / (2 * step)
    return J


def oracle_rotation_jacobian(chain, q, link, step=1e-6):
    """Angular-velocity influence (3, M): vee(dR/dq_n R^T) by central differences."""
    q = _q(chain, q)
    M = len(q)
    R0 = oracle_frames(chain, q)[link][:3, :3]
    J = np.zeros((3, M))
    for n in range(M):
        e = np.zeros(M)
        e[n] = step
        dR = (oracle_frames(chain, q + e)[link][:3, :3]
              - oracle_frames(chain, q - e)[link][:3, :3]) / (2 * step)
        W = dR @ R0.T
        W = 0.5 * (W - W.T)
        J[:, n] = (W[2, 1], W[0, 2], W[1, 0])
    return J


def oracle_link_motion(chain, q, qd, qdd):
    """World angular velocity/acceleration of every link, (M, 3) each (no gravity)."""
    q = _q(chain, q)
    st = _forward(chain, q, np.asarray(qd, float), np.asarray(qdd, float), np.zeros(3))
    w = np.array([s["R"] @ s["w"] for s in st])
    wd = np.array([s["R"] @ s["wd"] for s in st])
    return w, wd


def oracle_point_motion(chain, q, qd, qdd, link, p):
    """World position, velocity and acceleration of point p on link (each (3,))."""
    q = _q(chain, q)
    st = _forward(chain, q, np.asarray(qd, float), np.asarray(qdd, float), np.zeros(3))
    s = st[link]
    off = np.asarray(chain.frame_offsets[link], float)
    pK = off[:3, :3] @ np.asarray(p, float) + off[:3, 3]
    v = s["v"] + np.cross(s["w"], pK)
    acc = s["vd"] + np.cross(s["wd"], pK) + np.cross(s["w"], np.cross(s["w"], pK))
    return point_position(chain, q, link, p), s["R"] @ v, s["R"] @ acc


# ------------------------------------------------------------------ energy
def oracle_kinetic_energy(chain, q, qd):
    """sum_j (m |v_c|^2 + w . I w) / 2 from the link-frame recursion."""
    q = _q(chain, q)
    M = len(q)
    st = _forward(chain, q, np.asarray(qd, float), np.zeros(M), np.zeros(3))
    T = 0.0
    for j, s in enumerate(st):
        m, c, I = _mass_props_in_K(chain, j)
        vc = s["v"] + np.cross(s["w"], c)
        T += 0.5 * m * vc @ vc + 0.5 * s["w"] @ I @ s["w"]
    return T


def oracle_potential_energy(chain, q):
    """Gravitational potential -sum m_j g . c_j (world centroids)."""
    q = _q(chain, q)
    g = np.asarray(chain.gravity, float)
    K = kinematic_frames(chain, q)
    V = 0.0
    for j in range(len(q)):
        m, c, _ = _mass_props_in_K(chain, j)
        cw = K[j][:3, :3] @ c + K[j][:3, 3]
        V -= m * g @ cw
    return V


def oracle_spring_energy(chain, q, loads):
    """sum k (q - rest)^2 / 2 over the springs of ``loads``."""
    q = np.asarray(q, float)
    E = 0.0
    for key, k, rest in loads.springs:
        i = _resolve(key, chain.joint_names)
        E += 0.5 * k * (q[..., i] - rest) ** 2
    return E
