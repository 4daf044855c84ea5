// What an integrator's initial guess missed by, step after step, for the guess "feedback" of riqn,
// vi-galerkin and vi-maximal. A guess extrapolated from the last steps misses the converged solution by its
// truncation term, which changes smoothly along a motion the step resolves; the misses of the last
// kGuessMisses guesses (newest first: miss[0] = e_k, miss[1] = e_{k−1}, …), extrapolated by a
// polynomial through the newest of them, are added to the next guess.
//
// The degree (1: 2e_k − e_{k−1}, 2: 3e_k − 3e_{k−1} + e_{k−2}, 3: 4e_k − 6e_{k−1} + 4e_{k−2} −
// e_{k−3}) is judged after each step by best_miss_degree(): the one whose extrapolation from the
// older misses came closest to the newest. The higher degrees predict a smooth miss better (riqn's
// double pendulum: the cubic's first residual 2.7e-7 against the line's 3.8e-6) but amplify the
// round-off in the misses (×8 for the cubic), so where the guess is already at the tolerance the
// line wins. Header-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace noether {

constexpr int kGuessMisses = 5;
// Row `degree`: the weights of e_k, e_{k−1}, … (row 0, the constant, is only a row of the table).
constexpr double kGuessMissWeights[kGuessMisses - 1][kGuessMisses - 1] = {
    {1, 0, 0, 0}, {2, -1, 0, 0}, {3, -3, 1, 0}, {4, -6, 4, -1}};

// Component k of the extrapolation of degree `degree` through miss[first], miss[first + 1], …:
// from first = 0 the next miss; from first = 1 the newest, as the step before would have had it.
inline double extrapolated_miss(const std::vector<double>* miss, int degree, int first, std::size_t k) {
    double p = 0;
    for (int j = 0; j <= degree; ++j) p += kGuessMissWeights[degree][j] * miss[first + j][k];
    return p;
}

// The oldest miss's storage becomes miss[0], for the newest to be written into.
inline void shift_misses(std::vector<double>* miss) {
    for (int k = kGuessMisses - 1; k > 0; --k) miss[k].swap(miss[k - 1]);
}

// How many misses in a row are known once a new one is recorded: one more (at most kGuessMisses)
// if it continues the run (`same`: guesses of the same kind and step length), else 1.
inline int misses_after_record(int count, bool same) { return same && count > 0 ? std::min(count + 1, kGuessMisses) : 1; }

// Do the last two misses agree over components [k0, k1): ‖e_k − e_{k−1}‖ ≤ fraction ‖e_k‖? Where
// a step does not resolve the motion (a whip) they jump from step to step and are not added.
inline bool misses_agree(const std::vector<double>* miss, std::size_t k0, std::size_t k1, double fraction) {
    double e2 = 0, d2 = 0;
    for (std::size_t k = k0; k < k1; ++k) {
        const double e = miss[0][k], dm = e - miss[1][k];
        e2 += e * e, d2 += dm * dm;
    }
    return d2 <= fraction * fraction * e2;
}

// A saved count and degree an integrator's restore() may take.
inline bool misses_restorable(int count, int degree) {
    return count >= 0 && count <= kGuessMisses && degree >= 1 && degree <= kGuessMisses - 2;
}

// The degree (1–3) whose extrapolation from miss[1…] came closest to miss[0] over components
// [k0, k1) (the first, the line, on a tie); 1 while fewer than kGuessMisses misses are known.
inline int best_miss_degree(const std::vector<double>* miss, int count, std::size_t k0, std::size_t k1) {
    if (count < kGuessMisses) return 1;
    int degree = 1;
    double best = INFINITY;
    for (int deg = 1; deg < kGuessMisses - 1; ++deg) {
        double err = 0;
        for (std::size_t k = k0; k < k1; ++k) {
            const double e = miss[0][k] - extrapolated_miss(miss, deg, 1, k);
            err += e * e;
        }
        if (err < best) best = err, degree = deg;
    }
    return degree;
}

}  // namespace noether
