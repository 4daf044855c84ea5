-- A UR5 arm (shared models) driven into its URDF joint limits (docs/contact.md): a P controller
-- (with each joint's implicit damper as the D part) sends the elbow towards 3.5 rad, beyond its
-- +-pi limit, and the wrist past its -2 pi one. The joints stop exactly at their limits and press
-- against them: the limit forces (channels <joint>.limit_force) hold what the controller pushes.
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { dt = 0.002, duration = 3, kp = 200, damping = 5, elbow = 3.5, wrist = -7.0, csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration }
w:urdf { file = models.path("example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"), base = "fixed",
         damping = P.damping, positions = { shoulder_lift_joint = -1.2, elbow_joint = 1.0 } }
local targets = { shoulder_pan_joint = 0, shoulder_lift_joint = -1.2, elbow_joint = P.elbow, wrist_1_joint = P.wrist,
                  wrist_2_joint = 0, wrist_3_joint = 0 }
w:on_step(function(w)
  for j, q0 in pairs(targets) do w:set_actuation(j, P.kp * (q0 - w:coord(j))) end
end)
if P.csv ~= "" then
  w:output { file = P.csv, every = 5, channels = { "time", "energy", "elbow_joint.coord", "elbow_joint.limit_force",
                                                   "wrist_1_joint.coord", "wrist_1_joint.limit_force" } }
end
return w
