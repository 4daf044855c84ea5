-- fuzz_lua finding (minimised): a back reference to a position capture made the sandbox's matcher
-- call memcmp with a length of 2^64 - 2 (lua/pattern.cpp compares the lengths unsigned, as Lua does).
local a = string.find("aa", "()a%1")
local b = string.gsub("abab", "(a)()b%2", "x")
local c = ("ab"):match("()%1")
return a, b, c
