// Secant pairs for a fixed-point iteration x ← x + f(x), f = −P⁻¹ r(x) with a preconditioner P
// that misses ∂r/∂x (riqn's articulated-body matrix M(q_k), vi-galerkin's chord factor): the last
// few pairs (δx, δf) — an update moved x by δx and f changed by δf — measure that miss along
// their directions, and the update taken is
//
//     f − Σ_j γ_j (δx_j + δf_j),   γ = argmin ‖f − Σ_j γ_j δf_j‖₂,
//
// the plain update in the directions no pair spans (Anderson's mixing, "type II"; for a linear
// r and as many pairs as unknowns, the exact solve). Header-only; used by riqn and by
// vi-maximal's chord iterations (P: the last factorisation; x: −s, f: the solve's update).
//
// Pairs kept across steps are part of an integrator's state (they shape the next step's updates;
// riqn): save() / restore() carry them with a count and a ring position checked on restore. A solve starts with
// begin() (no update yet: the next one records no pair), then per update correct(f) with the
// plain update; a corrected update that did worse is taken back by plain() (the update it
// replaced) and drop().
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "noether/sdk/integrator.hpp"

namespace noether {

class SecantPairs {
public:
    static constexpr int kMaxPairs = 4;
    // A pair whose δf lies in the span of the pairs before it to within this (the squared sine
    // of its angle with that span) is left out of the fit (resize()'s `pivot`, by default).
    static constexpr double kPivot = 1e-10;

    // n unknowns, up to `pairs` pairs (0: off, correct() leaves f as it is); `pivot`: kPivot's
    // threshold for this iteration.
    void resize(int n, int pairs, double pivot = kPivot) {
        n_ = n;
        pivot_ = pivot;
        cap_ = std::max(0, std::min(pairs, kMaxPairs));
        dx_.assign(static_cast<std::size_t>(n) * cap_, 0.0);
        df_.assign(static_cast<std::size_t>(n) * cap_, 0.0);
        f_.assign(static_cast<std::size_t>(n), 0.0);
        step_.assign(static_cast<std::size_t>(n), 0.0);
        kept_dx_.assign(dx_.size(), 0.0);
        kept_df_.assign(df_.size(), 0.0);
        drop();
    }
    int capacity() const { return cap_; }
    int count() const { return count_; }
    void drop() {
        touch();
        count_ = 0, head_ = 0, started_ = false;
    }
    // A new solve (or a new preconditioner): the next update records no pair.
    void begin() { started_ = false; }

    // f (n values): the plain update in, the update to take out. Records the pair of the last
    // update since begin(). True if f was corrected. Two passes over the n values: the first
    // records the pair, its dot products with the other pairs' δf (the Gram matrix of the rest is
    // kept from the calls that recorded them) and every δf's with f, and keeps f as the plain
    // update; the second corrects f and keeps it as the update taken (the same sums in the same
    // order as one pass per product: bit for bit the same updates).
    bool correct(double* f) {
        if (cap_ == 0) return false;
        const std::size_t n = static_cast<std::size_t>(n_);
        int fresh = -1;  // the slot recorded by this call
        if (started_) {
            touch();
            fresh = head_;
            head_ = (head_ + 1) % cap_;
            count_ = std::min(count_ + 1, cap_);
        }
        started_ = true;
        const int m = count_;
        double b[kMaxPairs] = {0, 0, 0, 0};  // δf_a · f
        double g[kMaxPairs] = {0, 0, 0, 0};  // δf_fresh · δf_a (a ≠ fresh), δf_fresh · δf_fresh
        const double* dfa[kMaxPairs];
        for (int a = 0; a < m; ++a) dfa[a] = &df_[static_cast<std::size_t>(a) * n];
        if (fresh >= 0) {
            double* dx = &dx_[static_cast<std::size_t>(fresh) * n];
            double* df = &df_[static_cast<std::size_t>(fresh) * n];
            for (std::size_t k = 0; k < n; ++k) {
                const double fk = f[k], d = fk - f_[k];
                dx[k] = step_[k];
                df[k] = d;
                f_[k] = fk;
                for (int a = 0; a < m; ++a) {
                    const double da = a == fresh ? d : dfa[a][k];
                    g[a] += d * da;
                    b[a] += da * fk;
                }
            }
            for (int a = 0; a < m; ++a) gram_[fresh][a] = gram_[a][fresh] = g[a];
        } else {
            for (std::size_t k = 0; k < n; ++k) {
                const double fk = f[k];
                f_[k] = fk;
                for (int a = 0; a < m; ++a) b[a] += dfa[a][k] * fk;
            }
        }
        const bool used = m > 0 && fit(f, b);
        if (!used) std::copy(f, f + n, step_.begin());
        return used;
    }
    // The plain update of the last correct(); after a taken-back update, the one to take instead
    // (it becomes the step of the next pair).
    const double* plain() const { return f_.data(); }
    void take_plain() {
        touch();
        std::copy(f_.begin(), f_.end(), step_.begin());
        count_ = 0, head_ = 0;
    }

    // Undo within one step, for an integrator that rolls back its own failed steps
    // (Integrator::rolls_back_itself()): mark() at the step's start; the first change of the pairs
    // after it keeps them as they were, and undo() returns to that as restore() of what save()
    // wrote then would (the Gram matrix recomputed, no update begun). Unmarked pairs keep nothing.
    void mark() { marked_ = true, kept_ = false; }
    void undo() {
        if (kept_) {
            count_ = kept_count_, head_ = kept_head_;
            std::copy(kept_dx_.begin(), kept_dx_.end(), dx_.begin());
            std::copy(kept_df_.begin(), kept_df_.end(), df_.begin());
            kept_ = false;
        }
        started_ = false;
        regram();
    }

    void save(StateWriter& w) const {  // saved_size() bytes
        w.value(count_);
        w.value(head_);
        w.values(dx_);
        w.values(df_);
    }
    std::size_t saved_size() const { return 2 * sizeof(std::int32_t) + sizeof(double) * (dx_.size() + df_.size()); }
    // False (nothing usable) if the count or ring position is out of range.
    bool restore(const char*& p) {
        restore_value(p, count_);
        restore_value(p, head_);
        restore_values(p, dx_);
        restore_values(p, df_);
        started_ = false;
        const bool ok = count_ >= 0 && count_ <= cap_ && head_ >= 0 && head_ < std::max(1, cap_);
        if (ok) regram();
        return ok;
    }

private:
    // γ by the normal equations (count_ ≤ kMaxPairs; the Gram matrix kept in gram_, the right-hand
    // side b = δf_a · f), Cholesky with the relative pivot floor; f −= Σ γ_j (δx_j + δf_j), and f into
    // step_. True if any pair entered (else f and step_ as they were: step_ is then the caller's).
    bool fit(double* f, const double* b) {
        const int m = count_;
        const std::size_t n = static_cast<std::size_t>(n_);
        double L[kMaxPairs][kMaxPairs], g[kMaxPairs];
        bool keep[kMaxPairs];
        for (int a = 0; a < m; ++a)
            for (int c = 0; c <= a; ++c) L[a][c] = gram_[a][c];
        for (int a = 0; a < m; ++a) {  // the Gram matrix G = L Lᵀ, in place (lower triangle)
            const double diag = L[a][a];
            double d = diag;
            for (int c = 0; c < a; ++c)
                if (keep[c]) d -= L[a][c] * L[a][c];
            keep[a] = diag > 0 && d > pivot_ * diag;
            const double l = keep[a] ? std::sqrt(d) : 1.0;
            L[a][a] = l;
            for (int r = a + 1; r < m; ++r) {
                double v = L[r][a];
                for (int c = 0; c < a; ++c)
                    if (keep[c]) v -= L[r][c] * L[a][c];
                L[r][a] = keep[a] ? v / l : 0.0;
            }
        }
        for (int a = 0; a < m; ++a) {  // L y = b
            double v = b[a];
            for (int c = 0; c < a; ++c) v -= L[a][c] * g[c];
            g[a] = keep[a] ? v / L[a][a] : 0.0;
        }
        for (int a = m - 1; a >= 0; --a) {  // Lᵀ γ = y
            double v = g[a];
            for (int r = a + 1; r < m; ++r) v -= L[r][a] * g[r];
            g[a] = keep[a] ? v / L[a][a] : 0.0;
        }
        int use[kMaxPairs], nu = 0;
        for (int a = 0; a < m; ++a)
            if (keep[a] && g[a] != 0) use[nu++] = a;
        if (nu == 0) return false;
        const double* dx[kMaxPairs];
        const double* df[kMaxPairs];
        for (int u = 0; u < nu; ++u) {
            dx[u] = &dx_[static_cast<std::size_t>(use[u]) * n];
            df[u] = &df_[static_cast<std::size_t>(use[u]) * n];
        }
        for (std::size_t k = 0; k < n; ++k) {
            double v = f[k];
            for (int u = 0; u < nu; ++u) v -= g[use[u]] * (dx[u][k] + df[u][k]);
            f[k] = v;
            step_[k] = v;
        }
        return true;
    }

    // Before the first change after mark(): the pairs as they were (undo()).
    void touch() {
        if (!marked_ || kept_) return;
        kept_count_ = count_, kept_head_ = head_;
        std::copy(dx_.begin(), dx_.end(), kept_dx_.begin());
        std::copy(df_.begin(), df_.end(), kept_df_.begin());
        kept_ = true;
    }

    // The Gram matrix of the recorded δf's, whole (after restore()).
    void regram() {
        const std::size_t n = static_cast<std::size_t>(n_);
        for (int a = 0; a < count_; ++a)
            for (int c = 0; c <= a; ++c) {
                const double* fa = &df_[static_cast<std::size_t>(a) * n];
                const double* fc = &df_[static_cast<std::size_t>(c) * n];
                double acc = 0;
                for (std::size_t k = 0; k < n; ++k) acc += fa[k] * fc[k];
                gram_[a][c] = gram_[c][a] = acc;
            }
    }

    int n_ = 0, cap_ = 0;
    double pivot_ = kPivot;
    std::int32_t count_ = 0, head_ = 0;
    bool started_ = false;
    std::vector<double> dx_, df_;  // the pairs, count_ of them in a ring, the next at head_
    std::vector<double> f_, step_;  // the last plain update, the last update taken
    double gram_[kMaxPairs][kMaxPairs] = {};  // δf_a · δf_c of the recorded pairs
    // mark() / undo(): whether marked, whether kept since, and what was kept.
    bool marked_ = false, kept_ = false;
    std::int32_t kept_count_ = 0, kept_head_ = 0;
    std::vector<double> kept_dx_, kept_df_;
};

// Option "secants" of an integrator that keeps SecantPairs: a whole number of pairs in
// [0, kMaxPairs]; `fallback` when absent (or invalid: check_secants_option reports it).
inline int secants_option(const Model& m, int fallback) {
    const auto it = m.options.extra.find("secants");
    if (it == m.options.extra.end()) return fallback;
    const double v = it->second;
    return v >= 0 && v <= SecantPairs::kMaxPairs && v == std::floor(v) ? static_cast<int>(v) : fallback;
}
inline void check_secants_option(const Model& m, const char* integrator, const char* plain, std::vector<Diagnostic>& out) {
    if (m.options.extra_lists.count("secants"))
        out.push_back({Severity::error, m.origin, std::string("options: ") + integrator + " option 'secants' must be a number"});
    const auto it = m.options.extra.find("secants");
    if (it == m.options.extra.end()) return;
    const double v = it->second;
    if (v >= 0 && v <= SecantPairs::kMaxPairs && v == std::floor(v)) return;
    char buf[200];
    std::snprintf(buf, sizeof buf, "options: %s option 'secants' must be a whole number in [0, %d] (0: %s), got %g", integrator,
                  SecantPairs::kMaxPairs, plain, v);
    out.push_back({Severity::error, m.origin, buf});
}

}  // namespace noether
