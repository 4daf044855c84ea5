-- Chain builders shared by the example scenes.
local noether = require("noether")
local M = {}

-- The n-link pendulum of the benchmark: links are boxes (length x width x width, mass each)
-- along +x from `origin`, joints at the link ends, the first one to the world.
--   joint = "revolute" (axis `axis`, default y) or "spherical"
--   spin  = angular velocity about z of the whole chain (rigid rotation), default 0
-- Returns the list of bodies and the list of joints.
function M.pendulum(w, opts)
  opts = opts or {}
  local n = opts.n or 2
  local length = opts.length or 1.0
  local width = opts.width or 0.1
  local mass = opts.mass or 1.0
  local joint = opts.joint or "revolute"
  local axis = opts.axis or { 0, 1, 0 }
  local origin = opts.origin or { 0, 0, 0 }
  local spin = opts.spin or 0
  local prefix = opts.prefix or ""
  local bodies, joints = {}, {}
  for i = 1, n do
    local cx = origin[1] + (i - 0.5) * length
    bodies[i] = w:body {
      name = prefix .. "link" .. i,
      mass = mass,
      inertia = noether.inertia.box(mass, length, width, width),
      position = { cx, origin[2], origin[3] },
      velocity = { -spin * origin[2], spin * cx, 0 },
      angular_velocity = { 0, 0, spin },
    }
  end
  for i = 1, n do
    local spec = {
      name = prefix .. "j" .. i,
      type = joint,
      parent = i == 1 and w.world or bodies[i - 1],
      child = bodies[i],
      anchor = { origin[1] + (i - 1) * length, origin[2], origin[3] },
    }
    if joint ~= "spherical" then spec.axis = axis end
    joints[i] = w:joint(spec)
  end
  return bodies, joints
end

return M
