-- Was a null dereference: state access before the first step or compile.
local noether = require("noether")
local w = noether.world { dt = 0.01 }
local b = w:body { name = "b", mass = 1, inertia = { 1, 1, 1 } }
print(w:position("b")[1], w:velocity("b")[1], w:orientation("b")[1])
