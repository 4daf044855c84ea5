local noether = require("noether")
-- Far from the world origin and wound up many turns: riqn and vi-galerkin move their tree view to a
-- local origin (a floating base's too, for riqn), every integrator closes joints to the resolution of
-- their positions, and joint angles thousands of turns out converge; the remembered subdivision
-- (option substep_hold) of riqn, vi-galerkin and vi-maximal, saved and restored inside a hold; bad
-- substep_hold values (a fraction, a list).
local function chain(integrator, off, opts, n, dt)
  local w = noether.world { dt = dt or 0.01, integrator = integrator, options = opts }
  local parent = w.world
  for k = 1, n do
    local b = w:body { name = "l" .. k, mass = 1, inertia = { 0.01, 0.08, 0.08 }, position = { off + k - 0.5, -off, 0 } }
    w:joint { name = "j" .. k, type = "revolute", parent = parent, child = b, anchor = { off + k - 1, -off, 0 }, axis = { 0, 1, 0 } }
    parent = b
  end
  return w
end
for _, integrator in ipairs { "riqn", "vi-galerkin", "vi-midpoint", "vi-maximal", "dp45-projection" } do
  for _, off in ipairs { 0, 1e5, 1e6 } do
    local w = chain(integrator, off, {}, 2)
    print(integrator, off, w:step(30), w:coord("j2"))
  end
end
for _, integrator in ipairs { "riqn", "vi-galerkin" } do
  local w = chain(integrator, 0, {}, 2)
  w:compile()
  local k = 2 * math.pi * 1e4
  w:set_joint_state({ 0.3 + k, -0.2 + k }, { 1, -0.5 })
  print(integrator, w:step(20), w:coord("j1") - k)
end
local w = noether.world { dt = 0.01, integrator = "riqn", gravity = { 0, 0, 0 } }
local a = w:body { name = "a", mass = 1, inertia = { 0.1, 0.2, 0.3 }, position = { 1e5, 0, 0 }, velocity = { 1, 0.5, 0 }, angular_velocity = { 0.3, 2, 1 } }
local b = w:body { name = "b", mass = 0.5, inertia = { 0.05, 0.02, 0.04 }, position = { 1e5 + 1, 0, 0 }, velocity = { 1, 1.5, -2 }, angular_velocity = { 0.3, 2, 1 } }
w:joint { name = "h", type = "revolute", parent = a, child = b, anchor = { 1e5 + 0.5, 0, 0 }, axis = { 0, 0, 1 } }
print(w:step(20), w:position("a")[1])
for _, integrator in ipairs { "riqn", "vi-galerkin", "vi-maximal" } do
  for _, hold in ipairs { 0, 1, 4 } do
    local c = chain(integrator, 0, { substep_hold = hold }, 12, 0.05)
    c:step(60)
    local s = c:save()
    c:step(5)
    local p = c:position("l12")
    c:restore(s)
    c:step(5)
    print(integrator, hold, p[1] == c:position("l12")[1], c:monitors().newton)
  end
  print(pcall(function() chain(integrator, 0, { substep_hold = 1.5 }, 1):step(1) end))
  print(pcall(function() chain(integrator, 0, { substep_hold = { "long" } }, 1):step(1) end))
end
