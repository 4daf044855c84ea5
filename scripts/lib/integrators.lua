-- Integrator settings shared by scenes.
local M = {}

-- The world's `options` for P.integrator: for dp45-projection paper 003's step-size control
-- (Atol = Rtol = P.tol, fac_max 3, initial step 0.25) and, with P.invariant, the energy
-- invariant; nil for the fixed-step integrators.
function M.options(P)
  if P.integrator ~= "dp45-projection" then return nil end
  return { atol = P.tol, rtol = P.tol, fac_max = 3.0, initial_step = 0.25,
           invariants = P.invariant and { "energy" } or nil }
end

return M
