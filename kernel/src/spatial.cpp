// The logarithms of noether/sdk/spatial.hpp (docs/design/riqn.md §1.2).
#include "noether/sdk/spatial.hpp"

#include <cmath>

namespace noether {

Vec3 so3_log(const Mat3& R, double& theta) {
    const Vec3 s{0.5 * (R(2, 1) - R(1, 2)), 0.5 * (R(0, 2) - R(2, 0)), 0.5 * (R(1, 0) - R(0, 1))};
    const double c = 0.5 * (R(0, 0) + R(1, 1) + R(2, 2) - 1), sn = norm(s);
    theta = std::atan2(sn, c);
    if (sn < 1e-6 && c > 0) return (1 + theta * theta / 6) * s;
    if (c < -0.9) {  // near π: the axis from the symmetric part
        const Mat3 A = 0.5 * (R + transpose(R)) - c * Mat3::identity();
        int k = 0;
        if (A(1, 1) > A(k, k)) k = 1;
        if (A(2, 2) > A(k, k)) k = 2;
        Vec3 axis = normalized(A.col(k));
        if (dot(axis, s) < 0) axis = -axis;
        return theta * axis;
    }
    return (theta / sn) * s;
}

Vec3 se3_log_translation(const Vec3& phi, double th, const Vec3& p) {
    double c;
    if (th < 0.1) {
        const double t2 = th * th;
        c = 1.0 / 12 + t2 * (1.0 / 720 + t2 * (1.0 / 30240 + t2 / 1209600));
    } else {
        const double h = 0.5 * th;
        c = (1 - h * std::cos(h) / std::sin(h)) / (th * th);
    }
    const Vec3 pxp = cross(phi, p);
    return p - 0.5 * pxp + c * cross(phi, pxp);
}

double se3_log(const Frame& f, double* x) {
    double th;
    const Vec3 phi = so3_log(f.R, th);
    set6(x, phi, se3_log_translation(phi, th, f.p));
    return th;
}

}  // namespace noether
