-- A planar slider-crank driven by a motor torque: crank (radius r) hinged at the world origin,
-- connecting rod (length L), slider on the x axis. Hinge axes along y. The loop closes at the
-- rod-slider hinge (its out-of-plane rows are redundant; dense-loop handles them).
local noether = require("noether")

local P = noether.params { r = 0.2, L = 0.8, torque = 2.0, damping = 0.05, dt = 0.005, duration = 5,
                           integrator = "vi-maximal", solver = "auto", csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local y = { 0, 1, 0 }
-- Start with the crank pointing up (+z), so the rod is inclined.
local pin = { 0, 0, P.r }
local xs = math.sqrt(P.L ^ 2 - P.r ^ 2)
local crank = w:body { name = "crank", mass = 0.5, inertia = noether.inertia.box(0.5, 0.05, 0.05, P.r),
                       position = { 0, 0, P.r / 2 } }
local rod = w:body { name = "rod", mass = 1.0, inertia = noether.inertia.rod(1.0, P.L),
                     position = { xs / 2, 0, P.r / 2 },
                     orientation = { axis = y, angle = math.atan(P.r, xs) } }
local slider = w:body { name = "slider", mass = 2.0, inertia = noether.inertia.box(2.0, 0.1, 0.1, 0.1),
                        position = { xs, 0, 0 } }
w:joint { name = "crank", type = "revolute", parent = w.world, child = crank, anchor = { 0, 0, 0 }, axis = y,
          damping = P.damping }
w:joint { name = "crank_rod", type = "revolute", parent = crank, child = rod, anchor = pin, axis = y }
w:joint { name = "slide", type = "prismatic", parent = w.world, child = slider, anchor = { xs, 0, 0 }, axis = { 1, 0, 0 } }
w:joint { name = "rod_slider", type = "revolute", parent = rod, child = slider, anchor = { xs, 0, 0 }, axis = y }
w:on_step(function(w) w:set_actuation("crank", P.torque) end)
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "violation", "crank.coord", "slide.coord", "slider.position" } }
end
return w
