-- A three-link arm under gravity whose joints follow sine targets through position servos
-- (kp = 100, kv = 8), integrated inside the step (docs/servos.md). With `servos = false` the same
-- gains act as an explicit PD law written in Lua (w:set_actuation): the wrist's kv·dt/I is about
-- 4, beyond the explicit limit of 2, and that run blows up at the same dt.
local noether = require("noether")

local P = noether.params { kp = 100, kv = 8, dt = 0.005, duration = 6, servos = true, amplitude = 0.4,
                           integrator = "vi-maximal", solver = "auto", csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local y = { 0, 1, 0 }
-- Links hanging down from the shoulder: heavy upper arm, light forearm, very light hand.
local upper = w:body { name = "upper", mass = 1.5, inertia = noether.inertia.box(1.5, 0.06, 0.06, 0.4), position = { 0, 0, -0.2 } }
local fore = w:body { name = "fore", mass = 0.5, inertia = noether.inertia.box(0.5, 0.04, 0.04, 0.3), position = { 0, 0, -0.55 } }
local hand = w:body { name = "hand", mass = 0.15, inertia = noether.inertia.box(0.15, 0.03, 0.03, 0.1), position = { 0, 0, -0.75 } }
w:joint { name = "shoulder", type = "revolute", parent = w.world, child = upper, anchor = { 0, 0, 0 }, axis = y }
w:joint { name = "elbow", type = "revolute", parent = upper, child = fore, anchor = { 0, 0, -0.4 }, axis = y }
w:joint { name = "wrist", type = "revolute", parent = fore, child = hand, anchor = { 0, 0, -0.7 }, axis = y }

local joints = { "shoulder", "elbow", "wrist" }
local frequency = { 0.3, 0.5, 0.7 }
if P.servos then
  for _, name in ipairs(joints) do w:servo { joint = name, kp = P.kp, kv = P.kv } end
end

-- The targets of the coming step: sines starting at rest at the hanging pose.
local function targets(t)
  local out = {}
  for i, f in ipairs(frequency) do
    local om = 2 * math.pi * f
    out[i] = { P.amplitude * (1 - math.cos(om * t)), P.amplitude * om * math.sin(om * t) }
  end
  return out
end

local max_error = 0
w:on_step(function(w)
  local t = w:time()
  for i, name in ipairs(joints) do
    max_error = math.max(max_error, math.abs(w:coord(name) - P.amplitude * (1 - math.cos(2 * math.pi * frequency[i] * t))))
  end
  local next = targets(t + P.dt)
  for i, name in ipairs(joints) do
    if P.servos then
      w:set_target(name, next[i][1], next[i][2])
    else
      w:set_actuation(name, P.kp * (next[i][1] - w:coord(name)) + P.kv * (next[i][2] - w:rate(name)))
    end
  end
end)
w:output { every = 10, callback = function(w) _G.servo_arm_max_error = max_error end }
if P.csv ~= "" then
  w:output { file = P.csv, every = 4, channels = { "time", "shoulder.coord", "elbow.coord", "wrist.coord", "energy" } }
end
return w
