#!/usr/bin/env python3
"""Host tests of tools/idlgen.py: a good definition generates its labels,
statuses, stub and table; each malformed one is refused with a message
naming the problem (run by `make abi-check`)."""
import sys
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import idlgen  # noqa: E402

COMMON = idlgen.load_common()
GOOD = """
[service]
name = "svc"
crate = "user/x"
docs = "docs/x.md"
doc = "Test."
[[status]]
name = "FULL"
value = 2
doc = "Full."
[[request]]
name = "PUT"
label = 1
interface = "CLIENTS"
args = ["a", "b"]
results = ["c"]
statuses = ["FULL"]
doc = "Put."
[[request]]
name = "STOP"
label = 2
interface = "ADMIN"
args = []
results = []
statuses = []
doc = "Stop."
"""


def load(text, name="svc"):
    with tempfile.TemporaryDirectory() as t:
        p = Path(t) / f"{name}.toml"
        p.write_text(text)
        old = idlgen.ROOT
        idlgen.ROOT = Path(t)
        try:
            return idlgen.load(p, COMMON)
        finally:
            idlgen.ROOT = old


def refused(text, words, name="svc"):
    try:
        load(text, name)
    except idlgen.Bad as e:
        assert all(w in str(e) for w in words), f"message {e} lacks {words}"
        return
    raise AssertionError(f"accepted a definition that should fail ({words})")


def main():
    d = load(GOOD)
    rs = idlgen.rust(d, COMMON)
    for want in ["pub const PUT: u64 = 1;", "pub const OK: u64 = 0;", "pub const BAD_REQUEST: u64 = 1;",
                 "pub const FULL: u64 = 2;", "pub fn put(self, a: u64, b: u64) -> Result<u64, Refused>",
                 "keep_abi::proto::call(self.0, PUT, [a, b, 0, 0])?", "STOP => keep_abi::proto::payload::admin(payload),",
                 "PUT => keep_abi::proto::payload::client(payload),", "FULL => \"FULL\",",
                 "pub fn is_request(label: u64) -> bool {\n    matches!(label, PUT | STOP)\n}"]:
        assert want in rs, want
    md = idlgen.with_table("a\n<!-- idl:svc begin -->\nold\n<!-- idl:svc end -->\nb\n", d, COMMON, "x")
    assert "old" not in md and "| `PUT` (1) | Put. | CLIENTS | a, b | c | `OK` (0), `FULL` (2) |" in md, md
    assert md.startswith("a\n<!-- idl:svc begin -->\n") and md.endswith("<!-- idl:svc end -->\nb\n")
    try:
        idlgen.with_table("no markers", d, COMMON, "docs/x.md")
        raise AssertionError("a page without markers was accepted")
    except idlgen.Bad as e:
        assert "markers" in str(e)
    # The fuzzers' table: each request's label, interface and payload
    # range, arguments with their kinds (by name), statuses by value.
    ft = idlgen.fuzz_table([load(GOOD.replace('"a", "b"', '"count", "b"'))], COMMON)
    for want in ["pub mod svc {", "pub const STATUSES: &[u64] = &[0, 1, 2];",
                 'Request { name: "PUT", label: 1, interface: "CLIENTS", payload: "CLIENTS",',
                 'args: &[Arg { name: "count", kind: Kind::Count }, Arg { name: "b", kind: Kind::Word }], results: 1,',
                 "statuses: &[2], waits: false },", 'Request { name: "STOP", label: 2, interface: "ADMIN", payload: "ADMIN",']:
        assert want in ft, want
    # A request that waits for an event says so to the fuzzers.
    ft = idlgen.fuzz_table([load(GOOD.replace('doc = "Put."', 'doc = "Put."\nwaits = true'))], COMMON)
    assert "statuses: &[2], waits: true }," in ft, ft
    refused(GOOD.replace('doc = "Put."', 'doc = "Put."\nwaits = 1'), ["PUT", "waits"])
    # A service that answers an unknown label with a status of its own.
    md = idlgen.table(load(GOOD.replace('doc = "Test."', 'doc = "Test."\nunknown = "FULL"')), COMMON)
    assert "| anything else | | | | | `FULL` (2) |" in md, md
    refused(GOOD.replace('doc = "Test."', 'doc = "Test."\nunknown = "GONE"'), ["unknown status GONE"])
    refused(GOOD.replace('value = 2', 'value = 1'), ["FULL", "reuses value 1", "BAD_REQUEST"])
    refused(GOOD.replace('name = "FULL"', 'name = "OK"').replace('["FULL"]', '[]'), ["OK", "twice"])
    refused(GOOD.replace('label = 2', 'label = 1'), ["PUT", "STOP", "label 1"])
    refused(GOOD.replace('"ADMIN"', '"OPERATORS"'), ["STOP", "OPERATORS"])
    own = GOOD.replace('"ADMIN"', '"operators"') + '[[interface]]\nname = "operators"\npayload = "ADMIN"\ndoc = "Ops."\n'
    assert "STOP => keep_abi::proto::payload::admin(payload)," in idlgen.rust(load(own), COMMON)
    ft = idlgen.fuzz_table([load(own)], COMMON)
    assert 'Request { name: "STOP", label: 2, interface: "operators", payload: "ADMIN",' in ft, ft
    refused(own.replace('payload = "ADMIN"', 'payload = "STAFF"'), ["operators", "STAFF"])
    # An interface of its own with its own predicate.
    pred = own + 'rust = "crate::ops::is_op"\n'
    assert "STOP => crate::ops::is_op(payload)," in idlgen.rust(load(pred), COMMON)
    refused(own + 'rust = "is op()"\n', ["operators", "predicate"])
    refused(GOOD.replace('statuses = ["FULL"]', 'statuses = ["EMPTY"]'), ["PUT", "EMPTY", "not defined"])
    refused(GOOD.replace('results = ["c"]', 'results = ["c", "d", "e", "f"]'), ["PUT", "3 results"])
    refused(GOOD.replace('name = "PUT"', 'name = "put"'), ["put", "upper-case"])
    refused(GOOD.replace('label = 1', 'label = 281474976710656'), ["PUT", "48-bit"])
    refused(GOOD, ["not the file's name"], name="other")
    refused(GOOD.replace('doc = "Stop."', ''), ["STOP", "no doc"])
    # The checked-in definitions all load and generate.
    for p in sorted(idlgen.DIR.glob("*.toml")):
        if p != idlgen.COMMON:
            with open(p, "rb") as f:
                tomllib.load(f)
    assert idlgen.outputs()
    print("test_idlgen: ok")


if __name__ == "__main__":
    main()
