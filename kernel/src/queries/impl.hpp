// The kinematics queries' shared state and helpers (internal to kernel/src/queries/): the tree
// view of the Model, its workspaces, and the forward kinematics every algorithm starts from. One
// algorithm per file beside this one (docs/queries.md).
#pragma once

#include <string>
#include <vector>

#include "noether/error.hpp"
#include "noether/queries.hpp"
#include "noether/sdk/tree.hpp"

namespace noether {

struct Kinematics::Impl {
    TreeView t;
    std::vector<double> qt;           // raw coordinates, tree order
    std::vector<Frame> T, g;          // link poses in the parent frame and in the world
    std::vector<Pose> bodies;         // body poses of the last kinematics
    std::vector<double> V, A, F;      // RNEA: 6 per link
    std::vector<double> M, Mt, rhs;   // n × n, tree order n × n, n
    std::vector<int> piv;
    std::vector<double> Jb;           // centre-of-mass Jacobian: one body's 3 × n
    const double* last_q = nullptr;   // (not a cache key: kinematics are recomputed every call)
};

namespace queries {

// Link poses (parent frame and world) and body poses at the Data-layout coordinates q.
inline void kinematics(const Model& m, const double* q, TreeView& t, std::vector<double>& qt, std::vector<Frame>& T,
                std::vector<Frame>& g, std::vector<Pose>& bodies) {
    for (int i = 0; i < t.size(); ++i) {
        const TreeLink& l = t.links[i];
        qt[l.iq] = q[l.dof] - tree_link_offset(m, l);
        T[i] = link_transform(l, qt[l.iq]);
        g[i] = l.parent >= 0 ? g[l.parent] * T[i] : T[i];
    }
    tree_body_poses(t, g.data(), nullptr, bodies.data());
}

// The world twist (about the world origin) of link j's joint screw.
inline void world_screw(const TreeLink& l, const Frame& gj, double* S) { ad_apply(gj, l.S, S); }

}  // namespace queries
}  // namespace noether
