-- A two-link arm whose shoulder is driven by a PD controller written in Lua, tracking a sine;
-- the elbow hangs free with a little damping. Gravity along -z, hinge axes along y.
local noether = require("noether")

local P = noether.params { amplitude = 0.5, frequency = 0.5, kp = 400, kd = 40, dt = 0.005, duration = 10,
                           integrator = "vi-maximal", solver = "auto", csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local y = { 0, 1, 0 }
-- The arm hangs down at rest.
local upper = w:body { name = "upper", mass = 2, inertia = noether.inertia.box(2, 0.1, 0.1, 0.6), position = { 0, 0, -0.3 } }
local fore = w:body { name = "fore", mass = 1, inertia = noether.inertia.box(1, 0.08, 0.08, 0.5), position = { 0, 0, -0.85 } }
w:joint { name = "shoulder", type = "revolute", parent = w.world, child = upper, anchor = { 0, 0, 0 }, axis = y }
w:joint { name = "elbow", type = "revolute", parent = upper, child = fore, anchor = { 0, 0, -0.6 }, axis = y, damping = 0.2 }

local omega = 2 * math.pi * P.frequency
local max_error = 0
w:on_step(function(w)
  local t = w:time()
  local target, target_rate = P.amplitude * math.sin(omega * t), P.amplitude * omega * math.cos(omega * t)
  local q, qd = w:coord("shoulder"), w:rate("shoulder")
  w:set_actuation("shoulder", P.kp * (target - q) + P.kd * (target_rate - qd))
  if t > 2 then max_error = math.max(max_error, math.abs(target - q)) end
end)
-- A per-sample Lua callback: the tracking error after the transient.
w:output { every = 100, callback = function(w) _G.driven_arm_max_error = max_error end }
if P.csv ~= "" then
  w:output { file = P.csv, every = 2, channels = { "time", "shoulder.coord", "elbow.coord", "energy" } }
end
return w
