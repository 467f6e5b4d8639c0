//! sfi-corpus-run MODULE...: loads each module (they must all be accepted by
//! the verifier) and calls its entry `f` with every argument register pointing
//! at a marker in the embedder's memory, under a time-out.  The module may
//! return, fault or time out; what it may not do is change the marker or the
//! embedder.  Prints `PASS corpus-run/NAME` or `FAIL ...` per module (the
//! corpus's accepted modules: sfi/tests/corpus/gen.py).
use sfi_runtime::{CallError, Config, Domain, Imports};
use std::time::Duration;

const MARK: u64 = 0x5a5a_c0ff_ee00_1234;

unsafe extern "C" fn host_fn(_: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    0
}

fn main() {
    let mut imports = Imports::new();
    imports.add("host_fn", host_fn);
    let cfg = Config { heap_size: 1 << 20, stack_size: 1 << 20 };
    // Markers on the heap and on the stack, each with a guard word either side.
    let mut heap = Box::new([MARK; 64]);
    let mut stack = [MARK; 64];
    let (mut passed, mut failed) = (0, 0);
    for path in std::env::args().skip(1) {
        let name = std::path::Path::new(&path).file_stem().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).expect("module");
        let d = match Domain::load(&bytes, &imports, &cfg) {
            Ok(d) => d,
            Err(e) => {
                println!("FAIL corpus-run/{}: not loaded: {}", name, e);
                failed += 1;
                continue;
            }
        };
        let f = d.entry("f").expect("entry f");
        let mut outcome = Vec::new();
        for target in [heap.as_ptr() as u64 + 256, stack.as_mut_ptr() as u64 + 256] {
            let r = d.call_timeout(f, &[target; 6], Duration::from_millis(200));
            outcome.push(match r {
                Ok(_) => "returned".to_string(),
                Err(CallError::Fault { signal, .. }) => format!("fault {}", signal),
                Err(e) => format!("{:?}", e),
            });
        }
        let intact = heap.iter().all(|&w| w == MARK) && unsafe { std::ptr::read_volatile(&stack) }.iter().all(|&w| w == MARK);
        if intact {
            passed += 1;
            println!("PASS corpus-run/{} ({})", name, outcome.join(", "));
        } else {
            failed += 1;
            println!("FAIL corpus-run/{}: the embedder's marker changed ({})", name, outcome.join(", "));
            (*heap, stack) = ([MARK; 64], [MARK; 64]);
        }
    }
    println!("sfi-corpus-run: {} modules run, {} with the marker intact, {} changed it", passed + failed, passed, failed);
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
