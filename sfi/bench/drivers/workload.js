// MuJS benchmark workload: objects, arrays, strings, closures, regular
// expressions, JSON, numbers.  Deterministic (no dates, no Math.random).
"use strict";
function rng(seed) { var s = seed >>> 0; return function () { s = (s * 1103515245 + 12345) >>> 0; return s >>> 8; }; }
function bench(round) {
    var r = rng(42 + round);

    // 1. Objects and property access: a small particle simulation.
    function Vec(x, y) { this.x = x; this.y = y; }
    Vec.prototype.add = function (o) { return new Vec(this.x + o.x, this.y + o.y); };
    Vec.prototype.scale = function (k) { return new Vec(this.x * k, this.y * k); };
    var ps = [];
    for (var i = 0; i < 200; i++) ps.push({ p: new Vec(r() % 1000, r() % 1000), v: new Vec(r() % 7 - 3, r() % 7 - 3) });
    for (var step = 0; step < 150; step++)
        for (var i = 0; i < ps.length; i++) {
            var q = ps[i];
            q.p = q.p.add(q.v.scale(0.5));
            if (q.p.x < 0 || q.p.x > 1000) q.v.x = -q.v.x;
            if (q.p.y < 0 || q.p.y > 1000) q.v.y = -q.v.y;
        }
    var sx = 0; for (var i = 0; i < ps.length; i++) sx += Math.floor(ps[i].p.x) + Math.floor(ps[i].p.y);
    print("particles", sx);

    // 2. Arrays: sorting with a comparator, map/filter/reduce.
    var a = [];
    for (var i = 0; i < 20000; i++) a.push(r() % 100000);
    a.sort(function (x, y) { return x - y; });
    var ev = a.filter(function (x) { return x % 2 == 0; }).map(function (x) { return x * 3; }).reduce(function (s, x) { return (s + x) % 1000000007; }, 0);
    print("sort", a[0], a[a.length >> 1], a[a.length - 1], ev);

    // 3. Strings: building, splitting, joining, searching, replacing.
    var words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
    var parts = [];
    for (var i = 0; i < 20000; i++) parts.push(words[r() % words.length] + (i % 97));
    var text = parts.join(" ");
    var cnt = {};
    text.split(" ").forEach(function (w) { var k = w.replace(/[0-9]+$/, ""); cnt[k] = (cnt[k] || 0) + 1; });
    var keys = Object.keys(cnt).sort();
    print("words", keys.map(function (k) { return k + "=" + cnt[k]; }).join(","));
    print("upper", text.slice(0, 40).toUpperCase(), text.indexOf("theta5"), text.lastIndexOf("alpha1"));

    // 4. Regular expressions.
    // (in chunks: MuJS finds lastIndex by walking the UTF-8 string from its start)
    var re = /(theta|zeta)(\d+) ([a-z]+)(\d)/g, m, hits = 0, h = 0;
    for (var c = 0; c < text.length; c += 1000) {
        var chunk = text.slice(c, c + 1000);
        re.lastIndex = 0;
        while ((m = re.exec(chunk)) !== null) { hits++; h = (h * 31 + m.index) % 1000003; }
    }
    print("regexp", hits, h, text.replace(/a(l|m)/g, "<$1>").length);

    // 5. Closures and recursion.
    function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    function counter() { var c = 0; return { inc: function () { return ++c; }, get: function () { return c; } }; }
    var cs = []; for (var i = 0; i < 100; i++) cs.push(counter());
    for (var k = 0; k < 300; k++) for (var i = 0; i < cs.length; i++) if ((i + k) % 3) cs[i].inc();
    print("fib", fib(22), cs[0].get(), cs[99].get());

    // 6. JSON round trips.
    var obj = { list: [], map: {} };
    for (var i = 0; i < 2000; i++) { obj.list.push({ id: i, name: "n" + i, tags: [i % 3, i % 5], ok: i % 2 == 0 }); obj.map["k" + i] = i * 1.5; }
    var js = "", back = null;
    for (var k = 0; k < 5; k++) { js = JSON.stringify(obj); back = JSON.parse(js); }
    print("json", js.length, back.list[1234].name, back.map.k777);

    // 7. Numbers: a sieve and some floating point.
    var N = 60000, sieve = [];
    for (var i = 0; i < N; i++) sieve.push(true);
    var primes = 0;
    for (var i = 2; i < N; i++) if (sieve[i]) { primes++; for (var j = i * i; j < N; j += i) sieve[j] = false; }
    var acc = 0; for (var i = 1; i < 50000; i++) acc += Math.sqrt(i) / (i + 1);
    print("numbers", primes, acc.toFixed(6), (123456.789).toString(16).slice(0, 8));
}
for (var round = 0; round < 3; round++) bench(round);
