-- Paper 003's planar quadrangle (Tuomela, Arponen & Normi §6.2.2, Tables 2-4): three steel bars
-- and the ground joined by a revolute, a spherical, a cylindrical and a revolute joint (17
-- constraint rows, one degree of freedom); gravity along -y; a constant torque of -1200 N m
-- about z on body 1; at rest. The printed 3-decimal quaternions are turned into exact angles
-- about z, and each joint is placed at its point on the first body.
local noether = require("noether")
local integrators = require("lib.integrators")

local P = noether.params { torque = -1200, dt = 0.01, duration = 10, integrator = "vi-maximal", solver = "auto", csv = "",
                           tol = 1e-8, invariant = false }

-- dp45-projection takes the paper's step-size control settings (lib/integrators.lua).
local w = noether.world { gravity = { 0, -9.81, 0 }, dt = P.dt, duration = P.duration, integrator = P.integrator,
                          solver = P.solver, options = integrators.options(P) }
local z = { 0, 0, 1 }
local function about_z(qw, qz) return 2 * math.atan(qz, qw) end
local bodies = {
  { "body1", 78.10, { 0.08, 26.05, 26.1 }, { 0.500, 0.866, 0 }, about_z(0.866, 0.500) },
  { "body2", 156.20, { 0.16, 208.3, 208.4 }, { 2.824, 2.553, 0 }, about_z(0.978, 0.210) },
  { "body3", 156.20, { 0.16, 208.3, 208.4 }, { 3.574, 1.687, 0 }, about_z(0.877, 0.481) },
}
local B, angle, center = {}, {}, {}
for i, b in ipairs(bodies) do
  B[i] = w:body { name = b[1], mass = b[2], inertia = b[3], position = b[4],
                  orientation = { axis = z, angle = b[5] } }
  angle[i], center[i] = b[5], b[4]
end
-- A point given in body i's frame (in the plane), in world coordinates.
local function at(i, x) return { center[i][1] + x * math.cos(angle[i]), center[i][2] + x * math.sin(angle[i]), 0 } end
w:joint { name = "ground_1", type = "revolute", parent = w.world, child = B[1], anchor = { 0, 0, 0 }, axis = z }
w:joint { name = "ball_12", type = "spherical", parent = B[1], child = B[2], anchor = at(1, 1.0) }
w:joint { name = "cyl_23", type = "cylindrical", parent = B[2], child = B[3], anchor = at(2, 2.0), axis = z }
-- The paper's fourth joint is "body 3 to ground"; a joint's child must be a body, so the ground is the parent.
w:joint { name = "ground_3", type = "revolute", parent = w.world, child = B[3], anchor = at(3, -2.0), axis = z }
w:force { body = B[1], torque = { 0, 0, P.torque } }
if P.csv ~= "" then
  w:output { file = P.csv, channels = { "time", "energy", "kinetic", "potential", "violation", "ground_1.coord" } }
end
return w
