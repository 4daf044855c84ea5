local noether = require("noether")
-- Thin links on ball joints, spinning: riqn's RIQN update stalls and the O(n) exact step takes
-- over; the same chain with newton = "exact" and "dense".
for _, newton in ipairs({ "riqn", "exact", "dense" }) do
  local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.01, integrator = "riqn", options = { newton = newton } }
  local parent = w.world
  for k = 1, 6 do
    local b = w:body { name = "l" .. k, mass = 1, inertia = { 1e-4, 0.08, 0.08 }, position = { k - 0.5, 0, 0 },
                       angular_velocity = { 0, 0, 1 }, velocity = { 0, k - 0.5, 0 } }
    w:joint { name = "j" .. k, type = "spherical", parent = parent, child = b, anchor = { k - 1, 0, 0 } }
    parent = b
  end
  w:step(60)
  local s = w:summary()
  print(newton, w:time(), s.failed_steps, s.newton_mean)
end
