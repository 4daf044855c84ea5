-- Newton's cradle without strings (docs/contact.md): n - 1 touching spheres at rest and one more
-- arriving at v0, in free space. Sphere-sphere contacts are perfectly inelastic in this method (no
-- restitution), so the impact is plastic: every sphere leaves at v0 / n and momentum is kept.
local noether = require("noether")

local P = noether.params { n = 5, radius = 0.1, v0 = 1.0, dt = 0.01, duration = 1, csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration, gravity = { 0, 0, 0 } }
local r = P.radius
local I = 0.4 * r * r
local balls = {}
for i = 1, P.n do
  local x = i == 1 and -3 * r or 2 * r * (i - 2)
  balls[i] = w:body { name = "ball" .. i, mass = 1, inertia = { I, I, I }, position = { x, 0, 0 },
                      velocity = { i == 1 and P.v0 or 0, 0, 0 }, shape = { type = "sphere", radius = r } }
end
for i = 2, P.n do
  w:contact { name = "touch" .. i, body = balls[i], shape = "sphere", radius = r, other = balls[i - 1], other_radius = r }
end
if P.csv ~= "" then
  local ch = { "time", "momentum" }
  for i = 1, P.n do ch[#ch + 1] = "ball" .. i .. ".velocity" end
  w:output { file = P.csv, channels = ch }
end
return w
