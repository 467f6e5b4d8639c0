/* Lua 5.4 interpreter core with the base, string, table, math, coroutine and
   utf8 libraries (no io/os/package: the mini libc has no processes or file writes). */
#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
int main(int argc, char **argv) {
    lua_State *L = luaL_newstate();
    const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base}, {LUA_COLIBNAME, luaopen_coroutine}, {LUA_TABLIBNAME, luaopen_table},
                             {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8}, {0, 0}};
    for (const luaL_Reg *l = libs; l->func; l++) { luaL_requiref(L, l->name, l->func, 1); lua_pop(L, 1); }
    if (luaL_dofile(L, argv[1])) { fprintf(stderr, "lua: %s\n", lua_tostring(L, -1)); return 1; }
    lua_close(L);
    return 0;
}
