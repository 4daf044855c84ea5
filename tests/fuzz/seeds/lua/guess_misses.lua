local noether = require("noether")
-- riqn's and vi-galerkin's guesses that add their last misses: save in the middle of a run,
-- restore into the same world and step again (the misses are part of the saved state), a host
-- edit between steps (a restart forgets them), and a truncated state string. riqn's secant pairs
-- (option secants) likewise.
local cases = { { "riqn", { guess = "feedback" } }, { "riqn", { guess = "momentum", secants = 0 } },
                { "riqn", { secants = 4 } }, { "riqn", { secants = 1, guess = "position" } },
                { "vi-galerkin", { guess = "feedback", points = 2 } }, { "vi-galerkin", { guess = "polynomial", points = 3 } } }
for _, c in ipairs(cases) do
  local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.005, integrator = c[1], options = c[2] }
  local parent = w.world
  for k = 1, 4 do
    local b = w:body { name = "l" .. k, mass = 1, inertia = { 0.01, 0.08, 0.08 }, position = { k - 0.5, 0, 0 } }
    w:joint { name = "j" .. k, type = "revolute", parent = parent, child = b, anchor = { k - 1, 0, 0 }, axis = { 0, 1, 0 } }
    parent = b
  end
  w:step(40)
  local s = w:save()
  w:step(20)
  local a = w:position("l4")
  w:restore(s)
  w:step(20)
  local b = w:position("l4")
  print(c[1], a[1] == b[1] and a[3] == b[3])
  w:set_joint_state({ 0.3, 0.1, -0.2, 0.4 }, { 0, 0, 0, 0 })
  w:step(10)
  print(pcall(w.restore, w, string.sub(s, 1, #s - 9)))
end
print(pcall(function()
  local w = noether.world { integrator = "riqn", options = { secants = 5 } }
  local b = w:body { name = "b", mass = 1, inertia = { 0.01, 0.08, 0.08 }, position = { 0.5, 0, 0 } }
  w:joint { name = "j", type = "revolute", parent = w.world, child = b, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 } }
  w:step(1)
end))
