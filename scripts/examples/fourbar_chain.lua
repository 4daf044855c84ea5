-- A chain of four-link closed loops (paper 000, Fig. 6): each segment is a rhombus of four 1 m
-- links joined by hinges (axes along y); segment k hangs from the bottom vertex of segment k-1,
-- the first one from the world. The chain starts tilted and swings down; the rhombi fold through
-- configurations where links overlap, which minimal-coordinate methods find hard.
--   noether run fourbar_chain.lua --set segments=5
local noether = require("noether")

local P = noether.params { segments = 3, tilt = 60, dt = 0.01, duration = 10, integrator = "vi-maximal",
                           solver = "auto", csv = "" }
if P.segments < 1 then error("fourbar_chain.lua: parameter 'segments' must be at least 1") end

local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local l, half = 1.0, math.rad(40)            -- link length, rhombus half-angle
local tilt = math.rad(P.tilt)                 -- chain axis from the downward vertical
local d = { math.sin(tilt), 0, -math.cos(tilt) }  -- along the chain
local p = { math.cos(tilt), 0, math.sin(tilt) }   -- across the chain (in the x-z plane)
local y = { 0, 1, 0 }
local inertia = noether.inertia.box(1, l, 0.1, 0.1)

local function add(a, s, b) return { a[1] + s * b[1], a[2] + s * b[2], a[3] + s * b[3] } end
-- A link from point u to point v: a box whose body x axis points from u to v.
local function link(name, u, v)
  local dx, dz = v[1] - u[1], v[3] - u[3]
  return w:body { name = name, mass = 1, inertia = inertia,
                  position = { (u[1] + v[1]) / 2, 0, (u[3] + v[3]) / 2 },
                  orientation = { axis = y, angle = math.atan(-dz, dx) } }
end

local top, above = { 0, 0, 0 }, w.world
for k = 1, P.segments do
  local left = add(add(top, l * math.cos(half), d), l * math.sin(half), p)
  local right = add(add(top, l * math.cos(half), d), -l * math.sin(half), p)
  local bottom = add(top, 2 * l * math.cos(half), d)
  local a = link("s" .. k .. "_a", top, left)
  local b = link("s" .. k .. "_b", top, right)
  local c = link("s" .. k .. "_c", left, bottom)
  local e = link("s" .. k .. "_d", right, bottom)
  w:joint { name = "s" .. k .. "_top_a", type = "revolute", parent = above, child = a, anchor = top, axis = y }
  w:joint { name = "s" .. k .. "_top_b", type = "revolute", parent = above, child = b, anchor = top, axis = y }
  w:joint { name = "s" .. k .. "_left", type = "revolute", parent = a, child = c, anchor = left, axis = y }
  w:joint { name = "s" .. k .. "_right", type = "revolute", parent = b, child = e, anchor = right, axis = y }
  w:joint { name = "s" .. k .. "_bottom", type = "revolute", parent = c, child = e, anchor = bottom, axis = y }
  top, above = bottom, c
end
if P.csv ~= "" then
  w:output { file = P.csv, every = 5, channels = { "time", "energy", "violation", "newton" } }
end
return w
