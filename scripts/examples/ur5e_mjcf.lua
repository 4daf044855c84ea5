-- Menagerie's UR5e read from its MJCF file (docs/mjcf.md): masses, frames and joint ranges as
-- MuJoCo compiles them, armature 0.1 on every joint (an inertia on the joint coordinate,
-- integrated inside the step), and its hand-written position actuators (<general> with an affine
-- bias: kp 2000 / kv 400 on the three big joints, 500 / 100 on the wrists, force limits 150 and
-- 28 N m) as servos. It starts from the file's `home` keyframe, holding its ctrl, then sweeps the
-- shoulder, elbow and first wrist joint through sines; the servos' targets come from Lua each step.
--
--   noether run scripts/examples/ur5e_mjcf.lua      (prints "tracking error: ...")
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { dt = 0.002, duration = 4, amplitude = 0.4, period = 2, integrator = "vi-maximal",
                           limits = true, csv = "", quiet = 0 }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator }
-- limits = false for the integrators that do not enforce joint ranges (the sweep stays inside them).
local arm = w:mjcf { file = models.path("mujoco_menagerie/universal_robots_ur5e/ur5e.xml"), keyframe = "home",
                     limits = P.limits }
assert(arm.servos == 6, "the six <general> position actuators become servos")
-- (Outputs are declared before the first w:coord below, which compiles the world.)
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "shoulder_lift_joint.coord", "elbow_joint.coord", "wrist_1_joint.coord" } }
end

local swept = { "shoulder_lift_joint", "elbow_joint", "wrist_1_joint" }
local home = {}
for i, name in ipairs(swept) do home[i] = w:coord(name) end
local omega = 2 * math.pi / P.period

local function target(i, t)
  local s = i % 2 == 0 and -1 or 1  -- the elbow swings against the shoulder
  return home[i] + s * P.amplitude * math.sin(omega * t), s * P.amplitude * omega * math.cos(omega * t)
end

local worst = 0
w:on_step(function(w)
  local t = w:time()
  for i, name in ipairs(swept) do
    worst = math.max(worst, math.abs(w:coord(name) - (target(i, t))))
    w:set_target(name, target(i, t + P.dt))
  end
end)
w:run { duration = P.duration }
if P.quiet == 0 then print(string.format("tracking error: %.6g rad", worst)) end
noether.record("tracking_error", worst)
