-- The n-link pendulum of the benchmark (bench/chain_scaling): links are 1 x 0.1 x 0.1 m boxes of
-- 1 kg, joints at the link ends, all horizontal along +x at rest; revolute axes along y, or ball
-- joints with the whole chain spinning at 1 rad/s about z.
--   noether run chain.lua --set n=32 --set joint=ball
local noether = require("noether")
local chains = require("lib.chains")

local P = noether.params { n = 8, joint = "revolute", dt = 0.01, duration = 10, integrator = "vi-maximal",
                           solver = "auto", csv = "" }
if P.joint ~= "revolute" and P.joint ~= "ball" then
  error("chain.lua: parameter 'joint' must be revolute or ball, got " .. tostring(P.joint))
end

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local ball = P.joint == "ball"
chains.pendulum(w, { n = P.n, joint = ball and "spherical" or "revolute", spin = ball and 1 or 0 })
if P.csv ~= "" then
  w:output { file = P.csv, every = 10, channels = { "time", "energy", "violation", "newton", "link" .. P.n .. ".position" } }
end
return w
