-- A gain study on an ensemble: the two-link arm of driven_arm.lua, its shoulder PD-controlled to
-- track a sine, run at once for a range of proportional gains (critically damped derivative
-- gains) and elbow dampings. Each member is one run of the same compiled Model with its own
-- numbers (m:vary) and its own controller gains; the members step in parallel on every core.
-- Records, per member, the largest tracking error after the transient and the energy the
-- controller put in; prints a table.
local noether = require("noether")

local P = noether.params { members = 8, kp_min = 25, kp_ratio = 2, amplitude = 0.5, frequency = 0.5, dt = 0.005,
                           duration = 6, threads = 0, integrator = "vi-maximal", quiet = 0 }

local w = noether.world { dt = P.dt, integrator = P.integrator }
local y = { 0, 1, 0 }
local upper = w:body { name = "upper", mass = 2, inertia = noether.inertia.box(2, 0.1, 0.1, 0.6), position = { 0, 0, -0.3 } }
local fore = w:body { name = "fore", mass = 1, inertia = noether.inertia.box(1, 0.08, 0.08, 0.5), position = { 0, 0, -0.85 } }
w:joint { name = "shoulder", type = "revolute", parent = w.world, child = upper, anchor = { 0, 0, 0 }, axis = y }
w:joint { name = "elbow", type = "revolute", parent = upper, child = fore, anchor = { 0, 0, -0.6 }, axis = y, damping = 0.2 }

local K = P.members
local e = w:ensemble { members = K, threads = P.threads }
local kp, kd = {}, {}
for i = 1, K do
  kp[i] = P.kp_min * P.kp_ratio ^ (i - 1)
  kd[i] = 2 * math.sqrt(kp[i] * 0.6)   -- critical damping for the shoulder's inertia of about 0.6 kg m^2
  e:member(i):vary { ["elbow.damping"] = 0.2 * (1 + (i - 1) % 2) }  -- odd members 0.2, even 0.4
end

local omega = 2 * math.pi * P.frequency
local settle = math.min(2, P.duration / 2)  -- the transient, left out of the error
local max_error = {}
for i = 1, K do max_error[i] = 0 end
e:controller(function(m, i)
  local t = m:time()
  local target, target_rate = P.amplitude * math.sin(omega * t), P.amplitude * omega * math.cos(omega * t)
  local q, qd = m:coord("shoulder"), m:rate("shoulder")
  m:set_actuation("shoulder", kp[i] * (target - q) + kd[i] * (target_rate - qd))
  if t > settle then max_error[i] = math.max(max_error[i], math.abs(target - q)) end
end)

e:run { duration = P.duration }

if P.quiet == 0 then print(string.format("%6s %9s %8s %8s %12s", "member", "kp", "kd", "elbow d", "max error")) end
for i = 1, K do
  local m = e:member(i)
  local failure = m:failure()
  if failure then error(string.format("member %d failed: %s", i, failure)) end
  noether.record("max_error_" .. i, max_error[i])
  noether.record("kp_" .. i, kp[i])
  if P.quiet == 0 then
    print(string.format("%6d %9.1f %8.2f %8.1f %12.3e", i, kp[i], kd[i], 0.2 * (1 + (i - 1) % 2), max_error[i]))
  end
end
noether.record("hash", e:hash())
