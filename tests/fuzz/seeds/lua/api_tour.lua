local noether = require("noether")
local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.02, max_substeps = 4, max_iterations = 20 }
local a = w:body { name = "a", mass = 1, inertia = { 0.1, 0.2, 0.3 }, position = { 0.5, 0, 0 } }
local b = w:body { name = "b", mass = 2, inertia = noether.inertia.box(2, 1, 0.1, 0.1), position = { 1.5, 0, 0 },
                   orientation = { rpy = { 0, 0.2, 0 } } }
w:joint { name = "j1", type = "revolute", parent = w.world, child = a, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 },
          damping = 0.1, stiffness = 1 }
w:joint { name = "j2", type = "spherical", parent = a, child = b, anchor = { 1, 0, 0 } }
w:force { body = "b", force = { 0, 0, 1 } }
w:on_step(function(w) w:set_actuation("j1", 0.1 * math.sin(w:time())) end)
w:output { file = "tour.csv", every = 2, channels = { "time", "energy", "j2.coord", "b.position" } }
w:step(3)
local s = w:save()
w:run { steps = 5 }
w:restore(s)
local m = w:monitors()
print(m.energy, w:coord("j1"), w:summary().steps)
