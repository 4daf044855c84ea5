-- Paper 004's double spherical pendulum (Wendlandt & Marsden §5.2): point masses m1 = 2 kg and
-- m2 = 3.5 kg on massless rods l1 = 4 m and l2 = 3 m, g = 9.81; the paper's initial data, z
-- from the constraints with both masses below their pivots. Each mass is a body with a tiny
-- inertia eps * m * l^2 (a point mass to O(eps)); the rod is the body-fixed offset from the
-- mass to a ball joint (world origin for mass 1, mass 1 for mass 2).
local noether = require("noether")

local P = noether.params { eps = 1e-6, dt = 0.01, duration = 30, integrator = "vi-maximal", solver = "auto", csv = "" }

local m1, m2, l1, l2 = 2.0, 3.5, 4.0, 3.0
local x1, y1, x2, y2 = 2.820, 0.025, 5.085, 0.105
local vx1, vy1, vx2, vy2 = 3.381, 2.506, 2.497, 10.495
local z1 = -math.sqrt(l1 ^ 2 - x1 ^ 2 - y1 ^ 2)
local dx, dy = x2 - x1, y2 - y1
local dz = -math.sqrt(l2 ^ 2 - dx ^ 2 - dy ^ 2)
local z2 = z1 + dz
local vz1 = -(x1 * vx1 + y1 * vy1) / z1
local vz2 = vz1 - (dx * (vx2 - vx1) + dy * (vy2 - vy1)) / dz

-- Orientation whose body x axis points along the rod (from the pivot to the mass), and the
-- angular velocity that moves the mass with the given relative velocity, without spin.
local function rod_frame(u, v)
  local n = math.sqrt(u[1] ^ 2 + u[2] ^ 2 + u[3] ^ 2)
  local e = { u[1] / n, u[2] / n, u[3] / n }
  local axis = { 0 * e[3] - 0 * e[2], 0 * e[1] - 1 * e[3], 1 * e[2] - 0 * e[1] }  -- x cross e
  local s = math.sqrt(axis[1] ^ 2 + axis[2] ^ 2 + axis[3] ^ 2)
  local q = s < 1e-12 and { 1, 0, 0, 0 } or { axis = axis, angle = math.atan(s, e[1]) }
  local omega = { (u[2] * v[3] - u[3] * v[2]) / n ^ 2, (u[3] * v[1] - u[1] * v[3]) / n ^ 2,
                  (u[1] * v[2] - u[2] * v[1]) / n ^ 2 }
  return q, omega
end

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local q1, w1 = rod_frame({ x1, y1, z1 }, { vx1, vy1, vz1 })
local q2, w2 = rod_frame({ dx, dy, dz }, { vx2 - vx1, vy2 - vy1, vz2 - vz1 })
local mass1 = w:body { name = "mass1", mass = m1, inertia = { P.eps * m1 * l1 ^ 2, P.eps * m1 * l1 ^ 2, P.eps * m1 * l1 ^ 2 },
                       position = { x1, y1, z1 }, orientation = q1, velocity = { vx1, vy1, vz1 }, angular_velocity = w1 }
local mass2 = w:body { name = "mass2", mass = m2, inertia = { P.eps * m2 * l2 ^ 2, P.eps * m2 * l2 ^ 2, P.eps * m2 * l2 ^ 2 },
                       position = { x2, y2, z2 }, orientation = q2, velocity = { vx2, vy2, vz2 }, angular_velocity = w2 }
w:joint { name = "pivot", type = "spherical", parent = w.world, child = mass1, anchor = { 0, 0, 0 } }
w:joint { name = "elbow", type = "spherical", parent = mass1, child = mass2, anchor = { x1, y1, z1 } }
if P.csv ~= "" then
  w:output { file = P.csv, every = 10, channels = { "time", "energy", "angular_momentum", "mass1.position", "mass2.position" } }
end
return w
