-- Paper 004's free rigid body (Wendlandt & Marsden, Table 1): J = diag(1, 2, 3), body angular
-- velocity (0, 3, 4) at the identity orientation, no gravity. Energy 33 J; the angular
-- momentum (0, 6, 12) is constant in the world frame.
local noether = require("noether")

local P = noether.params { dt = 0.01, duration = 30, integrator = "vi-maximal", solver = "auto", csv = "" }

local w = noether.world { gravity = { 0, 0, 0 }, dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
w:body { name = "body", mass = 1, inertia = { 1, 2, 3 }, angular_velocity = { 0, 3, 4 },
         angular_velocity_frame = "body" }
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "angular_momentum", "body.orientation" } }
end
return w
