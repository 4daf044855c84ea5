/* noether.so — the file a stock lua5.4 finds through LUA_CPATH for require "noether". The module
 * itself lives in libnoether_lua (which this file links); this entry forwards to it. */
struct lua_State;
int noether_lua_luaopen(struct lua_State* L);
__attribute__((visibility("default"))) int luaopen_noether(struct lua_State* L) { return noether_lua_luaopen(L); }
