-- Inertia formulas (principal moments about the centre of mass, body axes), for w:body{inertia = ...}.
-- The same formulas are built in as noether.inertia.box/cylinder/sphere/rod; these add a few more.
local M = {}

-- Solid box with side lengths lx, ly, lz along the body axes.
function M.box(mass, lx, ly, lz)
  return { mass * (ly * ly + lz * lz) / 12, mass * (lx * lx + lz * lz) / 12, mass * (lx * lx + ly * ly) / 12 }
end

-- Solid cylinder of radius r and length h, axis along body z.
function M.cylinder(mass, r, h)
  local t = mass * (3 * r * r + h * h) / 12
  return { t, t, mass * r * r / 2 }
end

-- Hollow cylinder (tube) with inner and outer radii, axis along body z.
function M.tube(mass, r_in, r_out, h)
  local rr = r_in * r_in + r_out * r_out
  local t = mass * (3 * rr + h * h) / 12
  return { t, t, mass * rr / 2 }
end

-- Solid sphere of radius r.
function M.sphere(mass, r)
  local t = 2 * mass * r * r / 5
  return { t, t, t }
end

-- Thin rod of length l along body x (radius r, default l/100, for the axial moment).
function M.rod(mass, l, r)
  r = r or 0.01 * l
  local t = mass * (3 * r * r + l * l) / 12
  return { mass * r * r / 2, t, t }
end

return M
