-- Pattern matching cases: every result of string.find, match, gmatch and gsub (or the error
-- message) over a table of subjects and patterns, as one text recorded for the test to compare
-- between the stock string library and the sandbox's time-limited one (lua/pattern.cpp).
local noether = require("noether")

local out = {}
local function ser(...)
  local n = select("#", ...)
  local t = {}
  for i = 1, n do
    local v = select(i, ...)
    t[#t + 1] = type(v) .. ":" .. tostring(v)
  end
  return table.concat(t, "|")
end
local function try(label, f, ...)
  local r = table.pack(pcall(f, ...))
  out[#out + 1] = label .. " => " .. ser(table.unpack(r, 1, r.n))
end

local subjects = { "", "a", "hello world", "  trim me  ", "key = value; k2=v2", "THE (quick) [brown] fox",
  "aaa", "abcabcabc", "x=1, y=22, z=333", "f(a(b)c)d", "\0a\0b", "THE END", "word1 word2\tword3\nword4",
  "12.5e-3 and -7", "%d%%", "[]]", "caf\195\169" }
local patterns = { "", "a", ".", "%a+", "%d+", "^%s*(.-)%s*$", "(%w+)%s*=%s*(%w+)", "()", "()a()", "%bxy", "%b()",
  "%f[%w]%w+", "%f[%W]", "[%a_][%w_]*", "[^%s]+", "[a-c]+", "[]]", "[^]]", "a-", "a*", "a?b?", "a+$", "^a", "^",
  "$", "(a)(b)(c)", "(a*(.)%w(%s*))", "(%a)%1", "%.", "%%", "[%d.]+", "[%-+]?%d+", "(.)(.)%2%1", "[a-]",
  "[-a]", "%u+", "%l+", "%p", "%c", "%x+", "%g+", "%S+", "%D", "%W+", "%A", "[%]]", "%z", "\0", "x*$",
  "(h)(e)(l)(l)(o)", ".-b", ".-$", "[^%d]*", "[\128-\255]+", "%s*$" }
for _, s in ipairs(subjects) do
  for _, p in ipairs(patterns) do
    local id = string.format("%q~%q", s, p)
    try("find " .. id, string.find, s, p)
    try("find3 " .. id, string.find, s, p, 3)
    try("find-2 " .. id, string.find, s, p, -2)
    try("findplain " .. id, string.find, s, p, 1, true)
    try("match " .. id, string.match, s, p)
    try("match0 " .. id, string.match, s, p, 0)
    try("gmatch " .. id, function()
      local t = {}
      for a, b in string.gmatch(s, p) do t[#t + 1] = ser(a, b) if #t > 50 then break end end
      return table.concat(t, ";")
    end)
    try("gmatch4 " .. id, function()
      local t = {}
      for a in string.gmatch(s, p, 4) do t[#t + 1] = ser(a) if #t > 50 then break end end
      return table.concat(t, ";")
    end)
    try("gsub " .. id, string.gsub, s, p, "<%0>")
    try("gsub1 " .. id, string.gsub, s, p, "[%1]")
    try("gsubn " .. id, string.gsub, s, p, "#", 2)
    try("gsubf " .. id, string.gsub, s, p, function(a, b) if a == "a" then return nil end return "{" .. tostring(a) .. tostring(b) .. "}" end)
    try("gsubt " .. id, string.gsub, s, p, { a = "A", hello = false, value = 7 })
  end
end
-- errors and edge cases
for _, c in ipairs({
  { "abc", "%" }, { "abc", "[a" }, { "abc", "[^" }, { "abc", "(()" }, { "abc", "%1" }, { "abc", "(a)%2" },
  { "abc", "%b" }, { "abc", "%ba" }, { "abc", "%fx" }, { "abc", "(" }, { "abc", ")" }, { "abc", "a)" },
  { "abc", "%0" }, { "abc", "[%" }, { string.rep("a", 300), string.rep("a?", 300) .. string.rep("a", 300) },
  { string.rep("(", 40), string.rep("(%()", 33) }, { "abc", "%f[a" }, { "xa", "(x)(a)" },
  { "aa", "()a%1" }, { "abab", "(a)()b%2" }, { "", "()%1" } }) do  -- back references to position captures
  local id = string.format("%q~%q", c[1], c[2])
  try("find " .. id, string.find, c[1], c[2])
  try("gsub " .. id, string.gsub, c[1], c[2], "%1")
end
try("gsub bad repl", string.gsub, "abc", "b", "%x")
try("gsub bad value", string.gsub, "abc", "b", function() return {} end)
try("gsub bad type", string.gsub, "abc", "b", true)
try("gsub number repl", string.gsub, "abc", "b", 42)
try("gsub table-pos", string.gsub, "abc", "()b", { [2] = "two" })
try("gsub %2 without", string.gsub, "abc", "b", "%2")
try("gsub %1 no captures", string.gsub, "abc", "b", "[%1]")
try("find init past end", string.find, "abc", "", 10)
try("find init end", string.find, "abc", "", 4)
try("gmatch init past end", function() local n = 0 for _ in string.gmatch("abc", "", 10) do n = n + 1 end return n end)
try("gmatch init end", function() local n = 0 for _ in string.gmatch("abc", "", 4) do n = n + 1 end return n end)
try("find bad arg", string.find, {}, "a")
try("method", function() return ("key=val"):match("(%w+)=(%w+)") end)
try("gsub anchor", string.gsub, "aaa", "^a", "b")
try("gsub empty", string.gsub, "abc", "", "-")
try("gsub x*", string.gsub, "abc", "x*", "-")
try("gmatch x*", function() local t = {} for m in ("abc"):gmatch("x*") do t[#t + 1] = "[" .. m .. "]" end return table.concat(t) end)

noether.record("cases", #out)
noether.record("results", table.concat(out, "\n"))
