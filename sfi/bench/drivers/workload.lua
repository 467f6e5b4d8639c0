-- Lua workload: recursion, tables, strings, closures, coroutines, sorting.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print("fib", fib(27))
local t = {}
for i = 1, 200000 do t[i] = (i * 7919) % 100003 end
table.sort(t)
print("sorted", t[1], t[#t], t[100000])
local parts = {}
for i = 1, 50000 do parts[#parts + 1] = string.format("%d:%x", i, i * 31) end
local s = table.concat(parts, ",")
local count = 0
for a, b in s:gmatch("(%d+):(%x+)") do count = count + (tonumber(b, 16) - tonumber(a)) % 7 end
print("strings", #s, count, s:sub(1, 20), (s:gsub("1", "one")):len())
local function counter() local c = 0 return function() c = c + 1 return c end end
local f = counter() for i = 1, 300000 do f() end
print("closure", f())
local co = coroutine.wrap(function() for i = 1, 100000 do coroutine.yield(i) end end)
local acc = 0 for i = 1, 100000 do acc = acc + co() end
print("coroutine", acc)
local m = {}
for i = 1, 300 do m[i] = {} for j = 1, 300 do m[i][j] = math.sin(i) * math.cos(j) end end
local tr = 0 for i = 1, 300 do tr = tr + m[i][i] * m[301 - i][i] end
print("numeric", string.format("%.10f", tr), math.floor(2^40 / 3), 7 // 2, 7 % -3, utf8.char(955, 8364))
