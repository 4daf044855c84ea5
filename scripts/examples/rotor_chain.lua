-- A three-link arm with a geared rotor at every joint, read from generalized_rbda's URDF
-- (../shared/models): each rotor's joint is coupled to its link's by the file's <coupling> gear
-- ratio 6 (docs/couplings.md), so the six revolute joints leave 3 degrees of freedom and each light
-- rotor (1e-4 kg m²) weighs on its joint like 36 times its inertia. The arm lies in the x-y plane
-- with its joints about z, so gravity here points along -y; it swings from its straight pose.
--
--   noether run scripts/examples/rotor_chain.lua     (prints the largest gear-ratio error)
-- couplings = false imports the rotors uncoupled (for the integrators that do not take couplings):
-- they then turn freely on their bearings and the links swing as if the rotors were not there.
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { dt = 0.005, duration = 10, integrator = "vi-maximal", couplings = true, csv = "", quiet = 0 }

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, gravity = { 0, -9.81, 0 } }
local arm = w:urdf { file = models.path("generalized_rbda/robot-models/revolute_rotor_chain.urdf"), base = "fixed",
                     limits = false, couplings = P.couplings }

local worst, e0, drift = 0, nil, 0
w:on_step(function(w)
  for k = 1, 3 do
    worst = math.max(worst, math.abs(w:coord("joint" .. k .. "r") - 6 * w:coord("joint" .. k)))
  end
  local e = w:monitors().energy
  e0 = e0 or e
  drift = math.max(drift, math.abs(e - e0))
end)
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "joint1.coord", "joint1r.coord", "joint3.coord", "joint3r.coord" } }
end
w:run { duration = P.duration }
if P.quiet == 0 then
  print(string.format("couplings %d; largest |rotor - 6 x link|: %.3g rad; energy within %.3g J", arm.couplings, worst, drift))
end
noether.record("ratio_error", worst)
noether.record("energy_deviation", drift)
noether.record("couplings", arm.couplings)
