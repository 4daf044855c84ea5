-- Overflowing vectors, numeric strings and a duration that is no number of steps.
local noether = require("noether")
local w = noether.world { dt = 0.01, max_substeps = 2 ^ 31 }
local b = w:body { name = "b", mass = 1, inertia = { 1, 1, 1 }, velocity = { 1e308, 1e308, 0 } }
w:run { duration = 1e300 }
