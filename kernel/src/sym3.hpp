// Internal to the kernel: eigenvalues of a symmetric 3×3 matrix (inertia checks in compile,
// the step advice's reachable rates).
#pragma once

#include <algorithm>
#include <cmath>

#include "noether/math.hpp"

namespace noether {
namespace detail {

// Eigenvalues of a symmetric 3×3 matrix (cyclic Jacobi; ascending). With V, also the
// eigenvectors: column k of V belongs to ev[k] (A = V diag(ev) Vᵀ).
inline void sym_eigenvalues(const Mat3& A, double ev[3], Mat3* V = nullptr) {
    if (V) *V = Mat3::identity();
    double a[3][3];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) a[i][j] = 0.5 * (A.m[i][j] + A.m[j][i]);
    for (int sweep = 0; sweep < 50; ++sweep) {
        const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        if (off < 1e-30 * (a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2]) || off == 0) break;
        for (int p = 0; p < 2; ++p)
            for (int q = p + 1; q < 3; ++q) {
                if (a[p][q] == 0) continue;
                const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
                const double c = 1 / std::sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; ++k) {  // columns
                    const double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                    if (V) {
                        const double vkp = V->m[k][p], vkq = V->m[k][q];
                        V->m[k][p] = c * vkp - s * vkq;
                        V->m[k][q] = s * vkp + c * vkq;
                    }
                }
                for (int k = 0; k < 3; ++k) {  // rows
                    const double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
            }
    }
    ev[0] = a[0][0];
    ev[1] = a[1][1];
    ev[2] = a[2][2];
    if (!V) {
        std::sort(ev, ev + 3);
        return;
    }
    int order[3] = {0, 1, 2};
    std::sort(order, order + 3, [&](int i, int j) { return ev[i] < ev[j]; });
    const double e[3] = {ev[0], ev[1], ev[2]};
    const Mat3 W = *V;
    for (int k = 0; k < 3; ++k) {
        ev[k] = e[order[k]];
        for (int r = 0; r < 3; ++r) V->m[r][k] = W.m[r][order[k]];
    }
}

}  // namespace detail
}  // namespace noether
