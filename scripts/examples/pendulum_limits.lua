-- A pendulum swung into its joint limits (docs/contact.md): a 0.1 x 0.1 x 1 m box of 1 kg hanging
-- from a hinge, started at 4 rad/s (free amplitude 1.10 rad) between stops at +-0.5 rad. Each stop
-- is exact (no overshoot) and inelastic; the joint's limit force is a channel.
local noether = require("noether")

local P = noether.params { lower = -0.5, upper = 0.5, omega = 4.0, dt = 0.01, duration = 3, csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration }
local bob = w:body { name = "bob", mass = 1, inertia = noether.inertia.box(1, 0.1, 0.1, 1), position = { 0, 0, -0.5 },
                     angular_velocity = { 0, P.omega, 0 }, velocity = { -0.5 * P.omega, 0, 0 } }
w:joint { name = "hinge", type = "revolute", parent = w.world, child = bob, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 },
          lower = P.lower, upper = P.upper }
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "hinge.coord", "hinge.rate", "hinge.limit_force" } }
end
return w
