-- A stack of k spheres on the ground (docs/contact.md): each contact carries the weight above it,
-- (k - i) m g, exactly, and the stack stands still (no drift, no sinking) for as long as it runs.
local noether = require("noether")

local P = noether.params { k = 5, radius = 0.1, mu = 0.5, dt = 0.01, duration = 10, csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration }
local r = P.radius
local I = 0.4 * r * r
local prev
for i = 1, P.k do
  local b = w:body { name = "s" .. i, mass = 1, inertia = { I, I, I }, position = { 0, 0, r + 2 * r * (i - 1) },
                     shape = { type = "sphere", radius = r } }
  if prev then
    w:contact { name = "c" .. i, body = b, shape = "sphere", radius = r, mu = P.mu, other = prev, other_radius = r }
  else
    w:contact { name = "c1", body = b, shape = "sphere", radius = r, mu = P.mu }
  end
  prev = b
end
if P.csv ~= "" then
  local ch = { "time", "contact_force" }
  for i = 1, P.k do ch[#ch + 1] = "c" .. i .. ".normal_force" end
  ch[#ch + 1] = "s" .. P.k .. ".position"
  w:output { file = P.csv, channels = ch }
end
return w
