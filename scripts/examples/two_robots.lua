-- Two robots in one scene, imported with different prefixes: the UR5 arm and the Unitree A1
-- quadruped (its trunk welded in the air), both moving under gravity with joint damping and their
-- URDF joint limits (limits = false for the integrators that cannot take them; the A1's calves start
-- at their upper limit, as the import report says: their zero is outside the range).
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { dt = 0.005, duration = 2, integrator = "vi-maximal", solver = "auto", limits = true }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local arm = w:urdf { file = models.path("example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"),
                     base = "fixed", prefix = "ur5/", damping = 0.5, limits = P.limits }
local dog = w:urdf { file = models.path("ConstrainedDynamics.jl/examples/examples_files/quadruped.urdf"),
                     base = "fixed", prefix = "a1/", position = { 1.5, 0, 0.6 }, damping = 0.1,
                     limits = P.limits }
print(string.format("two_robots: %d + %d bodies, %d + %d joints", arm.nbodies, dog.nbodies, arm.njoints, dog.njoints))
return w
