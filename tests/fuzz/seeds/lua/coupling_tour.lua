local noether = require("noether")
local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.01, max_substeps = 4, max_iterations = 20 }
local rod = w:body { name = "rod", mass = 1, inertia = { 0.01, 0.09, 0.09 }, position = { 0.5, 0, 0 } }
local rotor = w:body { name = "rotor", mass = 0.1, inertia = { 0.002, 0.002, 0.002 }, position = { 0, 0, 0 } }
local tip = w:body { name = "tip", mass = 0.5, inertia = { 0.01, 0.01, 0.01 }, position = { 1.5, 0, 0 } }
w:joint { name = "j", type = "revolute", parent = w.world, child = rod, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 } }
w:joint { name = "m", type = "revolute", parent = w.world, child = rotor, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 } }
w:joint { name = "c", type = "compound", parent = rod, child = tip, anchor = { 1, 0, 0 },
          kinds = { 0, 0 }, axes = { 0, 1, 0, 0, 0, 1 }, lower = { -1, -0.2 }, upper = { 1, 0.2 } }
w:coupling { name = "gear", joint = "m", leader = "j", ratio = 6 }
w:coupling { name = "band", joint = "c", dof = 1, leader = "j", lower = -0.5, upper = 0.5 }
w:step(20)
print(w:coord("m"), w:coupling_force("gear"), w:coupling_force("band"), w:limit_force("c")[2])
