//! sfi-verify MODULE...: exit 0 if every module is accepted, 1 (with the reason) otherwise.
use std::process::exit;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: sfi-verify MODULE...");
        exit(1);
    }
    let mut ok = true;
    for f in &files {
        match std::fs::read(f) {
            Err(e) => {
                println!("{}: rejected: cannot read: {}", f, e);
                ok = false;
            }
            Ok(bytes) => match sfi_verify::verify(&bytes) {
                Ok(m) => println!(
                    "{}: accepted ({} bytes of code, {} entries, {} imports, {})",
                    f, m.code.len(), m.entries.len(), m.imports.len(),
                    if m.full { "loads and stores sandboxed" } else { "stores sandboxed" }
                ),
                Err(e) => {
                    println!("{}: rejected: {}", f, e);
                    ok = false;
                }
            },
        }
    }
    exit(if ok { 0 } else { 1 });
}
