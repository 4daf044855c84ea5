-- The Unitree A1 quadruped (shared models) standing on the ground (docs/contact.md): its four sphere
-- feet are contacts (friction mu), its URDF joint limits are enforced, and a PD controller holds a
-- standing pose. The P part is a joint torque set every step; the D part is each joint's implicit
-- damper (`damping`), which is stable at any gain (an explicit D term above ~2 N m s/rad at this dt
-- makes the light calves unstable). Once settled the feet carry exactly the robot's weight and do
-- not slip.
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { dt = 0.005, duration = 10, kp = 60, damping = 3, mu = 0.8, csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration }
local legs = { "FR", "FL", "RR", "RL" }
local stand = { hip = 0, thigh = 0.8, calf = -1.5 }
local pose, feet = {}, {}
for _, leg in ipairs(legs) do
  for part, q in pairs(stand) do pose[leg .. "_" .. part .. "_joint"] = q end
  feet[#feet + 1] = leg .. "_foot"
end
w:urdf { file = models.path("ConstrainedDynamics.jl/examples/examples_files/quadruped.urdf"), positions = pose,
         contacts = feet, mu = P.mu, on_ground = true, damping = P.damping }
w:on_step(function(w)
  for _, leg in ipairs(legs) do
    for part, q0 in pairs(stand) do
      local j = leg .. "_" .. part .. "_joint"
      w:set_actuation(j, P.kp * (q0 - w:coord(j)))
    end
  end
end)
if P.csv ~= "" then
  local ch = { "time", "energy", "contact_force", "contacts_active", "penetration", "base.position" }
  for _, f in ipairs(feet) do ch[#ch + 1] = f .. ".point" end
  w:output { file = P.csv, every = 10, channels = ch }
end
return w
