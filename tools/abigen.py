#!/usr/bin/env python3
"""Generate the C header, the Rust bindings and the reference page of the
Keep kernel interface from abi/keep.toml (the single source of truth).

    abigen.py            write the generated files
    abigen.py --check    exit 1 if any checked-in file differs from what
                         the definition generates (run by `make test`)

Besides the constants it generates the typed method wrappers of keep-abi
(user/lib/abi/src/methods.rs: one struct per object type that has methods, one
function per method, taking the arguments and returning the results the
definition lists) and the table of the right each method needs
(keep_method_rights in abi.h), which the kernel's dispatch checks.
"""
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "abi" / "keep.toml"
OUT_C = ROOT / "kernel" / "include" / "keep" / "abi.h"
OUT_RS = ROOT / "user" / "lib" / "abi" / "src" / "generated.rs"
OUT_MD = ROOT / "docs" / "abi.md"
OUT_METHODS = ROOT / "user" / "lib" / "abi" / "src" / "methods.rs"

# (toml table, C prefix, Rust module, heading)
GROUPS = [
    ("error", "KEEP_ERR_", "err", "Error codes"),
    ("type", "KEEP_TYPE_", "ty", "Object types"),
    ("right", "KEEP_RIGHT_", "rights", "Rights"),
    ("state", "KEEP_STATE_", "state", "Process states"),
    ("info", "KEEP_INFO_", "info", "KERNEL.INFO keys"),
    ("cpu", "KEEP_CPU_", "cpu", "CPU feature bits"),
    ("check", "KEEP_CHECK_", "check", "KERNEL.CHECK_PAGING selectors"),
    ("memtype", "KEEP_MEM_", "memtype", "Memory-map entry types"),
    ("slot", "KEEP_SLOT_", "slot", "Well-known capability slots"),
    ("layout", "KEEP_", "layout", "Layout constants"),
    ("tag", "KEEP_TAG_", "tag", "Message tag fields (rsi)"),
    ("label", "KEEP_LABEL_", "label", "Labels of kernel-made messages"),
    ("reply", "KEEP_REPLY_", "reply", "Reply labels for fault messages"),
    ("ipc", "KEEP_IPC_", "ipc", "IPC buffer layout (byte offsets)"),
    ("reg", "KEEP_REG_", "reg", "Register block of READ_REGS and WRITE_REGS (word indexes)"),
]
HEADER = "generated from abi/keep.toml by tools/abigen.py; do not edit"


def load():
    with open(SRC, "rb") as f:
        d = tomllib.load(f)
    for table, *_ in GROUPS:
        names = [e["name"] for e in d[table]]
        values = [e["value"] for e in d[table]]
        assert len(set(names)) == len(names), f"duplicate name in {table}"
        if table not in ("right", "layout", "tag", "ipc"):
            assert len(set(values)) == len(values), f"duplicate value in {table}"
    types = {t["name"] for t in d["type"]}
    seen = set()
    for m in d["method"]:
        assert m["object"] in types, m
        assert len(m["args"]) <= 4 and len(m["results"]) <= 4, m
        errs = {e["name"] for e in d["error"]}
        assert all(e in errs for e in m["errors"]), m
        key = (m["object"], m["value"])
        assert key not in seen, f"duplicate method number {key}"
        seen.add(key)
    return d


def c_header(d):
    v = d["meta"]["version"]
    o = [f"/* {HEADER}. */", "#ifndef KEEP_ABI_H", "#define KEEP_ABI_H", ""]
    o.append(f"#define KEEP_VERSION_MAJOR {v[0]}")
    o.append(f"#define KEEP_VERSION_MINOR {v[1]}")
    o.append(f"#define KEEP_VERSION_PATCH {v[2]}")
    o.append(f'#define KEEP_VERSION_STRING "{v[0]}.{v[1]}.{v[2]}"')
    o.append(f"#define KEEP_TAG_METHOD_MASK 0x{d['syscall']['tag_method_mask']:x}")
    for table, prefix, _, heading in GROUPS:
        o += ["", f"/* {heading} */"]
        for e in d[table]:
            o.append(f"#define {prefix}{e['name']} 0x{e['value']:x}ULL /* {e['doc']} */")
    o += ["", "/* Methods: KEEP_M_<OBJECT>_<METHOD> */"]
    for m in d["method"]:
        o.append(f"#define KEEP_M_{m['object']}_{m['name']} {m['value']}")
    o += c_rights(d)
    o += ["", "#endif", ""]
    return "\n".join(o)


def c_rights(d):
    """keep_method_rights(type, method): the rights the invoked capability
    must hold for the method (its `rights` in the definition), 0 for a
    method the type does not have.  The kernel's dispatch checks it before
    the object sees the invocation."""
    ntypes = max(t["value"] for t in d["type"]) + 1
    limit = max(m["value"] for m in d["method"]) + 1
    o = ["", "/* The rights each method needs (a method's \"rights\" in keep.toml), checked",
         " * by the kernel's dispatch before the object sees the invocation: 0 for a",
         " * method the object type does not have. */",
         f"#define KEEP_METHOD_LIMIT {limit}",
         "static inline unsigned long long keep_method_rights(unsigned long long type, unsigned long long method)",
         "{",
         f"    static const unsigned char need[{ntypes}][KEEP_METHOD_LIMIT] = {{"]
    for t in d["type"]:
        ms = [m for m in d["method"] if m["object"] == t["name"]]
        if not ms:
            continue
        o.append(f"        [KEEP_TYPE_{t['name']}] = {{")
        for m in ms:
            rights = " | ".join(f"KEEP_RIGHT_{r.strip()}" for r in m["rights"].split("|"))
            o.append(f"            [KEEP_M_{m['object']}_{m['name']}] = {rights},")
        o.append("        },")
    o += ["    };", f"    return type < {ntypes} && method < KEEP_METHOD_LIMIT ? need[type][method] : 0;", "}"]
    return o


def rs_module(d):
    v = d["meta"]["version"]
    o = [f"// {HEADER}.", "#![allow(dead_code)]", ""]
    o.append(f"pub const VERSION: (u64, u64, u64) = ({v[0]}, {v[1]}, {v[2]});")
    o.append(f"pub const TAG_METHOD_MASK: u64 = 0x{d['syscall']['tag_method_mask']:x};")
    for table, _, module, heading in GROUPS:
        o += ["", f"/// {heading}", f"pub mod {module} {{"]
        for e in d[table]:
            o.append(f"    /// {e['doc']}")
            o.append(f"    pub const {e['name']}: u64 = 0x{e['value']:x};")
        o.append("}")
    o += ["", "/// Method numbers, one module per object type.", "pub mod method {"]
    for t in d["type"]:
        ms = [m for m in d["method"] if m["object"] == t["name"]]
        if not ms:
            continue
        o.append(f"    pub mod {t['name'].lower()} {{")
        for m in ms:
            o.append(f"        /// {m['doc']}")
            o.append(f"        pub const {m['name']}: u64 = {m['value']};")
        o.append("    }")
    o.append("}")
    o += ["", "/// Every method as (object type, method number, rights it needs, name): the",
          "/// table the kernel's dispatch checks (keep_method_rights in abi.h).",
          "pub const METHOD_RIGHTS: &[(u64, u64, u64, &str)] = &["]
    for m in d["method"]:
        rights = " | ".join(f"rights::{r.strip()}" for r in m["rights"].split("|"))
        o.append(f"    (ty::{m['object']}, method::{m['object'].lower()}::{m['name']}, {rights}, \"{m['object']}.{m['name']}\"),")
    o.append("];")
    o += ["", "/// The name of an error code, for messages.", "pub fn error_name(e: u64) -> &'static str {", "    match e {"]
    for e in d["error"]:
        o.append(f"        0x{e['value']:x} => \"{e['name']}\",")
    o += ["        _ => \"UNKNOWN_ERROR\",", "    }", "}"]
    o += ["", "/// The name of an object type, for messages.", "pub fn type_name(t: u64) -> &'static str {", "    match t {"]
    for e in d["type"]:
        o.append(f"        0x{e['value']:x} => \"{e['name']}\",")
    o += ["        _ => \"UNKNOWN\",", "    }", "}"]
    o += ["", "/// The name of a process state, for messages.", "pub fn state_name(s: u64) -> &'static str {", "    match s {"]
    for e in d["state"]:
        o.append(f"        0x{e['value']:x} => \"{e['name']}\",")
    o += ["        _ => \"UNKNOWN\",", "    }", "}", ""]
    return "\n".join(o)


# Object types whose Rust struct name is not the CamelCase of the type name.
RUST_TYPE_NAMES = {"DEVMEM": "DevMem", "IOPORT": "IoPort"}

# Methods for which user/lib/abi/src/lib.rs keeps a convenience under the
# method's own name (taking slices, returning a struct or a bool, or not
# returning on success): their generated wrapper is named `<name>_raw`, and
# the convenience is a thin function over it.  Every other method's wrapper
# is named after the method (Rust keywords get a trailing `_`).
CONVENIENCES = {
    "CONSOLE.WRITE", "CONSOLE.READ",
    "KERNEL.MEMMAP", "KERNEL.PROCESS_INFO", "KERNEL.POWEROFF", "KERNEL.DEBUG_EXIT", "KERNEL.CMDLINE",
    "KERNEL.SET_SEAL_KEY",
    "ACCOUNT.INFO", "NOTIFICATION.INFO", "DMA_DOMAIN.INFO", "DMA_DOMAIN.FAULTS",
    "ASPACE.MAP", "ASPACE.IDENTIFY_CAP", "ASPACE.COMPARE_CAP",
    "PROCESS.STATUS", "PROCESS.WAIT", "PROCESS.SET_NAME", "PROCESS.SET_EMULATION",
}
RUST_KEYWORDS = {"in", "yield", "type", "loop", "move", "ref", "self", "static", "use", "where",
                 "fn", "let", "mod", "match", "impl", "trait", "return", "break", "continue",
                 "const", "crate", "enum", "extern", "false", "true", "for", "if", "else", "mut",
                 "pub", "struct", "super", "unsafe", "while", "as", "dyn", "async", "await", "box"}


def rust_ident(name):
    name = name.lower()
    return name + "_" if name in RUST_KEYWORDS else name


def rust_type_name(t):
    return RUST_TYPE_NAMES.get(t, "".join(w.capitalize() for w in t.split("_")))


def rust_fn_name(m):
    if f"{m['object']}.{m['name']}" in CONVENIENCES:
        return m["name"].lower() + "_raw"
    return rust_ident(m["name"])


def rs_methods(d):
    """The typed wrappers: one struct per object type with methods, one
    function per method."""
    o = [f"// {HEADER}.", "//! Typed wrappers of the kernel objects' methods, one function per",
         "//! method of abi/keep.toml (arguments and results as it lists them).", "",
         "use crate::{invoke, method, Result};", ""]
    for t in d["type"]:
        ms = [m for m in d["method"] if m["object"] == t["name"]]
        if not ms:
            continue
        name = rust_type_name(t["name"])
        o += [f"/// {t['doc']}", "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
              f"pub struct {name}(pub u64);", "", f"impl {name} {{"]
        for i, m in enumerate(ms):
            args = [rust_ident(a) for a in m["args"]]
            n = len(m["results"])
            ret = "()" if n == 0 else "u64" if n == 1 else "(" + ", ".join(["u64"] * n) + ")"
            conv = ".map(drop)" if n == 0 else ".map(|r| r[0])" if n == 1 else \
                ".map(|r| (" + ", ".join(f"r[{k}]" for k in range(n)) + "))"
            words = ", ".join(args + ["0"] * (4 - len(args)))
            res = ", ".join(m["results"]) or "-"
            if i:
                o.append("")
            o.append(f"    /// {m['object']}.{m['name']} ({m['value']}, needs {m['rights']}): {m['doc']}")
            o.append(f"    /// Results: ({res}).")
            o.append("    #[inline]")
            params = "".join(f", {a}: u64" for a in args)
            o.append(f"    pub fn {rust_fn_name(m)}(self{params}) -> Result<{ret}> {{")
            o.append(f"        invoke(self.0, method::{t['name'].lower()}::{m['name']}, [{words}]){conv}")
            o.append("    }")
        o += ["}", ""]
    return "\n".join(o)


def markdown(d):
    v = d["meta"]["version"]
    o = [f"<!-- {HEADER} -->", f"# Keep kernel interface {v[0]}.{v[1]}.{v[2]}", ""]
    o.append("The only system call is capability invocation (`syscall`):")
    o.append("")
    o.append("| register | on entry | on return |")
    o.append("|---|---|---|")
    o.append("| rdi | capability address of the invoked capability (ignored in RECV mode) | protected payload after a receive phase, else preserved |")
    o.append("| rsi | message tag (see the tag fields below) | received tag after a receive phase, else preserved |")
    o.append("| rax | receive time-out in ms for RECV and SEND_RECV (0: none) | error code |")
    for i, (a, r) in enumerate(zip(d["syscall"]["arg_registers"], d["syscall"]["result_registers"])):
        o.append(f"| {a} | argument word {i} | result word {i} |")
    o.append("| rcx, r11 | - | clobbered by `syscall`/`sysret` |")
    o.append("")
    o.append("Every other register is preserved. An invocation first resolves every capability it names and checks every right and argument; on any error it changes nothing. See docs/kernel-manual.md for the model.")
    o.append("")
    o.append("The right a method needs (below) is checked by the kernel's dispatch from the table generated with these constants (`keep_method_rights` in `abi.h`), before the object sees the invocation: a capability without it gets `NO_RIGHTS`. keep-abi has one typed function per method (`user/lib/abi/src/methods.rs`), generated from the same definition.")
    for table, prefix, _, heading in GROUPS:
        o += ["", f"## {heading}", "", "| name | value | meaning |", "|---|---|---|"]
        for e in d[table]:
            o.append(f"| `{prefix}{e['name']}` | `0x{e['value']:x}` | {e['doc']} |")
    o += ["", "## Methods", ""]
    for t in d["type"]:
        ms = [m for m in d["method"] if m["object"] == t["name"]]
        o += [f"### {t['name']}", "", t["doc"], ""]
        if not ms:
            o += ["No methods: every invocation returns `INVALID_METHOD` (the null capability: `INVALID_CAP`).", ""]
        for m in ms:
            args = ", ".join(m["args"]) or "-"
            res = ", ".join(m["results"]) or "-"
            errs = ", ".join(f"`{e}`" for e in m["errors"])
            o.append(f"- **{m['name']}** ({m['value']}): arguments ({args}); results ({res}); needs right {m['rights']}. {m['doc']} Errors: {errs}.")
        o.append("")
    return "\n".join(o)


def main():
    d = load()
    outputs = {OUT_C: c_header(d), OUT_RS: rs_module(d), OUT_METHODS: rs_methods(d), OUT_MD: markdown(d)}
    if "--check" in sys.argv:
        bad = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        for p in bad:
            print(f"abigen: {p.relative_to(ROOT)} is out of date; run tools/abigen.py")
        print(f"abigen: {len(outputs) - len(bad)} of {len(outputs)} generated files match abi/keep.toml")
        sys.exit(1 if bad else 0)
    for p, text in outputs.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


if __name__ == "__main__":
    main()
