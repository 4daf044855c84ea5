-- The classic planar four-bar of four revolute joints (hinge axes along y): crank from the world
-- origin, coupler, rocker back to the world at (2, 0, -1). In 3-D, 3 of the 5 rows of the closing
-- hinge repeat what the other hinges already enforce; the dense-loop solver gives them
-- minimum-norm multipliers and says so once.
local noether = require("noether")

local P = noether.params { dt = 0.01, duration = 10, integrator = "vi-maximal", solver = "auto", csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local box = noether.inertia.box(1, 1, 0.1, 0.1)
local crank = w:body { name = "crank", mass = 1, inertia = box, position = { 0.5, 0, 0 } }
local coupler = w:body { name = "coupler", mass = 1, inertia = box, position = { 1, 0, -0.5 },
                         orientation = { axis = { 0, 1, 0 }, angle = math.pi / 2 } }
local rocker = w:body { name = "rocker", mass = 1, inertia = box, position = { 1.5, 0, -1 } }
local y = { 0, 1, 0 }
w:joint { name = "ground_crank", type = "revolute", parent = w.world, child = crank, anchor = { 0, 0, 0 }, axis = y }
w:joint { name = "crank_coupler", type = "revolute", parent = crank, child = coupler, anchor = { 1, 0, 0 }, axis = y }
w:joint { name = "coupler_rocker", type = "revolute", parent = coupler, child = rocker, anchor = { 1, 0, -1 }, axis = y }
w:joint { name = "rocker_ground", type = "revolute", parent = w.world, child = rocker, anchor = { 2, 0, -1 }, axis = y }
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "violation", "ground_crank.coord", "rocker_ground.coord" } }
end
return w
