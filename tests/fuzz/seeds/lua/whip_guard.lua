local noether = require("noether")
-- A chain at a coarse step: the watch sees its energy grow and the whip guard substeps the rest.
for _, integrator in ipairs({ "vi-maximal", "riqn" }) do
  local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.04, integrator = integrator, max_substeps = 8 }
  local parent = w.world
  for k = 1, 5 do
    local b = w:body { name = "l" .. k, mass = 1, inertia = { 0.001, 0.08, 0.08 }, position = { k - 0.5, 0, 0 } }
    w:joint { name = "j" .. k, type = "revolute", parent = parent, child = b, anchor = { k - 1, 0, 0 }, axis = { 0, 1, 0 } }
    parent = b
  end
  w:step(150)
  local s = w:summary()
  print(integrator, w:time(), s.failed_steps, #s.warnings)
end
