-- The UR5 arm (fixed base) driven to a target pose by joint PD controllers written in Lua.
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { dt = 0.002, duration = 4, integrator = "vi-maximal", solver = "auto", csv = "", limits = true }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local ur5 = w:urdf { file = models.path("example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"), base = "fixed", limits = P.limits }

local names = { "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint" }
local target = { 0.5, -1.0, 1.2, -0.5, 0.3, 0.2 }
-- Gains per joint, by the inertia each one moves (joint forces are applied explicitly, so the
-- small wrist inertias need small gains: dt * kd / I stays well below 2).
local kp = { 800, 800, 300, 10, 10, 0.5 }
local kd = { 80, 80, 30, 1, 1, 0.05 }
w:on_step(function(w)
  for i, name in ipairs(names) do
    w:set_actuation(name, kp[i] * (target[i] - w:coord(name)) - kd[i] * w:rate(name))
  end
end)
if P.csv ~= "" then
  local channels = { "time", "energy", "violation" }
  for _, name in ipairs(names) do channels[#channels + 1] = name .. ".coord" end
  w:output { file = P.csv, every = 5, channels = channels }
end
return w
