-- A box or a ball on a slope (docs/contact.md). Gravity is tilted by theta about y, which is the
-- same as a plane tilted by theta. A box with tan(theta) < mu sticks (no creep); steeper, it slides
-- at g (sin - mu cos). A ball rolls without slipping at 5/7 g sin when mu >= 2/7 tan(theta), else
-- it slides and spins up at 5/2 mu g cos / r.
local noether = require("noether")

local P = noether.params { theta = 0.35, mu = 0.5, object = "box", dt = 0.01, duration = 1, csv = "" }

local g = 9.81
local w = noether.world { dt = P.dt, duration = P.duration,
                          gravity = { -g * math.sin(P.theta), 0, -g * math.cos(P.theta) } }
local b
if P.object == "box" then
  b = w:body { name = "body", mass = 1, inertia = noether.inertia.box(1, 1, 1, 1), position = { 0, 0, 0.5 },
               shape = { type = "box", size = { 1, 1, 1 } } }
  w:contact { body = b, shape = "box", size = { 1, 1, 1 }, mu = P.mu }
elseif P.object == "ball" then
  b = w:body { name = "body", mass = 1, inertia = noether.inertia.sphere(1, 0.2), position = { 0, 0, 0.2 },
               shape = { type = "sphere", radius = 0.2 } }
  w:contact { body = b, shape = "sphere", radius = 0.2, mu = P.mu }
else
  error("object must be \"box\" or \"ball\", got \"" .. P.object .. "\"")
end
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "body.position", "body.velocity", "body.angular_velocity" } }
end
return w
