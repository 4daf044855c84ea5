-- Was a use-after-free: a hand-called finalizer freed the world the host still used.
local noether = require("noether")
local w = noether.world { dt = 0.01 }
local b = w:body { name = "b", mass = 1, inertia = { 1, 1, 1 } }
w:run { steps = 2 }
local mt = getmetatable(w)
if type(mt) == "table" and mt.__gc then mt.__gc(w) end
collectgarbage()
w:step()
