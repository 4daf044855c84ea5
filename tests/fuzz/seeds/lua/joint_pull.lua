local noether = require("noether")
-- Chains pulled hard by their joints (strong gravity): most steps need substeps, and the watch
-- names the links' swing under the pull (joint_force_mode) — hinges, ball joints, a weld and a slider.
for _, kind in ipairs({ "revolute", "spherical", "mixed" }) do
  local w = noether.world { gravity = { 0, 0, -600 }, dt = 0.01, integrator = "vi-maximal" }
  local parent = w.world
  for k = 1, 24 do
    local b = w:body { name = "l" .. k, mass = 1, inertia = { 0.0017, 0.084, 0.084 }, position = { k - 0.5, 0, 0 } }
    local t = kind
    if kind == "mixed" then t = (k == 7 and "fixed") or (k == 13 and "prismatic") or (k % 2 == 0 and "spherical" or "revolute") end
    local j = { name = "j" .. k, type = t, parent = parent, child = b, anchor = { k - 1, 0, 0 } }
    if t == "revolute" or t == "prismatic" then j.axis = { 0, 1, 0 } end
    w:joint(j)
    parent = b
  end
  w:step(230)
  local s = w:summary()
  print(kind, w:time(), s.subdivided_steps, #s.warnings)
  for _, m in ipairs(s.warnings) do print(m) end
end
