-- Run by a stock lua5.4 with LUA_CPATH=<build>/lib/lua/5.4/?.so: the module loads without the
-- noether command, builds a pendulum, runs it and checks its physics.
local noether = require "noether"
assert(type(noether.version) == "string", "version")
local w = noether.world { gravity = { 0, 0, -9.81 }, dt = 0.01 }
local bob = w:body { name = "bob", mass = 1, inertia = { 1e-3, 1e-3, 1e-3 }, position = { 1, 0, 0 } }
w:joint { name = "j", type = "revolute", parent = w.world, child = bob, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 } }
local s = w:run { duration = 2 }
assert(s.steps == 200, "steps " .. tostring(s.steps))
assert(s.max_violation < 1e-12, "violation " .. s.max_violation)
assert(s.energy_max_abs_dev < 0.2 and s.energy_max_abs_dev > 0, "energy " .. s.energy_max_abs_dev)
-- released horizontally, the bob swings down: after 2 s it has moved by more than a radian
assert(math.abs(w:coord("j")) > 0.1, "the pendulum moved")
print("stock lua: ok")
