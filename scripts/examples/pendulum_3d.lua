-- Paper 003's 3-D pendulum (Tuomela, Arponen & Normi §6.2.1): a steel body of 38.34 kg,
-- inertia diag(0.147, 3.175, 3.154), centre of mass at (0.765, 0, 0), hanging from a ball joint
-- at the origin; gravity along -y (the paper's x2 axis); at rest. An optional constant torque
-- about the vertical (y) through the pivot spins the swinging pendulum up.
local noether = require("noether")
local integrators = require("lib.integrators")

local P = noether.params { torque = 0.0, dt = 0.01, duration = 10, integrator = "vi-maximal", solver = "auto", csv = "",
                           tol = 1e-6, invariant = false }

-- dp45-projection takes the paper's step-size control settings (lib/integrators.lua).
local w = noether.world { gravity = { 0, -9.81, 0 }, dt = P.dt, duration = P.duration, integrator = P.integrator,
                          solver = P.solver, options = integrators.options(P) }
local body = w:body { name = "pendulum", mass = 38.34, inertia = { 0.147, 3.175, 3.154 }, position = { 0.765, 0, 0 } }
w:joint { name = "ball", type = "spherical", parent = w.world, child = body, anchor = { 0, 0, 0 } }
if P.torque ~= 0 then w:force { body = body, torque = { 0, P.torque, 0 } } end
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "kinetic", "potential", "violation", "angular_momentum", "pendulum.position" } }
end
return w
