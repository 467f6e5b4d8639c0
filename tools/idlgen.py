#!/usr/bin/env python3
"""Generate each user-level service's protocol from its interface
definition, abi/services/<service>.toml (docs/writing-programs.md, "The
protocol"):

  <crate>/src/protocol.rs   the request labels, the statuses (the shared ones
                            of abi/services/common.toml and the service's
                            own), the payload range of each request, a
                            status's name, and the typed client stub (one
                            function per request)
  <docs> table              the protocol table of the service's section in
                            its docs/*.md page, between the markers
                            <!-- idl:<service> begin --> and <!-- idl:<service> end -->
  user/tests/ktest/src/srvfuzz_table.rs
                            every service's requests as data for ktest's
                            server fuzzers (docs/fuzzing.md): label,
                            interface and its payload range, each argument's
                            name and kind, capabilities and strings sent and
                            received, the statuses it may answer

    idlgen.py            write the generated files
    idlgen.py --check    exit 1 if any differs from what the definitions
                         generate (run by `make abi-check`)
"""
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIR = ROOT / "abi" / "services"
COMMON = DIR / "common.toml"
HEADER = "generated from abi/services/{name}.toml by tools/idlgen.py; do not edit"
IDENT = re.compile(r"^[A-Z][A-Z0-9_]*$")
ARG = re.compile(r"^[a-z][a-z0-9_]*$")
RUST_KEYWORDS = {"in", "yield", "type", "loop", "move", "ref", "self", "static", "use", "where", "fn",
                 "let", "mod", "match", "impl", "trait", "return", "break", "continue", "const", "crate",
                 "enum", "extern", "for", "if", "else", "mut", "pub", "struct", "super", "unsafe",
                 "while", "as", "dyn", "async", "await", "box"}


class Bad(Exception):
    pass


def load_common():
    with open(COMMON, "rb") as f:
        return tomllib.load(f)


def load(path, common):
    """One service definition, checked: names, unique labels and statuses,
    statuses that exist, interfaces that are payload ranges."""
    with open(path, "rb") as f:
        d = tomllib.load(f)
    where = path.relative_to(ROOT)
    svc = d.get("service") or {}
    for key in ("name", "crate", "docs", "doc"):
        if key not in svc:
            raise Bad(f"{where}: [service] has no {key}")
    if svc["name"] != path.stem:
        raise Bad(f"{where}: service name {svc['name']!r} is not the file's name")
    shared = {s["name"]: s["value"] for s in common["status"]}
    unknown = svc.get("unknown", "BAD_REQUEST")
    payloads = {p["name"] for p in common["payload"]}
    for i in d.get("interface", []):
        for key in ("name", "payload", "doc"):
            if key not in i:
                raise Bad(f"{where}: an interface has no {key}")
        if i["name"] in payloads:
            raise Bad(f"{where}: interface {i['name']} is defined twice (or is a payload range)")
        if i["payload"] not in {p["name"] for p in common["payload"]}:
            raise Bad(f"{where}: interface {i['name']}: payload {i['payload']!r} is no payload range")
        if not re.match(r"^[a-z_][a-z0-9_]*(::[a-z_][a-z0-9_]*)*$", i.get("rust", "x")):
            raise Bad(f"{where}: interface {i['name']}: rust {i['rust']!r} is not a path to a predicate")
        payloads.add(i["name"])
    own = d.get("status", [])
    names, values = dict(shared), {v: n for n, v in shared.items()}
    for s in own:
        if not IDENT.match(s["name"]):
            raise Bad(f"{where}: status name {s['name']!r} is not an upper-case identifier")
        if s["name"] in names:
            raise Bad(f"{where}: status {s['name']} is defined twice (or is a shared status)")
        if s["value"] in values:
            raise Bad(f"{where}: status {s['name']} reuses value {s['value']} of {values[s['value']]}")
        names[s["name"]] = s["value"]
        values[s["value"]] = s["name"]
    if unknown not in names:
        raise Bad(f"{where}: unknown status {unknown} (for a label that is no request) is not defined")
    if svc.get("other_interface", "BAD_REQUEST") not in names:
        raise Bad(f"{where}: other_interface status {svc['other_interface']} (for a request through "
                  "a payload range that does not serve it) is not defined")
    rights = {}
    for g in d.get("right", []):
        if not IDENT.match(g["name"]) or g["name"] == "ALL":
            raise Bad(f"{where}: right name {g['name']!r} is not an upper-case identifier other than ALL")
        if g["name"] in rights or g["value"] & sum(rights.values()) or g["value"] & (g["value"] - 1) or not g["value"]:
            raise Bad(f"{where}: right {g['name']} is defined twice or is not a bit of its own")
        rights[g["name"]] = g["value"]
    labels = {}
    for r in d.get("request", []):
        n = r.get("name", "?")
        for key in ("name", "label", "interface", "args", "results", "statuses", "doc"):
            if key not in r:
                raise Bad(f"{where}: request {n} has no {key}")
        if not IDENT.match(n):
            raise Bad(f"{where}: request name {n!r} is not an upper-case identifier")
        if n in names:
            raise Bad(f"{where}: request {n} has a status's name")
        if r["label"] in labels:
            raise Bad(f"{where}: requests {labels[r['label']]} and {n} both have label {r['label']}")
        if not 0 <= r["label"] < 1 << 48:
            raise Bad(f"{where}: request {n}: label {r['label']} does not fit a tag's 48-bit label")
        labels[r["label"]] = n
        if r["interface"] not in payloads:
            raise Bad(f"{where}: request {n}: interface {r['interface']!r} is none of {sorted(payloads)}")
        if len(r["args"]) > 4 or len(r["results"]) > 3:
            raise Bad(f"{where}: request {n}: at most 4 arguments and 3 results (word 0 is the status)")
        for key in ("send_caps", "reply_caps"):
            if not isinstance(r.get(key, []), list):
                raise Bad(f"{where}: request {n}: {key} is not a list of names")
        if not isinstance(r.get("needs", []), list):
            raise Bad(f"{where}: request {n}: needs is not a list of rights")
        if not isinstance(r.get("waits", False), bool):
            raise Bad(f"{where}: request {n}: waits is not true or false")
        for key in ("send_string", "reply_string", "cost"):
            if not isinstance(r.get(key, ""), str):
                raise Bad(f"{where}: request {n}: {key} is not a description")
        for a in r["args"] + r["results"] + r.get("send_caps", []) + r.get("reply_caps", []):
            if not ARG.match(a):
                raise Bad(f"{where}: request {n}: {a!r} is not a lower-case identifier")
        for s in r["statuses"]:
            if s not in names:
                raise Bad(f"{where}: request {n}: status {s} is not defined")
        for g in r.get("needs", []):
            if g not in rights:
                raise Bad(f"{where}: request {n}: right {g} is not defined")
    return d


FUZZ_TABLE = ROOT / "user" / "tests" / "ktest" / "src" / "srvfuzz_table.rs"
# An argument's kind, from its name: what edge values the fuzzer mixes in
# (counts: 0, 1, the maximum and above; offsets: page and buffer edges;
# handles: small numbers and stale-looking ones; rights: single bits and
# all ones).  Any other name is a plain word.
KINDS = {
    "Count": {"count", "pages", "n", "frames", "length", "limit", "entries", "size", "sectors", "width"},
    "Offset": {"offset", "first", "sector", "vaddr", "dev_addr", "address", "used"},
    "Handle": {"handle", "buffer", "mapping", "pin", "filter", "index", "queue", "entry", "instance",
               "ids", "slot", "payload", "client", "stack"},
    "Rights": {"rights", "mask"},
}


def arg_kind(name):
    return next((k for k, names in KINDS.items() if name in names), "Word")


def fuzz_table(defs, common):
    """The one generated module of ktest's server fuzzers: per service a
    `pub mod <service>` with REQUESTS and STATUSES."""
    ranges = {p["name"]: p for p in common["payload"]}
    o = ["// generated from abi/services/*.toml by tools/idlgen.py; do not edit.",
         "//! Every service's requests as data for the server fuzzers (srvfuzz.rs,",
         "//! docs/fuzzing.md).", "",
         "#![allow(dead_code)]", "",
         "/// What edge values an argument gets (tools/idlgen.py KINDS, by its name).",
         "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
         "pub enum Kind { Count, Offset, Handle, Rights, Word }", "",
         "/// One argument word: its name in the definition and its kind.",
         "#[derive(Clone, Copy, Debug)]",
         "pub struct Arg { pub name: &'static str, pub kind: Kind }", "",
         "/// One request of a service's definition.",
         "#[derive(Clone, Copy, Debug)]",
         "pub struct Request {",
         "    pub name: &'static str,",
         "    pub label: u64,",
         "    /// The interface it is served on, and that interface's payload range",
         "    /// (ADMIN, CLIENTS, ANY, ...: abi/services/common.toml).",
         "    pub interface: &'static str,",
         "    pub payload: &'static str,",
         "    pub args: &'static [Arg],",
         "    /// Words 1.. of an OK reply.",
         "    pub results: u8,",
         "    pub send_caps: u8,",
         "    pub reply_caps: u8,",
         "    pub send_string: bool,",
         "    pub reply_string: bool,",
         "    /// The statuses besides OK and BAD_REQUEST it may answer.",
         "    pub statuses: &'static [u64],",
         "    /// It may be answered only when something happens (`waits`): the",
         "    /// fuzzer bounds it with a short time-out, which is no hang.",
         "    pub waits: bool,",
         "}"]
    for d in defs:
        svc = d["service"]
        pay = {i["name"]: i["payload"] for i in d.get("interface", [])}
        names = {s["name"]: s["value"] for s in common["status"] + d.get("status", [])}
        o += ["", f"/// {svc['name']} (abi/services/{svc['name']}.toml).", f"pub mod {svc['name']} {{",
              "    use super::*;", "",
              "    /// Every status the service defines (OK and BAD_REQUEST included).",
              "    pub const STATUSES: &[u64] = &[" + ", ".join(str(v) for v in names.values()) + "];", "",
              "    pub const REQUESTS: &[Request] = &["]
        for r in d["request"]:
            args = ", ".join(f'Arg {{ name: "{a}", kind: Kind::{arg_kind(a)} }}' for a in r["args"])
            sts = ", ".join(str(names[x]) for x in r["statuses"])
            o += [f"        Request {{ name: \"{r['name']}\", label: {r['label']}, interface: \"{r['interface']}\","
                  f" payload: \"{ranges[pay.get(r['interface'], r['interface'])]['name']}\",",
                  f"                  args: &[{args}], results: {len(r['results'])},",
                  f"                  send_caps: {len(r.get('send_caps', []))}, reply_caps: {len(r.get('reply_caps', []))},"
                  f" send_string: {str(bool(r.get('send_string'))).lower()}, reply_string: {str(bool(r.get('reply_string'))).lower()},",
                  f"                  statuses: &[{sts}], waits: {str(bool(r.get('waits'))).lower()} }},"]
        o += ["    ];", "}"]
    o.append("")
    return "\n".join(o)


def rust_ident(name):
    name = name.lower()
    return name + "_" if name in RUST_KEYWORDS else name


def plain(r):
    """A request the stub can make: words only, no capability, no string."""
    return not any(r.get(k) for k in ("send_caps", "reply_caps", "send_string", "reply_string"))


def consts(o, module, entries, value, heading):
    """Constants, at the top level or in `pub mod <module>`."""
    pad = "    " if module else ""
    o.append("")
    if module:
        o += [f"/// {heading}", f"pub mod {module} {{"]
    else:
        o.append(f"// {heading}")
    for e in entries:
        o.append(f"{pad}/// {e['doc']}")
        o.append(f"{pad}pub const {e['name']}: u64 = {value(e)};")
    if module:
        o.append("}")


def rust(d, common):
    svc = d["service"]
    lm, sm = svc.get("labels_module"), svc.get("statuses_module")
    lp, sp = (f"{lm}::" if lm else ""), (f"{sm}::" if sm else "")
    o = [f"// {HEADER.format(name=svc['name'])}.",
         f"//! The `{svc['name']}` protocol: {svc['doc']}", "",
         "#![allow(dead_code)]", "",
         "use keep_abi::Sender;",
         "pub use keep_abi::proto::Refused;"]
    consts(o, lm, [dict(r, doc=f"{r['doc']} (interface {r['interface']})") for r in d["request"]],
           lambda r: f"{r['label']:#x}" if r["label"] >= 16 else r["label"], "Request labels.")
    consts(o, sm, common["status"] + d.get("status", []), lambda e: e["value"],
           "Statuses: word 0 of every reply.")
    if d.get("right"):
        rm = svc.get("rights_module", "rights")
        allv = " | ".join(g["name"] for g in d["right"])
        consts(o, rm, d["right"] + [{"name": "ALL", "value": allv, "doc": "Every right."}],
               lambda e: e["value"], "Rights of a capability to the service (the server keeps them in its payload).")
        o += ["", "/// The rights a request needs (0: none, or a label that is no request).",
              "pub fn needs(label: u64) -> u64 {", "    match label {"]
        for r in d["request"]:
            if r.get("needs"):
                o.append(f"        {lp}{r['name']} => " + " | ".join(f"{rm}::{g}" for g in r["needs"]) + ",")
        o += ["        _ => 0,", "    }", "}"]
    o += ["", "/// The payload range each request is served on (`keep_abi::proto::payload`):",
          "/// true when a request with `label` may come through a capability with",
          "/// protected payload `payload`; false for a label that is no request."]
    o.append("pub fn serves(label: u64, payload: u64) -> bool {")
    o.append("    match label {")
    ranges = {p["name"]: p for p in common["payload"]}
    for i in d.get("interface", []):
        ranges[i["name"]] = ranges[i["payload"]]
    # An interface of the service's own may name its own predicate (a
    # server that tells its interfaces apart by exact payloads within a
    # range: init's control and watcher capabilities).
    own = {i["name"]: i["rust"] for i in d.get("interface", []) if i.get("rust")}
    for r in d["request"]:
        pred = own.get(r["interface"]) or f"keep_abi::proto::payload::{ranges[r['interface']]['rust']}"
        o.append(f"        {lp}{r['name']} => {pred}(payload),")
    o += ["        _ => false,", "    }", "}", ""]
    o += ["/// Whether `label` is a request of the service's (on any interface): a",
          "/// server that also receives messages of other kinds (the kernel's fault",
          "/// messages, its interrupts) tells them apart with it before `dispatch`.",
          "pub fn is_request(label: u64) -> bool {",
          f"    matches!(label, {' | '.join(lp + r['name'] for r in d['request'])})",
          "}", ""]
    o += ["/// A status's name, for messages.", "pub fn status_name(s: u64) -> &'static str {", "    match s {"]
    for s in common["status"] + d.get("status", []):
        o.append(f"        {sp}{s['name']} => \"{s['name']}\",")
    o += ["        _ => \"UNKNOWN_STATUS\",", "    }", "}", ""]
    o += ["/// The typed client: a sender capability to the server, one function per",
          "/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)",
          "/// that carries no capability and no string (the library makes those calls).",
          "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
          "pub struct Stub(pub Sender);", "", "impl Stub {"]
    for i, r in enumerate(r for r in d["request"] if plain(r)):
        args = [rust_ident(a) for a in r["args"]]
        n = len(r["results"])
        ret = "()" if n == 0 else "u64" if n == 1 else "(" + ", ".join(["u64"] * n) + ")"
        val = "()" if n == 0 else "w[0]" if n == 1 else "(" + ", ".join(f"w[{k}]" for k in range(n)) + ")"
        words = ", ".join(args + ["0"] * (4 - len(args)))
        if i:
            o.append("")
        statuses = ", ".join(r["statuses"]) or "none of its own"
        o.append(f"    /// {r['name']} ({r['label']}): {r['doc']} Statuses: {statuses}.")
        params = "".join(f", {a}: u64" for a in args)
        w = "w" if n else "_"
        o.append(f"    pub fn {rust_ident(r['name'])}(self{params}) -> Result<{ret}, Refused> {{")
        o.append(f"        let {w} = keep_abi::proto::call(self.0, {lp}{r['name']}, [{words}])?;")
        o.append(f"        Ok({val})")
        o.append("    }")
    o += ["}", ""]
    o += server_side(d, lp, sp)
    return "\n".join(o)


def server_side(d, lp, sp):
    """The server's side: a trait with one method per request, its
    arguments decoded, and the one `dispatch` that refuses what the
    caller's payload range is not served and calls the method."""
    svc = d["service"]
    name = svc["name"]
    o = ["/// The server's side of the protocol (its handler): one method per request, called by",
         "/// [`dispatch`] once the request is known to be served through the",
         "/// caller's payload range, with the request's arguments (words 0-3).",
         "/// `m` is the whole message: its payload names the caller, its tag says",
         "/// whether a string or capabilities came.  A new request in the",
         f"/// definition (abi/services/{name}.toml) is a new method here, which",
         "/// the server must then implement.",
         "pub trait Handler {"]
    for i, r in enumerate(d["request"]):
        if i:
            o.append("")
        args = "".join(f", {rust_ident(a)}: u64" for a in r["args"])
        extra = []
        if r.get("send_string"):
            extra.append(f"string: {r['send_string']}")
        if r.get("send_caps"):
            extra.append(f"capabilities: {', '.join(r['send_caps']) if isinstance(r['send_caps'], list) else r['send_caps']}")
        results = ", ".join(r["results"]) or "none"
        o.append(f"    /// {r['name']} ({r['label']}): {r['doc']}{' (' + '; '.join(extra) + ')' if extra else ''} Results: {results}.")
        if r.get("waits"):
            o.append("    /// It may be answered later (`Answer::later()`).")
        o.append(f"    fn {rust_ident(r['name'])}(&mut self, m: &keep_abi::Msg{args}) -> keep_abi::proto::Answer;")
    o += ["}", "",
          "/// Decodes one request and calls its method; `BAD_REQUEST` for a label that",
          "/// is no request, or a request not served through the caller's payload.",
          "pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {",
          "    let label = m.tag.label();",
          "    if !serves(label, m.payload) {",
          "        return keep_abi::proto::Answer::refuse(match label {",
          f"            {' | '.join(lp + r['name'] for r in d['request'])} => {sp}{svc.get('other_interface', 'BAD_REQUEST')},",
          f"            _ => {sp}{svc.get('unknown', 'BAD_REQUEST')},",
          "        });",
          "    }",
          "    match label {"]
    for r in d["request"]:
        words = "".join(f", m.words[{k}]" for k in range(len(r["args"])))
        o.append(f"        {lp}{r['name']} => server.{rust_ident(r['name'])}(m{words}),")
    o += [f"        _ => keep_abi::proto::Answer::refuse({sp}{svc.get('unknown', 'BAD_REQUEST')}),", "    }", "}", ""]
    return o


def table(d, common):
    svc = d["service"]
    names = {s["name"]: s["value"] for s in common["status"] + d.get("status", [])}
    extra = [k for k in ("needs", "cost") if any(r.get(k) for r in d["request"])]
    o = [f"<!-- {HEADER.format(name=svc['name'])} -->",
         f"Protocol (`abi/services/{svc['name']}.toml`): {svc['doc']}", "",
         "| label | request | served to | arguments | results | statuses |" + "".join(f" {k} |" for k in extra),
         "|---|---|---|---|---|---|" + "---|" * len(extra)]
    for r in d["request"]:
        args = ", ".join(r["args"] + [f"capability {c}" for c in r.get("send_caps", [])]
                         + ([f"string: {r['send_string']}"] if r.get("send_string") else [])) or "-"
        res = ", ".join(r["results"] + [f"capability {c}" for c in r.get("reply_caps", [])]
                        + ([f"string: {r['reply_string']}"] if r.get("reply_string") else [])) or "-"
        st = ", ".join(f"`{s}` ({names[s]})" for s in ["OK"] + r["statuses"])
        cells = [f"`{r['name']}` ({r['label']})", r["doc"], r["interface"], args, res, st]
        for k in extra:
            v = r.get(k) or "-"
            cells.append(", ".join(v) if isinstance(v, list) else v)
        o.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    unknown = svc.get("unknown", "BAD_REQUEST")
    o.append(f"| anything else | | | | | `{unknown}` ({names[unknown]}) |" + " |" * len(extra))
    if d.get("interface"):
        o += ["", "| interface | served on | what it is |", "|---|---|---|"]
        for i in d["interface"]:
            o.append(f"| {i['name']} | {i['payload']} | {i['doc']} |")
    o += ["", "| status | meaning |", "|---|---|"]
    for st in common["status"] + d.get("status", []):
        doc = st["doc"] + (f" Here: {svc['bad_request']}" if st["name"] == "BAD_REQUEST" and svc.get("bad_request") else "")
        o.append(f"| `{st['name']}` ({st['value']}) | " + doc.replace("|", "\\|") + " |")
    return "\n".join(o)


def markers(name):
    return f"<!-- idl:{name} begin -->", f"<!-- idl:{name} end -->"


def with_table(text, d, common, where):
    begin, end = markers(d["service"]["name"])
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise Bad(f"{where}: no {begin} ... {end} markers for the protocol table")
    return text[: i + len(begin)] + "\n" + table(d, common) + "\n" + text[j:]


def outputs():
    """{path: generated text} for every service definition."""
    common = load_common()
    out, defs = {}, []
    for path in sorted(DIR.glob("*.toml")):
        if path == COMMON:
            continue
        d = load(path, common)
        defs.append(d)
        svc = d["service"]
        out[ROOT / svc["crate"] / svc.get("rust", "src/protocol.rs")] = rust(d, common)
        docs = ROOT / svc["docs"]
        base = out.get(docs, docs.read_text() if docs.exists() else "")
        out[docs] = with_table(base, d, common, svc["docs"])
    out[FUZZ_TABLE] = fuzz_table(defs, common)
    return out


def main():
    try:
        out = outputs()
    except (Bad, OSError, tomllib.TOMLDecodeError) as e:
        print(f"idlgen: {e}")
        sys.exit(1)
    if "--check" in sys.argv:
        bad = [p for p, text in out.items() if not p.exists() or p.read_text() != text]
        for p in bad:
            print(f"idlgen: {p.relative_to(ROOT)} is out of date; run tools/idlgen.py")
        print(f"idlgen: {len(out) - len(bad)} of {len(out)} generated files match abi/services/")
        sys.exit(1 if bad else 0)
    for p, text in out.items():
        if not p.exists() or p.read_text() != text:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)


if __name__ == "__main__":
    main()
