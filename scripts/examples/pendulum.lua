-- A single pendulum: a 1 m box of 1 kg hinged at one end (axis y), released horizontally.
local noether = require("noether")
local chains = require("lib.chains")

local P = noether.params { dt = 0.01, duration = 10, integrator = "vi-maximal", solver = "auto", csv = "" }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
chains.pendulum(w, { n = 1 })
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "j1.coord", "j1.rate" } }
end
return w
