// string.find, string.match, string.gmatch and string.gsub with a time limit (issue 31 item 5).
//
// Lua's own matcher backtracks without bound and never returns to the interpreter while it
// does: `string.find(("a"):rep(40), ("a*"):rep(40) .. "b")` runs for hours inside one C call,
// where neither the count hook nor a check between noether calls can stop it. These functions
// implement the same pattern language with the same results and messages (Lua 5.4 manual §6.4.1:
// classes, sets, the four repetitions, anchors, captures and position captures, %b, %f and back
// references; gmatch's and gsub's rule that an empty match right after the previous match does
// not count), but count their steps and look at the script's deadline every 2^16 of them. They
// replace the library's functions where a script has a time limit (the sandbox, --time-limit).
// Written from the manual's description; tests/scenes/test_sandbox.cpp compares every result
// with the stock library's over a table of patterns.
#include <lua.hpp>

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string>

#include "world.hpp"

namespace noether {
namespace lua {

namespace {

constexpr int kMaxCaptures = 32;    // LUA_MAXCAPTURES
constexpr int kMaxDepth = 200;      // Lua's MAXCCALLS for the matcher's recursion
constexpr long kCapUnfinished = -1;
constexpr long kCapPosition = -2;
constexpr unsigned long kCheckEvery = 1u << 16;
const char kEsc = '%';
const char* const kSpecials = "^$*+?.([%-";

// A pattern error or the deadline: thrown through the matcher (whose frames own nothing) and
// turned into a Lua error by the C function that called it.
struct PatternFail : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Matcher {
    const char* src;  // subject [src, src_end), NUL after src_end (Lua strings are)
    const char* src_end;
    const char* pat_end;
    int depth;
    int level;  // captures open or closed
    struct {
        const char* init;
        long len;
    } cap[kMaxCaptures];
    const Context* ctx = nullptr;  // the script's deadline (none without the noether module)
    unsigned long steps = 0;

    void tick() {
        if (++steps % kCheckEvery == 0 && ctx && past_deadline(*ctx))
            throw PatternFail(time_limit_message(*ctx) + " (in a string pattern match)");
    }
    void reset() {
        level = 0;
        depth = kMaxDepth;
    }

    static bool class_match(int c, int cl) {
        bool r;
        switch (std::tolower(cl)) {
            case 'a': r = std::isalpha(c); break;
            case 'c': r = std::iscntrl(c); break;
            case 'd': r = std::isdigit(c); break;
            case 'g': r = std::isgraph(c); break;
            case 'l': r = std::islower(c); break;
            case 'p': r = std::ispunct(c); break;
            case 's': r = std::isspace(c); break;
            case 'u': r = std::isupper(c); break;
            case 'w': r = std::isalnum(c); break;
            case 'x': r = std::isxdigit(c); break;
            case 'z': r = c == 0; break;  // Lua 5.4 keeps the deprecated %z
            default: return cl == c;
        }
        return std::isupper(cl) ? !r : r;
    }

    // The end of the single-character class starting at p.
    const char* class_end(const char* p) const {
        const char c = *p++;
        if (c == kEsc) {
            if (p == pat_end) throw PatternFail("malformed pattern (ends with '%')");
            return p + 1;
        }
        if (c == '[') {
            if (*p == '^') ++p;
            do {  // the first ']' after '[' or '[^' is a member
                if (p == pat_end) throw PatternFail("malformed pattern (missing ']')");
                const char m = *p++;
                if (m == kEsc && p < pat_end) ++p;
            } while (*p != ']');
            return p + 1;
        }
        return p;
    }

    // c against the set [p, last] where *p == '[' and *last == ']'.
    static bool set_match(int c, const char* p, const char* last) {
        bool in = true;
        if (p[1] == '^') {
            in = false;
            ++p;
        }
        while (++p < last) {
            if (*p == kEsc) {
                ++p;
                if (class_match(c, static_cast<unsigned char>(*p))) return in;
            } else if (p[1] == '-' && p + 2 < last) {
                p += 2;
                if (static_cast<unsigned char>(p[-2]) <= c && c <= static_cast<unsigned char>(*p)) return in;
            } else if (static_cast<unsigned char>(*p) == c) {
                return in;
            }
        }
        return !in;
    }

    bool single(const char* s, const char* p, const char* ep) const {
        if (s >= src_end) return false;
        const int c = static_cast<unsigned char>(*s);
        switch (*p) {
            case '.': return true;
            case kEsc: return class_match(c, static_cast<unsigned char>(p[1]));
            case '[': return set_match(c, p, ep - 1);
            default: return static_cast<unsigned char>(*p) == c;
        }
    }

    const char* balance(const char* s, const char* p) {
        if (p >= pat_end - 1) throw PatternFail("malformed pattern (missing arguments to '%b')");
        if (s >= src_end || *s != *p) return nullptr;
        const char open = *p, close = p[1];
        int count = 1;
        while (++s < src_end) {
            tick();
            if (*s == close) {
                if (--count == 0) return s + 1;
            } else if (*s == open) {
                ++count;
            }
        }
        return nullptr;
    }

    const char* max_expand(const char* s, const char* p, const char* ep) {
        long i = 0;
        while (single(s + i, p, ep)) ++i, tick();
        for (; i >= 0; --i)
            if (const char* r = match(s + i, ep + 1)) return r;
        return nullptr;
    }

    const char* min_expand(const char* s, const char* p, const char* ep) {
        for (;;) {
            if (const char* r = match(s, ep + 1)) return r;
            if (!single(s, p, ep)) return nullptr;
            ++s;
        }
    }

    const char* open_capture(const char* s, const char* p, long what) {
        if (level >= kMaxCaptures) throw PatternFail("too many captures");
        cap[level].init = s;
        cap[level].len = what;
        ++level;
        const char* r = match(s, p);
        if (!r) --level;
        return r;
    }

    const char* close_capture(const char* s, const char* p) {
        int l = level - 1;
        while (l >= 0 && cap[l].len != kCapUnfinished) --l;
        if (l < 0) throw PatternFail("invalid pattern capture");
        cap[l].len = s - cap[l].init;
        const char* r = match(s, p);
        if (!r) cap[l].len = kCapUnfinished;
        return r;
    }

    int capture_index(int digit) const {
        const int l = digit - '1';
        if (l < 0 || l >= level || cap[l].len == kCapUnfinished)
            throw PatternFail("invalid capture index %" + std::to_string(l + 1));
        return l;
    }

    const char* back_reference(const char* s, int digit) {
        const int l = capture_index(digit);
        // As unsigned lengths, as Lua compares them: a position capture (length −2) never matches
        // (found by the fuzzer: a signed comparison let memcmp run with a length of 2^64 − 2).
        const std::size_t len = static_cast<std::size_t>(cap[l].len);
        if (static_cast<std::size_t>(src_end - s) >= len && std::memcmp(cap[l].init, s, len) == 0) return s + len;
        return nullptr;
    }

    // The end of a match of pattern [p, pat_end) at s, or null.
    const char* match(const char* s, const char* p) {
        tick();
        if (depth-- == 0) throw PatternFail("pattern too complex");
        for (;;) {
            if (p == pat_end) break;
            if (*p == '(') {
                s = p[1] == ')' ? open_capture(s, p + 2, kCapPosition) : open_capture(s, p + 1, kCapUnfinished);
                break;
            }
            if (*p == ')') {
                s = close_capture(s, p + 1);
                break;
            }
            if (*p == '$' && p + 1 == pat_end) {
                if (s != src_end) s = nullptr;
                break;
            }
            if (*p == kEsc && p[1] == 'b') {
                s = balance(s, p + 2);
                if (!s) break;
                p += 4;
                continue;
            }
            if (*p == kEsc && p[1] == 'f') {
                p += 2;
                if (*p != '[') throw PatternFail("missing '[' after '%f' in pattern");
                const char* ep = class_end(p);
                const int prev = s == src ? 0 : static_cast<unsigned char>(s[-1]);
                const int cur = s < src_end ? static_cast<unsigned char>(*s) : 0;
                if (!set_match(prev, p, ep - 1) && set_match(cur, p, ep - 1)) {
                    p = ep;
                    continue;
                }
                s = nullptr;
                break;
            }
            if (*p == kEsc && std::isdigit(static_cast<unsigned char>(p[1]))) {
                s = back_reference(s, static_cast<unsigned char>(p[1]));
                if (!s) break;
                p += 2;
                continue;
            }
            // A single-character class, perhaps repeated.
            const char* ep = class_end(p);
            const char rep = ep < pat_end ? *ep : '\0';
            if (!single(s, p, ep)) {
                if (rep == '*' || rep == '?' || rep == '-') {  // zero repetitions are fine
                    p = ep + 1;
                    continue;
                }
                s = nullptr;
                break;
            }
            if (rep == '?') {
                if (const char* r = match(s + 1, ep + 1)) {
                    s = r;
                    break;
                }
                p = ep + 1;
                continue;
            }
            if (rep == '+') {
                s = max_expand(s + 1, p, ep);
                break;
            }
            if (rep == '*') {
                s = max_expand(s, p, ep);
                break;
            }
            if (rep == '-') {
                s = min_expand(s, p, ep);
                break;
            }
            ++s;
            p = ep;
        }
        ++depth;
        return s;
    }

    // Capture i of a match [s, e) on the Lua stack (i = 0 with no captures: the whole match).
    void push_capture(lua_State* L, int i, const char* s, const char* e) const {
        if (i >= level) {
            if (i != 0) throw PatternFail("invalid capture index %" + std::to_string(i + 1));
            lua_pushlstring(L, s, static_cast<std::size_t>(e - s));
            return;
        }
        const long len = cap[i].len;
        if (len == kCapUnfinished) throw PatternFail("unfinished capture");
        if (len == kCapPosition) lua_pushinteger(L, cap[i].init - src + 1);
        else lua_pushlstring(L, cap[i].init, static_cast<std::size_t>(len));
    }
    // Every capture (or the whole match when there is none and s is given): their number.
    int push_captures(lua_State* L, const char* s, const char* e) const {
        const int n = level == 0 && s ? 1 : level;
        luaL_checkstack(L, n, "too many captures");
        for (int i = 0; i < n; ++i) push_capture(L, i, s, e);
        return n;
    }
};

void prepare(lua_State* L, Matcher& m, const char* s, std::size_t ls, const char* p, std::size_t lp) {
    m.src = s;
    m.src_end = s + ls;
    m.pat_end = p + lp;
    m.reset();
    m.ctx = try_context(L);
}

// Lua 5.4's rule for a start position: negative counts from the end, 0 and below -len are 1.
std::size_t start_position(lua_Integer pos, std::size_t len) {
    if (pos > 0) return static_cast<std::size_t>(pos);
    if (pos == 0) return 1;
    if (pos < -static_cast<lua_Integer>(len)) return 1;
    return len + static_cast<std::size_t>(pos) + 1;
}

bool has_specials(const char* p, std::size_t lp) {
    for (std::size_t i = 0; i < lp; ++i)
        if (std::strchr(kSpecials, p[i]) && p[i] != '\0') return true;
    return false;
}

// Run body(); a PatternFail becomes a Lua error once the C++ frames are gone.
template <class F>
int protect(lua_State* L, F&& body) {
    try {
        return body();
    } catch (const PatternFail& e) {
        lua_pushstring(L, e.what());
    }
    return lua_error(L);
}

int find_or_match(lua_State* L, bool find) {
    std::size_t ls, lp;
    const char* s = luaL_checklstring(L, 1, &ls);
    const char* p = luaL_checklstring(L, 2, &lp);
    const std::size_t init = start_position(luaL_optinteger(L, 3, 1), ls);
    if (init > ls + 1) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) {
        // plain search
        const char* hay = s + init - 1;
        const std::size_t left = ls - (init - 1);
        if (lp == 0) {
            lua_pushinteger(L, static_cast<lua_Integer>(init));
            lua_pushinteger(L, static_cast<lua_Integer>(init) - 1);
            return 2;
        }
        for (std::size_t i = 0; lp <= left && i <= left - lp; ++i)
            if (std::memcmp(hay + i, p, lp) == 0) {
                lua_pushinteger(L, static_cast<lua_Integer>(init + i));
                lua_pushinteger(L, static_cast<lua_Integer>(init + i + lp - 1));
                return 2;
            }
        luaL_pushfail(L);
        return 1;
    }
    return protect(L, [&]() -> int {
        Matcher m;
        prepare(L, m, s, ls, p, lp);
        const bool anchor = lp > 0 && *p == '^';
        const char* pp = anchor ? p + 1 : p;
        const char* s1 = s + init - 1;
        do {
            m.reset();
            if (const char* e = m.match(s1, pp)) {
                if (find) {
                    lua_pushinteger(L, s1 - s + 1);
                    lua_pushinteger(L, e - s);
                    return m.push_captures(L, nullptr, nullptr) + 2;
                }
                return m.push_captures(L, s1, e);
            }
        } while (s1++ < m.src_end && !anchor);
        luaL_pushfail(L);
        return 1;
    });
}

int l_find(lua_State* L) { return find_or_match(L, true); }
int l_match(lua_State* L) { return find_or_match(L, false); }

// gmatch's state: the subject and pattern are kept alive as upvalues 1 and 2.
struct GmatchState {
    std::size_t pos;         // next start, 0-based
    std::ptrdiff_t last;     // end of the previous match, -1 for none
};

int gmatch_next(lua_State* L) {
    std::size_t ls, lp;
    const char* s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char* p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    GmatchState* st = static_cast<GmatchState*>(lua_touserdata(L, lua_upvalueindex(3)));
    return protect(L, [&]() -> int {
        Matcher m;
        prepare(L, m, s, ls, p, lp);
        for (const char* src = s + st->pos; src <= m.src_end; ++src) {
            m.reset();
            const char* e = m.match(src, p);
            if (e && e - s != st->last) {
                st->pos = static_cast<std::size_t>(e - s);
                st->last = e - s;
                return m.push_captures(L, src, e);
            }
        }
        st->pos = ls + 1;  // done (a later call finds nothing either)
        return 0;
    });
}

int l_gmatch(lua_State* L) {
    std::size_t ls;
    luaL_checklstring(L, 1, &ls);
    luaL_checkstring(L, 2);
    std::size_t pos = start_position(luaL_optinteger(L, 3, 1), ls) - 1;  // 0-based
    if (pos > ls) pos = ls + 1;  // past the end: nothing, not even an empty match at the end
    lua_settop(L, 2);
    GmatchState* st = static_cast<GmatchState*>(lua_newuserdatauv(L, sizeof(GmatchState), 0));
    st->pos = pos;
    st->last = -1;
    lua_pushcclosure(L, gmatch_next, 3);
    return 1;
}

// gsub's replacement of the match [s, e): true if the text changed. The Lua calls made here (a
// function replacement, a table's __index) may raise errors: nothing in this frame needs
// destroying (the result is a luaL_Buffer).
bool add_value(lua_State* L, Matcher& m, luaL_Buffer* b, const char* s, const char* e, int kind) {
    if (kind == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        const int n = m.push_captures(L, s, e);
        lua_call(L, n, 1);
    } else if (kind == LUA_TTABLE) {
        m.push_capture(L, 0, s, e);
        lua_gettable(L, 3);
    } else {  // a string or a number: %0–%9 and %% expanded
        std::size_t l;
        const char* news = lua_tolstring(L, 3, &l);
        const char* p;
        while ((p = static_cast<const char*>(std::memchr(news, kEsc, l))) != nullptr) {
            luaL_addlstring(b, news, static_cast<std::size_t>(p - news));
            ++p;
            if (*p == kEsc) {
                luaL_addchar(b, *p);
            } else if (*p == '0') {
                luaL_addlstring(b, s, static_cast<std::size_t>(e - s));
            } else if (std::isdigit(static_cast<unsigned char>(*p))) {
                m.push_capture(L, *p - '1', s, e);
                luaL_tolstring(L, -1, nullptr);
                lua_remove(L, -2);
                luaL_addvalue(b);
            } else {
                throw PatternFail("invalid use of '%' in replacement string");
            }
            l -= static_cast<std::size_t>(p + 1 - news);
            news = p + 1;
        }
        luaL_addlstring(b, news, l);
        return true;
    }
    if (!lua_toboolean(L, -1)) {  // nil or false: keep the original text
        lua_pop(L, 1);
        luaL_addlstring(b, s, static_cast<std::size_t>(e - s));
        return false;
    }
    if (!lua_isstring(L, -1)) {
        const std::string msg = std::string("invalid replacement value (a ") + luaL_typename(L, -1) + ")";
        throw PatternFail(msg);
    }
    luaL_addvalue(b);
    return true;
}

int l_gsub(lua_State* L) {
    std::size_t ls, lp;
    const char* src = luaL_checklstring(L, 1, &ls);
    const char* p = luaL_checklstring(L, 2, &lp);
    const int kind = lua_type(L, 3);
    const lua_Integer max_n = luaL_optinteger(L, 4, static_cast<lua_Integer>(ls) + 1);
    luaL_argexpected(L, kind == LUA_TNUMBER || kind == LUA_TSTRING || kind == LUA_TFUNCTION || kind == LUA_TTABLE, 3,
                     "string/function/table");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    return protect(L, [&]() -> int {
        Matcher m;
        prepare(L, m, src, ls, p, lp);
        const bool anchor = lp > 0 && *p == '^';
        const char* pp = anchor ? p + 1 : p;
        const char* s = src;
        const char* last = nullptr;
        lua_Integer n = 0;
        bool changed = false;
        while (n < max_n) {
            m.reset();
            const char* e = m.match(s, pp);
            if (e && e != last) {
                ++n;
                changed = add_value(L, m, &b, s, e, kind) || changed;
                s = last = e;
            } else if (s < m.src_end) {
                luaL_addchar(&b, *s++);
            } else {
                break;
            }
            if (anchor) break;
        }
        if (!changed) {
            lua_pushvalue(L, 1);
        } else {
            luaL_addlstring(&b, s, static_cast<std::size_t>(m.src_end - s));
            luaL_pushresult(&b);
        }
        lua_pushinteger(L, n);
        return 2;
    });
}

}  // namespace

void bound_patterns(lua_State* L, int string_table) {
    string_table = lua_absindex(L, string_table);
    const luaL_Reg fns[] = {{"find", l_find}, {"match", l_match}, {"gmatch", l_gmatch}, {"gsub", l_gsub}};
    for (const luaL_Reg& f : fns) {
        lua_pushcfunction(L, f.func);
        lua_setfield(L, string_table, f.name);
    }
}

}  // namespace lua
}  // namespace noether
