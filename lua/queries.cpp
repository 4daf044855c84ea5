// The Lua module: kinematics and dynamics queries at a world's current state (docs/queries.md):
// w:jacobian(b [, point]), w:mass_matrix(), w:inverse_dynamics(qdd), w:bias_forces(),
// w:gravity_forces(), w:forward_dynamics(tau), w:center_of_mass(), w:com_jacobian(), w:momentum().
#include "world.hpp"

namespace noether {
namespace lua {

namespace {

Kinematics& kin(lua_State* L, World& w, const char* fn) {
    if (!w.kinematics) {
        try {
            w.kinematics = std::make_unique<Kinematics>(w.model);
        } catch (const UsageError& e) {
            fail(L, "%s: %s", fn, e.what());
        }
    }
    return *w.kinematics;
}

// A table of `rows` lists of `cols` numbers (row-major M).
int push_matrix(lua_State* L, const std::vector<double>& M, int rows, int cols) {
    lua_createtable(L, rows, 0);
    for (int r = 0; r < rows; ++r) {
        lua_createtable(L, cols, 0);
        for (int c = 0; c < cols; ++c) {
            lua_pushnumber(L, M[static_cast<std::size_t>(r) * cols + c]);
            lua_rawseti(L, -2, c + 1);
        }
        lua_rawseti(L, -2, r + 1);
    }
    return 1;
}

int push_vector(lua_State* L, const std::vector<double>& v) {
    lua_createtable(L, static_cast<int>(v.size()), 0);
    for (std::size_t i = 0; i < v.size(); ++i) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    return 1;
}

// Argument idx: a list of n finite numbers (w:dofs() order).
std::vector<double> dof_vector(lua_State* L, int idx, int n, const char* fn, const char* what) {
    if (!lua_istable(L, idx)) fail(L, "%s: expected %s, a list of %s numbers (w:dofs() order), got %s", fn, what, std::to_string(n), type_of(L, idx));
    if (static_cast<int>(lua_rawlen(L, idx)) != n)
        fail(L, "%s: %s must have %s numbers (one per joint coordinate), got %s", fn, what, std::to_string(n),
             std::to_string(lua_rawlen(L, idx)));
    std::vector<double> v(n);
    for (int i = 0; i < n; ++i) {
        lua_rawgeti(L, idx, i + 1);
        if (lua_type(L, -1) != LUA_TNUMBER || !std::isfinite(lua_tonumber(L, -1)))
            fail(L, "%s: %s[%s] must be a finite number", fn, what, std::to_string(i + 1));
        v[i] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    return v;
}

}  // namespace

int l_jacobian(lua_State* L, World& w) {
    Kinematics& k = kin(L, w, "jacobian");
    const std::string name = element_name(L, 2, "jacobian", "body");
    const int b = w.model->body_index(name);
    if (b < 0) fail(L, "jacobian: no body named '%s'", name);
    const int n = k.n();
    if (lua_isnoneornil(L, 3)) {
        std::vector<double> J(6 * static_cast<std::size_t>(n));
        k.body_jacobian(w.data->coord.data(), b, J.data());
        return push_matrix(L, J, 6, n);
    }
    const Vec3 p = vec_arg(L, 3, "jacobian", "the point (body frame)");
    std::vector<double> J(3 * static_cast<std::size_t>(n));
    k.point_jacobian(w.data->coord.data(), b, p, J.data());
    return push_matrix(L, J, 3, n);
}

int l_mass_matrix(lua_State* L, World& w) {
    Kinematics& k = kin(L, w, "mass_matrix");
    std::vector<double> M(static_cast<std::size_t>(k.n()) * k.n());
    k.mass_matrix(w.data->coord.data(), M.data());
    return push_matrix(L, M, k.n(), k.n());
}

int l_inverse_dynamics(lua_State* L, World& w) {
    Kinematics& k = kin(L, w, "inverse_dynamics");
    const std::vector<double> qdd = dof_vector(L, 2, k.n(), "inverse_dynamics", "qdd");
    std::vector<double> tau(k.n());
    k.inverse_dynamics(w.data->coord.data(), w.data->rate.data(), qdd.data(), tau.data());
    return push_vector(L, tau);
}

int l_bias_forces(lua_State* L, World& w) {
    Kinematics& k = kin(L, w, "bias_forces");
    std::vector<double> b(k.n());
    k.bias_forces(w.data->coord.data(), w.data->rate.data(), b.data());
    return push_vector(L, b);
}

int l_gravity_forces(lua_State* L, World& w) {
    Kinematics& k = kin(L, w, "gravity_forces");
    std::vector<double> g(k.n());
    k.gravity_forces(w.data->coord.data(), g.data());
    return push_vector(L, g);
}

int l_forward_dynamics(lua_State* L, World& w) {
    Kinematics& k = kin(L, w, "forward_dynamics");
    const std::vector<double> tau = dof_vector(L, 2, k.n(), "forward_dynamics", "tau");
    std::vector<double> qdd(k.n());
    k.forward_dynamics(w.data->coord.data(), w.data->rate.data(), tau.data(), qdd.data());
    return push_vector(L, qdd);
}

int l_center_of_mass(lua_State* L, World& w) {
    push_vec3(L, kin(L, w, "center_of_mass").center_of_mass(w.data->coord.data()));
    return 1;
}

int l_com_jacobian(lua_State* L, World& w) {
    Kinematics& k = kin(L, w, "com_jacobian");
    std::vector<double> J(3 * static_cast<std::size_t>(k.n()));
    k.com_jacobian(w.data->coord.data(), J.data());
    return push_matrix(L, J, 3, k.n());
}

int l_momentum(lua_State* L, World& w) {
    Vec3 p, l;
    kin(L, w, "momentum").momentum(w.data->coord.data(), w.data->rate.data(), &p, &l);
    push_vec3(L, p);
    push_vec3(L, l);
    return 2;
}

}  // namespace lua
}  // namespace noether
