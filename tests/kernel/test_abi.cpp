// The plugin ABI: plugins are C++ objects that read and write the kernel's structs directly, so
// their layouts are part of the contract. This test records them; when one changes, it fails
// until NOETHER_PLUGIN_ABI is bumped and the record below is updated for the new version.
#include <catch2/catch.hpp>

#include <cstddef>
#include <sstream>

#include "noether/noether.hpp"
#include "noether/run.hpp"

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
    SZ(StepReport);
    OFF(StepReport, status);
    OFF(StepReport, work);
    OFF(StepReport, worst_node);
    OFF(StepReport, redundant_joints);
    OFF(StepReport, at_floor);
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
    OFF(Data, actuation);
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
    return o.str();
}
#pragma GCC diagnostic pop

// The layout of ABI version 6 (5 + BodyInfo::shapes, JointInfo::anchor_b/axis_b for the viewer) (g++ 12, libstdc++, x86-64).
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
JointInfo 376/8
  a 64
  b 68
  rows 72
  dofs 76
  row_offset 80
  dof_offset 84
  impl 88
  stiffness 104
  has_force_element 248
  loop 249
BlockGraph 456/8
  nbodies 0
  node_size 56
  node_offset 80
  total_size 104
  order 184
  loop_joints 232
Model 904/8
  gravity 72
  options 96
  bodies 288
  joints 312
  forces 336
  graph 360
  total_rows 816
  total_dofs 820
  integrator 824
  solver 832
  solver_name 840
StepStats 32/8
RunStats 88/8
  steps 0
  projection_total 72
  floor_steps 80
StepReport 96/8
  status 0
  work 40
  worst_node 68
  redundant_joints 80
  at_floor 88
Linearization 104/8
  x 8
  x_next 32
  A 56
  B 80
Inputs 24/8
Monitors 88/8
Data 736/8
  time 0
  step 8
  pose 16
  twist 40
  twist_guess 64
  lambda 88
  coord 112
  rate 136
  actuation 160
  applied_force 184
  applied_torque 208
  last 232
  stats 264
  warnings 352
  integrator_state 376
SolverWorkspace 80/8
  redundant_joints 8
  redundant_rows 32
  failed_node 36
  error 40
  negligible_rhs 72
)";

}  // namespace

TEST_CASE("struct layouts plugins depend on match the recorded ABI", "[abi]") {
    const std::string now = layout();
    INFO("layout now:\n" << now);
    if (now != kRecorded)
        FAIL("the layout of a struct plugins use changed: bump NOETHER_PLUGIN_ABI (now " << NOETHER_PLUGIN_ABI
                                                                                        << ") and record the new layout "
                                                                                           "in tests/kernel/test_abi.cpp");
    CHECK(NOETHER_PLUGIN_ABI == 6u);  // 3: Integrator::system_graph; 4: StepReport::at_floor, SolverWorkspace::negligible_rhs,
                                      // RunStats::floor_steps; 5: Integrator::has_linearization/linearize, Linearization;
                                      // 6: BodyInfo::shapes, JointInfo::anchor_b/axis_b
}
