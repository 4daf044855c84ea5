// The plugin ABI: plugins are C++ objects that read and write the kernel's structs directly, so
// their layouts are part of the contract. This test records them; when one changes, it fails
// until NOETHER_PLUGIN_ABI is bumped and the record below is updated for the new version.
#include <catch2/catch.hpp>

#include <cstddef>
#include <sstream>

#include <fstream>

#include "noether/sdk/integrator.hpp"
#include "noether/sdk/joint.hpp"
#include "noether/noether.hpp"
#include "noether/run.hpp"
#include "noether/sdk/solver.hpp"
#include "noether/sdk/tree.hpp"
#include "noether/sdk/tree_ldu.hpp"

using namespace noether;

namespace {

#define SZ(T) o << #T " " << sizeof(T) << "/" << alignof(T) << "\n"
#define OFF(T, f) o << "  " #f " " << offsetof(T, f) << "\n"

// offsetof on the non-standard-layout Data and Model is conditionally supported; g++ gives the
// real offsets (the same compiler the plugins must use).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
std::string layout() {
    std::ostringstream o;
    SZ(noether_plugin_descriptor);
    SZ(Vec3);
    SZ(Quat);
    SZ(Pose);
    SZ(Twist);
    SZ(Wrench);
    SZ(Mat3);
    SZ(Options);
    OFF(Options, dt);
    OFF(Options, tolerance);
    OFF(Options, max_iterations);
    OFF(Options, max_halvings);
    OFF(Options, max_substeps);
    OFF(Options, extra);
    OFF(Options, extra_lists);
    SZ(BodyInfo);
    OFF(BodyInfo, mass);
    OFF(BodyInfo, inertia);
    OFF(BodyInfo, pose0);
    OFF(BodyInfo, twist0);
    SZ(JointInfo);
    OFF(JointInfo, a);
    OFF(JointInfo, b);
    OFF(JointInfo, rows);
    OFF(JointInfo, dofs);
    OFF(JointInfo, row_offset);
    OFF(JointInfo, dof_offset);
    OFF(JointInfo, impl);
    OFF(JointInfo, stiffness);
    OFF(JointInfo, has_force_element);
    OFF(JointInfo, loop);
    OFF(JointInfo, limited);
    OFF(JointInfo, servo);
    OFF(JointInfo, servo_kp);
    OFF(JointInfo, effort_limit);
    SZ(ServoTerms);
    OFF(ServoTerms, kv);
    OFF(ServoTerms, target);
    OFF(ServoTerms, force);
    OFF(ServoTerms, saturated);
    SZ(ContactInfo);
    OFF(ContactInfo, body);
    OFF(ContactInfo, point);
    OFF(ContactInfo, radius);
    OFF(ContactInfo, other);
    OFF(ContactInfo, normal);
    OFF(ContactInfo, mu);
    SZ(CouplingInfo);
    OFF(CouplingInfo, joint);
    OFF(CouplingInfo, leader);
    OFF(CouplingInfo, ratio);
    OFF(CouplingInfo, offset);
    SZ(ContactResult);
    OFF(ContactResult, gap);
    OFF(ContactResult, normal_force);
    OFF(ContactResult, friction);
    OFF(ContactResult, active);
    SZ(BlockGraph);
    OFF(BlockGraph, nbodies);
    OFF(BlockGraph, node_size);
    OFF(BlockGraph, node_offset);
    OFF(BlockGraph, total_size);
    OFF(BlockGraph, order);
    OFF(BlockGraph, loop_joints);
    SZ(Model);
    OFF(Model, gravity);
    OFF(Model, options);
    OFF(Model, bodies);
    OFF(Model, joints);
    OFF(Model, forces);
    OFF(Model, contacts);
    OFF(Model, couplings);
    OFF(Model, limited_joints);
    OFF(Model, servos);
    OFF(Model, graph);
    OFF(Model, total_rows);
    OFF(Model, total_dofs);
    OFF(Model, integrator);
    OFF(Model, solver);
    OFF(Model, solver_name);
    SZ(StepStats);
    SZ(RunStats);
    OFF(RunStats, steps);
    OFF(RunStats, projection_total);
    OFF(RunStats, floor_steps);
    OFF(RunStats, factor_total);
    SZ(StepReport);
    OFF(StepReport, status);
    OFF(StepReport, work);
    OFF(StepReport, worst_node);
    OFF(StepReport, redundant_joints);
    OFF(StepReport, at_floor);
    OFF(StepReport, coordinates);
    OFF(StepReport, factorizations);
    OFF(StepReport, solver_error);
    SZ(Linearization);
    OFF(Linearization, x);
    OFF(Linearization, x_next);
    OFF(Linearization, A);
    OFF(Linearization, B);
    SZ(Inputs);
    SZ(Monitors);
    SZ(Data);
    OFF(Data, time);
    OFF(Data, step);
    OFF(Data, pose);
    OFF(Data, twist);
    OFF(Data, twist_guess);
    OFF(Data, lambda);
    OFF(Data, coord);
    OFF(Data, rate);
    OFF(Data, contact);
    OFF(Data, limit_force);
    OFF(Data, turn_guard);
    OFF(Data, actuation);
    OFF(Data, servo_kp);
    OFF(Data, target_velocity);
    OFF(Data, applied_force);
    OFF(Data, applied_torque);
    OFF(Data, last);
    OFF(Data, stats);
    OFF(Data, warnings);
    OFF(Data, integrator_state);
    SZ(SolverWorkspace);
    OFF(SolverWorkspace, redundant_joints);
    OFF(SolverWorkspace, redundant_rows);
    OFF(SolverWorkspace, failed_node);
    OFF(SolverWorkspace, error);
    OFF(SolverWorkspace, negligible_rhs);
    // The plugin SDK: what joint and integrator plugins build on (noether/sdk/tree.hpp, tree_ldu.hpp,
    // integrator.hpp). Classes with private members: size and alignment only.
    SZ(Attempt);
    OFF(Attempt, status);
    OFF(Attempt, iterations);
    OFF(Attempt, halvings);
    OFF(Attempt, residual);
    OFF(Attempt, worst_node);
    OFF(Attempt, at_floor);
    OFF(Attempt, factorizations);
    OFF(Attempt, solver_error);
    SZ(Frame);
    SZ(TreeLink);
    OFF(TreeLink, parent);
    OFF(TreeLink, joint);
    OFF(TreeLink, dof);
    OFF(TreeLink, type);
    OFF(TreeLink, nq);
    OFF(TreeLink, iq);
    OFF(TreeLink, id);
    OFF(TreeLink, body);
    OFF(TreeLink, kind);
    OFF(TreeLink, A);
    OFF(TreeLink, S);
    OFF(TreeLink, centre);
    OFF(TreeLink, M);
    OFF(TreeLink, mass);
    OFF(TreeLink, inertia);
    OFF(TreeLink, damping);
    OFF(TreeLink, rest);
    OFF(TreeLink, T0);
    OFF(TreeLink, Tc);
    OFF(TreeLink, Ts);
    OFF(TreeLink, pq);
    OFF(TreeLink, turns);
    SZ(TreeView);
    OFF(TreeView, links);
    OFF(TreeView, body_link);
    OFF(TreeView, body_offset);
    OFF(TreeView, nq);
    OFF(TreeView, nd);
    OFF(TreeView, screws_only);
    SZ(TreeABI);
    OFF(TreeABI, IA);
    OFF(TreeABI, U);
    OFF(TreeABI, P);
    OFF(TreeABI, D);
    OFF(TreeABI, u);
    SZ(TreeLDU);
    SZ(LoopClosure);
    SZ(CheckedSolve);
    return o.str();
}

// The virtual interfaces plugins implement (Joint*, Integrator, IntegratorState, Solver, RunHooks):
// every `virtual` declaration of the kernel's headers, comments and spacing removed, one a line.
// A vtable is laid out in declaration order, so a changed, added, removed or reordered virtual
// function changes this text and its digest.
std::string virtual_interfaces() {
    std::string out;
    for (const char* h : {"data.hpp", "sdk/integrator.hpp", "sdk/joint.hpp", "run.hpp", "sdk/solver.hpp"}) {
        std::ifstream f(std::string(NOETHER_SOURCE_DIR) + "/kernel/include/noether/" + h);
        const std::string label = std::string(h).substr(std::string(h).rfind('/') + 1);  // the digest's names
        REQUIRE(f);
        std::string line, decl;
        bool in = false;
        while (std::getline(f, line)) {
            const std::size_t c = line.find("//");
            if (c != std::string::npos) line.erase(c);
            if (!in && line.find("virtual ") == std::string::npos && line.find("class NOETHER_API") == std::string::npos &&
                line.find("struct NOETHER_API") == std::string::npos)
                continue;
            if (!in && line.find("virtual ") == std::string::npos) {  // a class: its name, for context
                std::string name;
                for (char ch : line) name += ch == '{' ? '\0' : ch;
                out += label + ": " + std::string(name.c_str()) + "\n";
                continue;
            }
            in = true;
            decl += " " + line;
            const std::size_t end = decl.find_first_of(";{");
            if (end == std::string::npos) continue;
            decl.erase(end);
            std::string norm;
            for (char ch : decl) {
                const bool space = ch == ' ' || ch == '\t';
                if (space && (norm.empty() || norm.back() == ' ')) continue;
                norm += space ? ' ' : ch;
            }
            while (!norm.empty() && norm.back() == ' ') norm.pop_back();
            out += "  " + norm + "\n";
            decl.clear();
            in = false;
        }
    }
    return out;
}

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}
#pragma GCC diagnostic pop

// The layout of ABI version 18 (7: the plugin SDK's structs recorded too: Attempt, Frame, TreeLink,
// TreeView, TreeABI, TreeLDU, LoopClosure, CheckedSolve; 8: contacts and limits; 9: servos;
// 10: JointInfo::armature; 11: couplings; 12: CouplingInfo::terms; 13: Data::turn_guard;
// 14: TreeLink's screw transform multiplied out, T0, Tc, Ts, pq, turns; 15: factorisations counted;
// 18: TreeABI::X removed)
// (g++ 12, libstdc++, x86-64).
// The digest of virtual_interfaces() for ABI version 20 (Integrator::rolls_back_itself; unchanged from 13 to 19).
constexpr std::uint64_t kRecordedInterfaces = 13030838432845703122ull;

const char* const kRecorded = R"(noether_plugin_descriptor 40/8
Vec3 24/8
Quat 32/8
Pose 56/8
Twist 48/8
Wrench 48/8
Mat3 72/8
Options 192/8
  dt 64
  tolerance 72
  max_iterations 80
  max_halvings 84
  max_substeps 88
  extra 96
  extra_lists 144
BodyInfo 312/8
  mass 32
  inertia 40
  pose0 112
  twist0 168
JointInfo 456/8
  a 64
  b 68
  rows 72
  dofs 76
  row_offset 80
  dof_offset 84
  impl 88
  stiffness 104
  has_force_element 280
  loop 328
  limited 248
  servo 284
  servo_kp 288
  effort_limit 320
ServoTerms 40/8
  kv 8
  target 16
  force 24
  saturated 32
ContactInfo 224/8
  body 36
  point 40
  radius 64
  other 72
  normal 112
  mu 144
CouplingInfo 184/8
  joint 32
  leader 40
  ratio 48
  offset 56
ContactResult 96/8
  gap 48
  normal_force 56
  friction 64
  active 88
BlockGraph 456/8
  nbodies 0
  node_size 56
  node_offset 80
  total_size 104
  order 184
  loop_joints 232
Model 960/8
  gravity 72
  options 96
  bodies 288
  joints 312
  forces 336
  contacts 360
  couplings 384
  limited_joints 408
  servos 412
  graph 416
  total_rows 872
  total_dofs 876
  integrator 880
  solver 888
  solver_name 896
StepStats 32/8
RunStats 96/8
  steps 0
  projection_total 72
  floor_steps 80
  factor_total 88
StepReport 104/8
  status 0
  work 40
  worst_node 68
  redundant_joints 80
  at_floor 88
  coordinates 89
  factorizations 8
  solver_error 96
Linearization 104/8
  x 8
  x_next 32
  A 56
  B 80
Inputs 24/8
Monitors 88/8
Data 1008/8
  time 0
  step 8
  pose 16
  twist 40
  twist_guess 64
  lambda 88
  coord 112
  rate 136
  contact 328
  limit_force 352
  turn_guard 400
  actuation 160
  servo_kp 232
  target_velocity 304
  applied_force 184
  applied_torque 208
  last 408
  stats 440
  warnings 536
  integrator_state 560
SolverWorkspace 80/8
  redundant_joints 8
  redundant_rows 32
  failed_node 36
  error 40
  negligible_rhs 72
Attempt 40/8
  status 0
  iterations 4
  halvings 12
  residual 16
  worst_node 24
  at_floor 28
  factorizations 8
  solver_error 32
Frame 96/8
TreeLink 688/8
  parent 0
  joint 4
  dof 8
  type 12
  nq 16
  iq 24
  id 32
  body 36
  kind 40
  A 48
  S 96
  centre 144
  M 168
  mass 264
  inertia 272
  damping 344
  rest 360
  T0 368
  Tc 464
  Ts 560
  pq 656
  turns 680
TreeView 88/8
  links 0
  body_link 24
  body_offset 48
  nq 72
  nd 80
  screws_only 84
TreeABI 144/8
  IA 0
  U 24
  P 48
  D 96
  u 120
TreeLDU 168/8
LoopClosure 432/8
CheckedSolve 112/8
)";

}  // namespace

TEST_CASE("the virtual interfaces plugins implement match the recorded ABI", "[abi]") {
    const std::string now = virtual_interfaces();
    INFO("virtual interfaces now:\n" << now);
    CHECK(now.find("virtual StepReport advance(const Model& m, Data& d) const = 0") != std::string::npos);
    if (fnv1a(now) != kRecordedInterfaces)
        FAIL("a virtual interface plugins implement changed (digest now " << fnv1a(now) << "): bump NOETHER_PLUGIN_ABI "
             "(now " << NOETHER_PLUGIN_ABI << ") and record the new digest in tests/kernel/test_abi.cpp");
}

TEST_CASE("struct layouts plugins depend on match the recorded ABI", "[abi]") {
    const std::string now = layout();
    INFO("layout now:\n" << now);
    if (now != kRecorded)
        FAIL("the layout of a struct plugins use changed: bump NOETHER_PLUGIN_ABI (now " << NOETHER_PLUGIN_ABI
                                                                                        << ") and record the new layout "
                                                                                           "in tests/kernel/test_abi.cpp");
    CHECK(NOETHER_PLUGIN_ABI == 20u);  // 3: Integrator::system_graph; 4: StepReport::at_floor, SolverWorkspace::negligible_rhs,
                                      // RunStats::floor_steps; 5: Integrator::has_linearization/linearize, Linearization;
                                      // 6: BodyInfo::shapes, JointInfo::anchor_b/axis_b; 7: Data's host-edit test,
                                      // Attempt and subdivide(), the SDK structs and virtual interfaces recorded;
                                      // 8: contacts and limits (ContactInfo, ContactResult, Model::contacts,
                                      // Data::contact/limit_force, JointInfo::limited, Integrator::takes_inequalities);
                                      // 9: servos (JointInfo::servo…, Model::servos, Data's servo inputs, ServoTerms);
                                      // 10: joint armature (JointInfo::armature); 11: couplings (CouplingInfo,
                                      // Model::couplings, Data::coupling_force, Integrator::takes_couplings);
                                      // 12: couplings over up to four coordinates (CouplingInfo::terms);
                                      // 13: the whip guard (Data::turn_guard); 14: TreeLink::T0, Tc, Ts, pq, turns;
                                      // 15: factorisations counted (StepReport, Attempt, RunStats::factor_total);
                                      // 16: the solver's reason for a failed factorisation (StepReport, Attempt ::solver_error)
                                      // 17: JointModel::coordinate_state (coordinates and their Jacobian at once)
                                      // 18: TreeABI::X removed (filled at every setup, read by nothing)
                                      // 19: StepReport::coordinates (the integrator wrote the joint coordinates)
                                      // 20: Integrator::rolls_back_itself (no kernel snapshot for it)
}
