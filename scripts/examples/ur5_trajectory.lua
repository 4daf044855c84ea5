-- The UR5 held by position servos on its six joints and moved along a circle by resolved-rate
-- control: at every step the hand's point Jacobian J (a query, docs/queries.md) turns the desired
-- hand velocity into joint rates, q̇ = Jᵀ (J Jᵀ + λ² I)⁻¹ (ẋ_d + K (x_d − x)), which become the servos'
-- targets (docs/servos.md), while the actuation cancels gravity (g(q), another query). The same controller is written in Python
-- (examples/python/ur5_trajectory.py) and C (examples/ur5_trajectory_c/ur5_trajectory.c); the three
-- print the same tracking error.
--
--   noether run scripts/examples/ur5_trajectory.lua     (prints "tracking error: ...")
local noether = require("noether")
local models = require("lib.models")

local P = noether.params { dt = 0.004, duration = 4, kp = 400, kv = 40, radius = 0.1, period = 4, gain = 5,
                           integrator = "vi-maximal", quiet = 0 }

local w = noether.world { dt = P.dt, integrator = P.integrator }
w:urdf { file = models.path("example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"), base = "fixed",
         servos = { kp = P.kp, kv = P.kv } }

local joints = { "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint" }
local q0 = { 0, -1.0, 2.0, -2.5, -1.57, 0 }
local hand, lambda2 = "wrist_3_link", 1e-4
w:set_joint_state(q0, { 0, 0, 0, 0, 0, 0 })
local target = {}
for i = 1, 6 do target[i] = q0[i] end
local x0 = w:position(hand)
local omega = 2 * math.pi / P.period

-- The desired hand position and velocity at time t: a circle in the x-z plane through x0.
local function desired(t)
  local s, c = math.sin(omega * t), math.cos(omega * t)
  return { x0[1] + P.radius * s, x0[2], x0[3] + P.radius * (1 - c) },
         { P.radius * omega * c, 0, P.radius * omega * s }
end

-- y = A⁻¹ v for a symmetric 3 × 3 A (Cramer's rule).
local function solve3(A, v)
  local c11 = A[2][2] * A[3][3] - A[2][3] * A[3][2]
  local c12 = A[2][3] * A[3][1] - A[2][1] * A[3][3]
  local c13 = A[2][1] * A[3][2] - A[2][2] * A[3][1]
  local det = A[1][1] * c11 + A[1][2] * c12 + A[1][3] * c13
  local y = {}
  for k = 1, 3 do
    local B = { { A[1][1], A[1][2], A[1][3] }, { A[2][1], A[2][2], A[2][3] }, { A[3][1], A[3][2], A[3][3] } }
    for r = 1, 3 do B[r][k] = v[r] end
    y[k] = (B[1][1] * (B[2][2] * B[3][3] - B[2][3] * B[3][2]) - B[1][2] * (B[2][1] * B[3][3] - B[2][3] * B[3][1]) +
            B[1][3] * (B[2][1] * B[3][2] - B[2][2] * B[3][1])) / det
  end
  return y
end

local max_error = 0
w:on_step(function(w)
  local t = w:time()
  local x = w:position(hand)
  local xd, vd = desired(t)
  local e = { xd[1] - x[1], xd[2] - x[2], xd[3] - x[3] }
  max_error = math.max(max_error, math.sqrt(e[1] * e[1] + e[2] * e[2] + e[3] * e[3]))
  local v = { vd[1] + P.gain * e[1], vd[2] + P.gain * e[2], vd[3] + P.gain * e[3] }
  local J = w:jacobian(hand, { 0, 0, 0 })  -- 3 × 6, world frame, at the current joint coordinates
  local A = {}
  for r = 1, 3 do
    A[r] = {}
    for c = 1, 3 do
      local s = 0
      for k = 1, 6 do s = s + J[r][k] * J[c][k] end
      A[r][c] = s + (r == c and lambda2 or 0)
    end
  end
  local y = solve3(A, v)
  local g = w:gravity_forces()  -- the servos track; the actuation carries the arm's weight
  for k = 1, 6 do
    local rate = J[1][k] * y[1] + J[2][k] * y[2] + J[3][k] * y[3]
    target[k] = target[k] + P.dt * rate
    w:set_target(joints[k], target[k], rate)
    w:set_actuation(joints[k], g[k])
  end
end)

w:run { duration = P.duration }
if P.quiet == 0 then print(string.format("tracking error: %.17g m", max_error)) end
noether.record("tracking_error", max_error)
