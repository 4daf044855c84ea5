-- Where the robot model files are: $NOETHER_MODELS_DIR, else ../shared/models next to the
-- repository (the models are test data and are not copied into this repository).
local M = {}

local function here()
  local src = debug.getinfo(1, "S").source
  return src:sub(1, 1) == "@" and src:sub(2):match("(.*)/") or "."
end

function M.dir()
  local env = os.getenv("NOETHER_MODELS_DIR")
  if env and env ~= "" then return env end
  return here() .. "/../../../shared/models"
end

-- The full path of a model file, or an error that says where it was looked for.
function M.path(relative)
  local p = M.dir() .. "/" .. relative
  local f = io.open(p, "r")
  if not f then
    error("model file '" .. relative .. "' not found in " .. M.dir() .. " (set NOETHER_MODELS_DIR)", 2)
  end
  f:close()
  return p
end

return M
