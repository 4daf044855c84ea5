-- A 1 m cube of 1 kg on the ground (docs/contact.md): dropped from a height (it lands flat, loses
-- its kinetic energy and rests without sinking) or thrown along the ground (it slides to a stop
-- after v0²/(2 μ g), its load shifted to the front corners by the friction moment). Its 8 corners
-- are contact points; μ is the only contact parameter.
local noether = require("noether")

local P = noether.params { mode = "drop", height = 1.0, speed = 2.0, heading = 0.0, mu = 0.5, dt = 0.01,
                           duration = 1.5, csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration }
local drop = P.mode == "drop"
if not drop and P.mode ~= "slide" then error("mode must be \"drop\" or \"slide\", got \"" .. P.mode .. "\"") end
local v = drop and { 0, 0, 0 } or { P.speed * math.cos(P.heading), P.speed * math.sin(P.heading), 0 }
local box = w:body { name = "box", mass = 1, inertia = noether.inertia.box(1, 1, 1, 1),
                     position = { 0, 0, 0.5 + (drop and P.height or 0) }, velocity = v,
                     shape = { type = "box", size = { 1, 1, 1 } } }
w:contact { name = "corner", body = box, shape = "box", size = { 1, 1, 1 }, mu = P.mu }
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "box.position", "box.velocity", "contact_force",
                                        "penetration", "contacts_active", "corner/1.normal_force",
                                        "corner/2.normal_force", "corner/2.friction" } }
end
return w
