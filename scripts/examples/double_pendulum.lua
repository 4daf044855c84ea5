-- The double pendulum of maximal-vi.md §10 recipe 8: two 1 m boxes of 1 kg (1 x 0.1 x 0.1 m),
-- hinges along y at the world origin and at the shared end, released horizontally at rest.
local noether = require("noether")
local chains = require("lib.chains")

local P = noether.params { dt = 0.01, duration = 20, integrator = "vi-maximal", solver = "auto", csv = "" }

local w = noether.world { gravity = { 0, 0, -9.81 }, dt = P.dt, integrator = P.integrator, solver = P.solver }
chains.pendulum(w, { n = 2, joint = "revolute" })

if P.csv ~= "" then
  w:output { file = P.csv, every = 1, channels = { "time", "energy", "violation", "j1.coord", "j2.coord" } }
end

w:run { duration = P.duration }
return w
