// noether/math.hpp — the small fixed-size math of the public API.
//
// Vectors, 3×3 matrices and unit quaternions, header-only and without Eigen, so that
// plugins and embedding hosts compile quickly against the public headers.
// Conventions (maximal-vi.md §1): quaternions are [w, x, y, z], Hamilton product, and map
// body-frame vectors to the world frame. Small rotations act on the right, in the body frame:
// q ⊕ δθ = normalize(q ⊗ [1; δθ/2]).
#pragma once

#include "noether/export.h"

#include <cmath>

namespace noether {

struct NOETHER_API Vec3 {
    double x = 0, y = 0, z = 0;
    constexpr Vec3() = default;
    constexpr Vec3(double x_, double y_, double z_) : x(x_), y(y_), z(z_) {}
    double& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
    double operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
};

inline Vec3 operator+(const Vec3& a, const Vec3& b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline Vec3 operator-(const Vec3& a, const Vec3& b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline Vec3 operator-(const Vec3& a) { return {-a.x, -a.y, -a.z}; }
inline Vec3 operator*(double s, const Vec3& a) { return {s * a.x, s * a.y, s * a.z}; }
inline Vec3 operator*(const Vec3& a, double s) { return {s * a.x, s * a.y, s * a.z}; }
inline Vec3 operator/(const Vec3& a, double s) { return {a.x / s, a.y / s, a.z / s}; }
inline Vec3& operator+=(Vec3& a, const Vec3& b) { a.x += b.x; a.y += b.y; a.z += b.z; return a; }
inline Vec3& operator-=(Vec3& a, const Vec3& b) { a.x -= b.x; a.y -= b.y; a.z -= b.z; return a; }
inline double dot(const Vec3& a, const Vec3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline Vec3 cross(const Vec3& a, const Vec3& b) {
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline double norm(const Vec3& a) { return std::sqrt(dot(a, a)); }
inline Vec3 normalized(const Vec3& a) { return a / norm(a); }
inline bool isfinite(const Vec3& a) { return std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z); }

// Row-major 3×3 matrix.
struct NOETHER_API Mat3 {
    double m[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    static Mat3 identity() { Mat3 r; r.m[0][0] = r.m[1][1] = r.m[2][2] = 1; return r; }
    static Mat3 diag(double a, double b, double c) { Mat3 r; r.m[0][0] = a; r.m[1][1] = b; r.m[2][2] = c; return r; }
    double& operator()(int i, int j) { return m[i][j]; }
    double operator()(int i, int j) const { return m[i][j]; }
    Vec3 row(int i) const { return {m[i][0], m[i][1], m[i][2]}; }
    Vec3 col(int j) const { return {m[0][j], m[1][j], m[2][j]}; }
};

inline Mat3 operator*(const Mat3& a, const Mat3& b) {
    Mat3 r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            r.m[i][j] = a.m[i][0] * b.m[0][j] + a.m[i][1] * b.m[1][j] + a.m[i][2] * b.m[2][j];
    return r;
}
inline Vec3 operator*(const Mat3& a, const Vec3& v) {
    return {a.m[0][0] * v.x + a.m[0][1] * v.y + a.m[0][2] * v.z,
            a.m[1][0] * v.x + a.m[1][1] * v.y + a.m[1][2] * v.z,
            a.m[2][0] * v.x + a.m[2][1] * v.y + a.m[2][2] * v.z};
}
inline Mat3 operator+(const Mat3& a, const Mat3& b) {
    Mat3 r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.m[i][j] = a.m[i][j] + b.m[i][j];
    return r;
}
inline Mat3 operator-(const Mat3& a, const Mat3& b) {
    Mat3 r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.m[i][j] = a.m[i][j] - b.m[i][j];
    return r;
}
inline Mat3 operator*(double s, const Mat3& a) {
    Mat3 r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.m[i][j] = s * a.m[i][j];
    return r;
}
inline Mat3 transpose(const Mat3& a) {
    Mat3 r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.m[i][j] = a.m[j][i];
    return r;
}
// [a]× : skew(a) * b == cross(a, b)
inline Mat3 skew(const Vec3& a) {
    Mat3 r;
    r.m[0][1] = -a.z; r.m[0][2] = a.y;
    r.m[1][0] = a.z;  r.m[1][2] = -a.x;
    r.m[2][0] = -a.y; r.m[2][1] = a.x;
    return r;
}
inline Mat3 outer(const Vec3& a, const Vec3& b) {
    Mat3 r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.m[i][j] = a[i] * b[j];
    return r;
}
inline double det(const Mat3& a) {
    return a.m[0][0] * (a.m[1][1] * a.m[2][2] - a.m[1][2] * a.m[2][1]) -
           a.m[0][1] * (a.m[1][0] * a.m[2][2] - a.m[1][2] * a.m[2][0]) +
           a.m[0][2] * (a.m[1][0] * a.m[2][1] - a.m[1][1] * a.m[2][0]);
}
// Inverse of a (caller guarantees det != 0).
inline Mat3 inverse(const Mat3& a) {
    Mat3 r;
    const double d = det(a);
    r.m[0][0] = (a.m[1][1] * a.m[2][2] - a.m[1][2] * a.m[2][1]) / d;
    r.m[0][1] = (a.m[0][2] * a.m[2][1] - a.m[0][1] * a.m[2][2]) / d;
    r.m[0][2] = (a.m[0][1] * a.m[1][2] - a.m[0][2] * a.m[1][1]) / d;
    r.m[1][0] = (a.m[1][2] * a.m[2][0] - a.m[1][0] * a.m[2][2]) / d;
    r.m[1][1] = (a.m[0][0] * a.m[2][2] - a.m[0][2] * a.m[2][0]) / d;
    r.m[1][2] = (a.m[0][2] * a.m[1][0] - a.m[0][0] * a.m[1][2]) / d;
    r.m[2][0] = (a.m[1][0] * a.m[2][1] - a.m[1][1] * a.m[2][0]) / d;
    r.m[2][1] = (a.m[0][1] * a.m[2][0] - a.m[0][0] * a.m[2][1]) / d;
    r.m[2][2] = (a.m[0][0] * a.m[1][1] - a.m[0][1] * a.m[1][0]) / d;
    return r;
}

struct NOETHER_API Quat {
    double w = 1, x = 0, y = 0, z = 0;
    constexpr Quat() = default;
    constexpr Quat(double w_, double x_, double y_, double z_) : w(w_), x(x_), y(y_), z(z_) {}
    Vec3 vec() const { return {x, y, z}; }
    static Quat identity() { return {}; }
};

inline Quat operator*(const Quat& a, const Quat& b) {  // Hamilton product a ⊗ b
    return {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
            a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
            a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
}
inline Quat conj(const Quat& q) { return {q.w, -q.x, -q.y, -q.z}; }
inline double qnorm(const Quat& q) { return std::sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z); }
inline Quat qnormalized(const Quat& q) {
    const double n = qnorm(q);
    return {q.w / n, q.x / n, q.y / n, q.z / n};
}
inline bool isfinite(const Quat& q) {
    return std::isfinite(q.w) && std::isfinite(q.x) && std::isfinite(q.y) && std::isfinite(q.z);
}
// Rot(q): the body→world rotation matrix of a unit quaternion.
inline Mat3 rotation(const Quat& q) {
    Mat3 r;
    const double ww = q.w * q.w, xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
    r.m[0][0] = ww + xx - yy - zz;
    r.m[1][1] = ww - xx + yy - zz;
    r.m[2][2] = ww - xx - yy + zz;
    r.m[0][1] = 2 * (q.x * q.y - q.w * q.z);
    r.m[1][0] = 2 * (q.x * q.y + q.w * q.z);
    r.m[0][2] = 2 * (q.x * q.z + q.w * q.y);
    r.m[2][0] = 2 * (q.x * q.z - q.w * q.y);
    r.m[1][2] = 2 * (q.y * q.z - q.w * q.x);
    r.m[2][1] = 2 * (q.y * q.z + q.w * q.x);
    return r;
}
inline Vec3 rotate(const Quat& q, const Vec3& v) { return rotation(q) * v; }
inline Vec3 rotate_inv(const Quat& q, const Vec3& v) { return transpose(rotation(q)) * v; }
// Rotation of angle |rv| about rv/|rv| (exact exponential map).
inline Quat quat_from_rotvec(const Vec3& rv) {
    const double a = norm(rv);
    if (a < 1e-12) return qnormalized(Quat{1, 0.5 * rv.x, 0.5 * rv.y, 0.5 * rv.z});
    const double s = std::sin(0.5 * a) / a;
    return {std::cos(0.5 * a), s * rv.x, s * rv.y, s * rv.z};
}
inline Quat quat_from_axis_angle(const Vec3& axis, double angle) {
    return quat_from_rotvec(normalized(axis) * angle);
}
// Rotation vector of a unit quaternion (angle in [0, π], sign chosen with w >= 0).
inline Vec3 rotvec_from_quat(Quat q) {
    if (q.w < 0) q = {-q.w, -q.x, -q.y, -q.z};
    const Vec3 v = q.vec();
    const double s = norm(v);
    if (s < 1e-12) return 2.0 * v;
    const double angle = 2 * std::atan2(s, q.w);
    return v * (angle / s);
}
// Roll-pitch-yaw (URDF convention: R = Rz(yaw) Ry(pitch) Rx(roll)).
inline Quat quat_from_rpy(double roll, double pitch, double yaw) {
    const Quat qx = quat_from_axis_angle({1, 0, 0}, roll);
    const Quat qy = quat_from_axis_angle({0, 1, 0}, pitch);
    const Quat qz = quat_from_axis_angle({0, 0, 1}, yaw);
    return qz * (qy * qx);
}
// Quaternion of a proper rotation matrix.
inline Quat quat_from_matrix(const Mat3& r) {
    Quat q;
    const double tr = r.m[0][0] + r.m[1][1] + r.m[2][2];
    if (tr > 0) {
        const double s = 2 * std::sqrt(tr + 1.0);
        q = {0.25 * s, (r.m[2][1] - r.m[1][2]) / s, (r.m[0][2] - r.m[2][0]) / s, (r.m[1][0] - r.m[0][1]) / s};
    } else if (r.m[0][0] > r.m[1][1] && r.m[0][0] > r.m[2][2]) {
        const double s = 2 * std::sqrt(1.0 + r.m[0][0] - r.m[1][1] - r.m[2][2]);
        q = {(r.m[2][1] - r.m[1][2]) / s, 0.25 * s, (r.m[0][1] + r.m[1][0]) / s, (r.m[0][2] + r.m[2][0]) / s};
    } else if (r.m[1][1] > r.m[2][2]) {
        const double s = 2 * std::sqrt(1.0 + r.m[1][1] - r.m[0][0] - r.m[2][2]);
        q = {(r.m[0][2] - r.m[2][0]) / s, (r.m[0][1] + r.m[1][0]) / s, 0.25 * s, (r.m[1][2] + r.m[2][1]) / s};
    } else {
        const double s = 2 * std::sqrt(1.0 + r.m[2][2] - r.m[0][0] - r.m[1][1]);
        q = {(r.m[1][0] - r.m[0][1]) / s, (r.m[0][2] + r.m[2][0]) / s, (r.m[1][2] + r.m[2][1]) / s, 0.25 * s};
    }
    return qnormalized(q);
}
// q ⊕ δθ: small rotation δθ applied in the body frame (maximal-vi.md §1.3).
inline Quat oplus(const Quat& q, const Vec3& dth) {
    return qnormalized(q * Quat{1, 0.5 * dth.x, 0.5 * dth.y, 0.5 * dth.z});
}
// Some unit vector perpendicular to the unit vector a, and the third completing a right-handed frame.
inline void orthonormal_basis(const Vec3& a, Vec3& e1, Vec3& e2) {
    const Vec3 t = std::fabs(a.x) < 0.57 ? Vec3{1, 0, 0} : (std::fabs(a.y) < 0.57 ? Vec3{0, 1, 0} : Vec3{0, 0, 1});
    e1 = normalized(cross(a, t));
    e2 = cross(a, e1);
}

// A rigid pose: world position of the centre of mass and body→world orientation.
struct NOETHER_API Pose {
    Vec3 x;
    Quat q;
};

// The pose of b in the frame of a.
inline Pose relative_pose(const Pose& a, const Pose& b) { return {rotate_inv(a.q, b.x - a.x), conj(a.q) * b.q}; }

// Velocity of a body: world-frame linear velocity of the CoM, body-frame angular velocity.
struct NOETHER_API Twist {
    Vec3 v;
    Vec3 w;
};

// A wrench applied to a body: world-frame force at the CoM and body-frame torque.
struct NOETHER_API Wrench {
    Vec3 force;
    Vec3 torque;
};

}  // namespace noether
