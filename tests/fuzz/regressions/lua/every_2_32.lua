-- Was SIGFPE: 'every' truncated to 0, then a modulo by zero.
local noether = require("noether")
local w = noether.world { dt = 0.01 }
local b = w:body { name = "b", mass = 1, inertia = { 1, 1, 1 } }
w:output { every = 4294967296, callback = function() end }
w:run { steps = 3 }
