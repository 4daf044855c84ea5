local noether = require("noether")
local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.01, max_substeps = 4, max_iterations = 20 }
for k = 1, 3 do
  local b = w:body { name = "r" .. k, mass = 0.5, inertia = { 0.02 + 0.01 * k, 0.02 + 0.01 * k, 0.02 + 0.01 * k }, position = { 0.3 * k, 0, 0 } }
  w:joint { name = "r" .. k, type = "revolute", parent = w.world, child = b, anchor = { 0.3 * k, 0, 0 }, axis = { 0, 0, 1 } }
end
w:coupling { name = "diff", joint = "r3", leader = "r1", ratio = 0.5, more = { { joint = "r2", ratio = -0.25, dof = 1 } } }
w:set_actuation("r1", 0.2)
w:step(20)
print(w:coord("r3"), w:coupling_force("diff"))
