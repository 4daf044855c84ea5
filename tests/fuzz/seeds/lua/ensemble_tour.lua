local noether = require("noether")
local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.02 }
local a = w:body { name = "a", mass = 1, inertia = { 0.1, 0.2, 0.3 }, position = { 0.5, 0, 0 } }
w:joint { name = "j1", type = "revolute", parent = w.world, child = a, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 }, damping = 0.1 }
local e = w:ensemble { members = 3, threads = 2 }
e:member(2):vary { ["a.mass"] = 2, dt = 0.01, ["j1.damping"] = { 0.3 }, gravity = { 0, 0, -1 } }
e:member(3):output { file = "m3.csv", every = 2, channels = { "time", "energy" } }
e:controller(function(m, i) if i == 1 and m:time() > 0.05 then error("x") end m:set_actuation("j1", 0.1) end)
print(e:steps(5), e:member(1):failure())
e:controller(nil)
e:run { duration = 0.1 }
print(e:hash(), e:failures(), e:member(2):summary().steps, e:member(3):coord("j1"), e:threads(1))
local s = e:member(2):save()
e:member(3):restore(s)
print(e:finish()[1], e:member(3):monitors().energy)
