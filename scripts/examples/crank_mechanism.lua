-- Paper 003's crank mechanism (Tuomela, Arponen & Normi §6.2.3, Tables 5-7): a crank turning
-- about the x axis, a connecting rod and a slider on the x axis, joined by revolute, spherical,
-- universal and translational joints (17 rows, one degree of freedom, a real 3-D loop); gravity
-- along -y; a torque of -50 N m about the crank's body z axis (its hinge axis); at rest.
local noether = require("noether")
local integrators = require("lib.integrators")

local P = noether.params { torque = -50, dt = 0.01, duration = 10, integrator = "vi-maximal", solver = "auto", csv = "",
                           tol = 1e-7, invariant = false }

-- dp45-projection takes the paper's step-size control settings (lib/integrators.lua).
local w = noether.world { gravity = { 0, -9.81, 0 }, dt = P.dt, duration = P.duration, integrator = P.integrator,
                          solver = P.solver, options = integrators.options(P) }
local crank = w:body { name = "crank", mass = 19.50, inertia = { 0.02, 0.41, 0.42 }, position = { 0, 0, -0.25 },
                       orientation = { axis = { 0, 1, 0 }, angle = math.pi / 2 } }
local rod = w:body { name = "rod", mass = 70.29, inertia = { 0.07, 18.99, 19.04 }, position = { 0.9, 0, -0.5 } }
local slider = w:body { name = "slider", mass = 7.81, inertia = { 0.01, 0.01, 0.01 }, position = { 1.8, 0, -0.5 } }
-- Crank hinge: the paper's axis is the crank's body z axis, which is the world x axis here.
w:joint { name = "hinge", type = "revolute", parent = w.world, child = crank, anchor = { 0, 0, 0 }, axis = { 1, 0, 0 } }
w:joint { name = "ball", type = "spherical", parent = crank, child = rod, anchor = { 0, 0, -0.5 } }
-- Universal: axis e2 fixed in the rod, axis e3 fixed in the slider.
w:joint { name = "cardan", type = "universal", parent = rod, child = slider, anchor = { 1.8, 0, -0.5 },
          axis = { 0, 1, 0 }, axis2 = { 0, 0, 1 } }
-- Translational joint: the slider's point (-1.8, 0, 0.5) (body frame) slides along the world x axis.
w:joint { name = "slide", type = "prismatic", parent = w.world, child = slider, anchor = { 0, 0, 0 }, axis = { 1, 0, 0 } }
w:force { body = crank, torque = { 0, 0, P.torque }, frame = "body" }
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "kinetic", "potential", "violation", "hinge.coord",
                                        "slide.coord", "slider.position" } }
end
return w
