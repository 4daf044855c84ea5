-- Atlas (ConstrainedDynamics.jl's URDF) with a floating base, thrown tumbling and falling under
-- gravity: 30 revolute joints with damping, the welded sensor frames lumped into their parents.
-- No contact. The tumble flexes the joints into their limits (enforced: limits = false turns them
-- off, for the integrators that cannot take them); the limits and the damping take energy out; the total linear
-- momentum changes only by gravity's impulse.
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { damping = 2.0, spin = 2.0, dt = 0.005, duration = 2, integrator = "vi-maximal", solver = "auto",
                           csv = "", limits = true }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local atlas = w:urdf { file = models.path("ConstrainedDynamics.jl/examples/examples_files/atlas.urdf"),
                       base = "floating", position = { 0, 0, 1 }, damping = P.damping,
                       velocity = { 0.5, 0, 2 }, angular_velocity = { P.spin, 0.3 * P.spin, 0 }, limits = P.limits }
if P.csv ~= "" then
  w:output { file = P.csv, every = 2, channels = { "time", "energy", "momentum", "violation", "pelvis.position",
                                                    "l_leg_kny.coord", "r_arm_shz.coord" } }
end
return w
