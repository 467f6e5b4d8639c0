//! Unit tests: small modules built from hand-encoded bytes.
use super::*;

// Written with `add %r14,%r11` (4d 01 f3) and `add %r14,%rsp` (4c 01 f4) as place holders,
// which `module_with` turns into `add BASE_SLOT(%rip), %r11/%rsp` (7 bytes) at their final position.
const RET: &[u8] = &[0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x41, 0xff, 0xe3]; // masked return via r11

fn base_adds(code: &[u8]) -> Vec<u8> {
    let mut c = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let op = match &code[i..(i + 3).min(code.len())] {
            [0x4d, 0x01, 0xf3] => [0x4c, 0x03, 0x1d],
            [0x4c, 0x01, 0xf4] => [0x48, 0x03, 0x25],
            _ => {
                c.push(code[i]);
                i += 1;
                continue;
            }
        };
        c.extend_from_slice(&op);
        let d = BASE_SLOT.wrapping_sub(CODE_BASE + c.len() as u64 + 4) as u32;
        c.extend_from_slice(&d.to_le_bytes());
        i += 3;
    }
    c
}

fn module_with(code: &[u8], full: bool, imports: &[&str], data: &[u8], relocs: &[u32]) -> Vec<u8> {
    raw_module_with(&base_adds(code), full, imports, data, relocs)
}

fn raw_module_with(code: &[u8], full: bool, imports: &[&str], data: &[u8], relocs: &[u32]) -> Vec<u8> {
    let mut c = code.to_vec();
    while c.len() % 32 != 0 {
        c.push(0xcc);
    }
    let data_off = ((CODE_BASE + c.len() as u64 + 0xfff) & !0xfff) as u32;
    let mut m = MAGIC.to_vec();
    for v in [full as u32, c.len() as u32, data_off, data.len() as u32, 0, 1, imports.len() as u32, relocs.len() as u32, 0] {
        m.extend_from_slice(&v.to_le_bytes());
    }
    m.resize(HEADER_SIZE, 0);
    m.extend_from_slice(&c);
    m.extend_from_slice(data);
    m.extend_from_slice(&0u32.to_le_bytes());
    m.push(1);
    m.push(b'f');
    for i in imports {
        m.push(i.len() as u8);
        m.extend_from_slice(i.as_bytes());
    }
    for r in relocs {
        m.extend_from_slice(&r.to_le_bytes());
    }
    m
}

fn module(code: &[u8]) -> Vec<u8> {
    module_with(code, false, &[], &[], &[])
}

fn with_ret(prefix: &[u8]) -> Vec<u8> {
    [prefix, RET].concat()
}

/// The verdict, which the fast path (per-opcode facts, no-ops and direct
/// branches by their bytes) and the reference pass must agree on.
fn reason(m: &[u8]) -> &'static str {
    let verdict = |r: Result<Module, Reject>| r.map(|_| ()).map_err(|e| (e.offset, e.reason));
    let (fast, reference) = (verdict(verify(m)), verdict(verify_reference(m)));
    assert_eq!(fast, reference, "the fast path and the reference pass disagree");
    match fast {
        Ok(_) => "accepted",
        Err(e) => e.1,
    }
}

#[test]
fn accepts_masked_return() {
    assert_eq!(reason(&module(RET)), "accepted");
}
#[test]
fn accepts_gs_store_with_32bit_address() {
    // mov %rax, %gs:8(%edi)
    assert_eq!(reason(&module(&with_ret(&[0x65, 0x67, 0x48, 0x89, 0x47, 0x08]))), "accepted");
}
#[test]
fn rejects_plain_store() {
    // mov %rax, 8(%rdi)
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x89, 0x47, 0x08]))), "unsandboxed store");
}
#[test]
fn rejects_gs_store_with_64bit_address() {
    assert_eq!(reason(&module(&with_ret(&[0x65, 0x48, 0x89, 0x47, 0x08]))), "unsandboxed store");
}
#[test]
fn accepts_rsp_store_and_rejects_rsp_indexed_store() {
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x89, 0x44, 0x24, 0x08]))), "accepted"); // mov %rax,8(%rsp)
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x89, 0x04, 0x3c]))), "unsandboxed store"); // mov %rax,(%rsp,%rdi)
}
#[test]
fn loads_free_in_stores_mode_but_not_in_full_mode() {
    let code = with_ret(&[0x48, 0x8b, 0x47, 0x08]); // mov 8(%rdi),%rax
    assert_eq!(reason(&module_with(&code, false, &[], &[], &[])), "accepted");
    assert_eq!(reason(&module_with(&code, true, &[], &[], &[])), "unsandboxed load");
}
#[test]
fn rip_relative_store_must_target_data() {
    // mov %eax, disp(%rip): next ip = CODE_BASE+6; target = data (0x21000) or code (0x20000)
    let to = |target: u32| {
        let d = target.wrapping_sub(CODE_BASE as u32 + 6);
        let mut c = vec![0x89, 0x05];
        c.extend_from_slice(&d.to_le_bytes());
        with_ret(&c)
    };
    assert_eq!(reason(&module_with(&to(0x21000), false, &[], &[0; 16], &[])), "accepted");
    assert_eq!(reason(&module_with(&to(0x20000), false, &[], &[0; 16], &[])), "unsandboxed store");
}
#[test]
fn rejects_unmasked_indirect_jump() {
    assert_eq!(reason(&module(&[0x41, 0x5b, 0x41, 0xff, 0xe3])), "indirect branch not sandboxed");
}
#[test]
fn rejects_ret_syscall_and_privileged() {
    assert_eq!(reason(&module(&[0xc3])), "return instruction");
    assert_eq!(reason(&module(&with_ret(&[0x0f, 0x05]))), "system call or interrupt");
    assert_eq!(reason(&module(&with_ret(&[0xf4]))), "privileged instruction");
    assert_eq!(reason(&module(&with_ret(&[0x0f, 0x01, 0xf8]))), "segment instruction"); // swapgs
    assert_eq!(reason(&module(&with_ret(&[0x0f, 0x20, 0xc0]))), "privileged instruction"); // mov %cr0,%rax
}
#[test]
fn base_comes_from_the_slot_not_a_register() {
    assert_eq!(reason(&module(&with_ret(&[0x4d, 0x31, 0xf6]))), "accepted"); // xor %r14,%r14: %r14 is an ordinary register
    // the former `add %r14,%r11` no longer sandboxes anything
    assert_eq!(reason(&raw_module_with(RET, false, &[], &[], &[])), "indirect branch not sandboxed");
    let jmp = |add: &[u8], slot: u64| {
        let mut c = vec![0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0];
        c.extend_from_slice(add);
        let d = slot.wrapping_sub(CODE_BASE + c.len() as u64 + 4) as u32;
        c.extend_from_slice(&d.to_le_bytes());
        c.extend_from_slice(&[0x41, 0xff, 0xe3]);
        raw_module_with(&c, false, &[], &[], &[])
    };
    assert_eq!(reason(&jmp(&[0x4c, 0x03, 0x1d], BASE_SLOT)), "accepted");
    assert_eq!(reason(&jmp(&[0x4c, 0x03, 0x1d], BASE_SLOT + 8)), "indirect branch not sandboxed"); // another slot
    assert_eq!(reason(&jmp(&[0x65, 0x4c, 0x03, 0x1d], BASE_SLOT)), "unsandboxed load"); // %gs: B + B + slot
    assert_eq!(reason(&jmp(&[0x64, 0x4c, 0x03, 0x1d], BASE_SLOT)), "segment override %fs"); // %fs
    assert_eq!(reason(&jmp(&[0x67, 0x4c, 0x03, 0x1d], BASE_SLOT)), "indirect branch not sandboxed"); // %eip: wraps below B
    assert_eq!(reason(&jmp(&[0x4c, 0x8b, 0x1d], BASE_SLOT)), "indirect branch not sandboxed"); // mov, not add
}
#[test]
fn rsp_changes_need_resandboxing_or_a_check() {
    let sub = [0x48, 0x83, 0xec, 0x40]; // sub $64,%rsp
    let pair = [0x81, 0xcc, 0, 0, 0, 0xf0, 0x4c, 0x01, 0xf4]; // or $0xf0000000,%esp; add %r14,%rsp
    let old_pair = [0x89, 0xe4, 0x4c, 0x01, 0xf4]; // mov %esp,%esp; add %r14,%rsp: anywhere in the domain, not enough
    // A small step is checked by the return's pop (rule 5); a branch before any check is not allowed,
    // nor a step by a register, a second step, or one over 64 KiB.
    assert_eq!(reason(&module(&with_ret(&sub))), "accepted");
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &[0xeb, 0x00][..]].concat()))), "branch before the stack pointer was checked");
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x29, 0xc4]))), "stack pointer changed without re-sandboxing"); // sub %rax,%rsp
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &sub[..]].concat()))), "stack pointer changed without re-sandboxing");
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x81, 0xec, 0x08, 0x00, 0x01, 0x00]))), "stack pointer changed without re-sandboxing"); // sub $0x10008
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &[0x48, 0x89, 0x44, 0x24, 0x08, 0xeb, 0x00][..]].concat()))), "accepted"); // mov %rax,8(%rsp); jmp
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &[0x48, 0x8d, 0x04, 0x24, 0xeb, 0x00][..]].concat()))), "branch before the stack pointer was checked"); // lea (%rsp),%rax: no access
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &pair[..], &[0x90; 15][..]].concat()))), "accepted");
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &old_pair[..]].concat()))), "stack pointer changed without re-sandboxing");
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x83, 0xe4, 0xf0]))), "accepted"); // and $-16,%rsp
    // and $-0x20000,%rsp could take %rsp more than SP_SLACK below the stack area
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x81, 0xe4, 0, 0, 0xfe, 0xff]))), "stack pointer changed without re-sandboxing");
    // and $-0x20000000,%rsp could take %rsp below the stack area
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x81, 0xe4, 0, 0, 0, 0xe0]))), "stack pointer changed without re-sandboxing");
    // and $0x7fffffff,%rsp would clear the domain base
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x81, 0xe4, 0xff, 0xff, 0xff, 0x7f]))), "stack pointer changed without re-sandboxing");
}
#[test]
fn return_through_pushed_masked_address() {
    let seq = [0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x41, 0x53, 0xc3]; // pop; and; add; push %r11; ret
    assert_eq!(reason(&module(&seq)), "accepted");
    let wrong_reg = [0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x50, 0xc3]; // ... push %rax; ret
    assert_eq!(reason(&module(&wrong_reg)), "return instruction");
    let no_mask = [0x41, 0x5b, 0x4d, 0x01, 0xf3, 0x41, 0x53, 0xc3];
    assert_eq!(reason(&module(&no_mask)), "return instruction");
    let mut split = vec![0x90; 19]; // the sequence straddles a bundle boundary: and, add in bundle 0, push, ret in bundle 1
    split.extend_from_slice(&seq);
    assert_eq!(reason(&module(&split)), "return instruction");
    let into = [&[0xeb, 0x0d][..], &seq[..]].concat(); // jmp to the push
    assert_eq!(reason(&module(&into)), "branch into a sandboxing sequence");
    assert_eq!(reason(&module(&[0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x41, 0x53, 0xc2, 0, 0])), "return instruction"); // ret $0
}
#[test]
fn rejects_instruction_crossing_bundle() {
    let mut c = vec![0x90; 30];
    c.extend_from_slice(&[0xb8, 1, 0, 0, 0]); // mov $1,%eax at offset 30
    assert_eq!(reason(&module(&with_ret(&c))), "instruction crosses a bundle boundary");
}
#[test]
fn direct_branch_targets() {
    // jmp +1 into the middle of a 5-byte mov
    assert_eq!(reason(&module(&with_ret(&[0xeb, 0x01, 0xb8, 1, 0, 0, 0]))), "branch into the middle of an instruction");
    // jmp far outside
    assert_eq!(reason(&module(&with_ret(&[0xe9, 0, 0, 0, 0x10]))), "direct branch outside the code segment");
    // call into trampoline 1: allowed only when the module has one import
    let d = (TRAMP_BASE + BUNDLE).wrapping_sub(CODE_BASE + 5) as u32;
    let call = with_ret(&[&[0xe8][..], &d.to_le_bytes()[..]].concat());
    assert_eq!(reason(&module_with(&call, false, &["h"], &[], &[])), "accepted");
    assert_eq!(reason(&module_with(&call, false, &[], &[], &[])), "direct branch outside the code segment");
}
#[test]
fn rejects_branch_into_sequence() {
    // jmp to the add of a masked return: eb 04 then RET (pop 2 bytes, and 4 bytes)
    let c = [&[0xeb, 0x06][..], RET].concat();
    assert_eq!(reason(&module(&c)), "branch into a sandboxing sequence");
}
#[test]
fn rejects_undecodable() {
    assert_eq!(reason(&module(&with_ret(&[0x06]))), "undecodable instruction");
}
#[test]
fn container_errors() {
    let good = module(RET);
    assert_eq!(reason(&good[..good.len() - 1]), "truncated module");
    assert_eq!(reason(&[&good[..], &[0][..]].concat()), "trailing bytes");
    let mut bad = good.clone();
    bad[0] = b'X';
    assert_eq!(reason(&bad), "bad magic");
    let mut bad = good.clone();
    bad[50] = 1;
    assert_eq!(reason(&bad), "bad header");
    let mut bad = good.clone();
    bad[12] = 33; // code size not a multiple of 32
    assert_eq!(reason(&bad), "bad header");
    assert_eq!(reason(&[]), "truncated module");
}
#[test]
fn relocations_must_be_aligned_slots_in_data() {
    assert_eq!(reason(&module_with(RET, false, &[], &[0; 16], &[8])), "accepted");
    assert_eq!(reason(&module_with(RET, false, &[], &[0; 16], &[12])), "bad relocation");
    assert_eq!(reason(&module_with(RET, false, &[], &[0; 16], &[16])), "bad relocation");
}
#[test]
fn nop_forms_are_nops_to_the_decoder() {
    // Whatever nop_len takes is a no-op of that length to the decoder.
    let tails: [[u8; 13]; 3] = [[0; 13], [0xff; 13], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]];
    let mut taken = 0;
    for b0 in [0x90u8, 0x66, 0x0f, 0x2e] {
        for b1 in 0..=255u8 {
            for b2 in 0..=255u8 {
                for t in &tails {
                    let b = [&[b0, b1, b2][..], &t[..]].concat();
                    let n = nop_len(&b);
                    if n > 0 {
                        taken += 1;
                        let i = Decoder::with_ip(64, &b, CODE_BASE, DecoderOptions::NONE).decode();
                        assert!(i.mnemonic() == Mnemonic::Nop && i.len() == n, "{:02x?}: {:?}, {} bytes, not a {}-byte nop", &b[..n], i.mnemonic(), i.len(), n);
                    }
                }
            }
        }
    }
    assert!(taken > 0);
    // The forms GNU as pads with are all taken, and only with zero displacements.
    let long = [0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0];
    for (prefix, n) in [(&[][..], 8), (&[0x66][..], 9), (&[0x66, 0x2e][..], 10), (&[0x66, 0x66, 0x2e][..], 11), (&[0x66; 4][..], 12)] {
        assert_eq!(nop_len(&[prefix, &long[..], &[0xcc; 4][..]].concat()), n);
    }
    for (b, n) in [(&[0x90][..], 1), (&[0x66, 0x90][..], 2), (&[0x0f, 0x1f, 0x00][..], 3), (&[0x0f, 0x1f, 0x40, 0][..], 4),
                   (&[0x0f, 0x1f, 0x44, 0, 0][..], 5), (&[0x66, 0x0f, 0x1f, 0x44, 0, 0][..], 6), (&[0x0f, 0x1f, 0x80, 0, 0, 0, 0][..], 7)] {
        assert_eq!(nop_len(&[b, &[0xcc; 4][..]].concat()), n);
    }
    assert_eq!(nop_len(&[0x0f, 0x1f, 0x40, 0x08, 0xcc]), 0); // nopl 8(%rax): a no-op, left to the decoder
    assert_eq!(nop_len(&[0x0f, 0x1f, 0x84, 0, 0, 0, 0]), 0); // cut short
}
#[test]
fn direct_branch_forms_are_branches_to_the_decoder() {
    // Whatever direct_branch takes is a direct branch of that length and target to the decoder.
    let mut taken = 0;
    for b0 in 0..=255u8 {
        for b1 in 0..=255u8 {
            for t in [[0x12u8, 0x34, 0x56, 0x78, 0], [0xff; 5], [0, 0, 0, 0x80, 0]] {
                let b = [&[b0, b1][..], &t[..]].concat();
                if let Some((n, d)) = direct_branch(&b) {
                    taken += 1;
                    let i = Decoder::with_ip(64, &b, CODE_BASE, DecoderOptions::NONE).decode();
                    assert!(matches!(i.flow_control(), FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch | FlowControl::Call)
                        && i.len() == n && i.near_branch_target() == (CODE_BASE + n as u64).wrapping_add(d as u64), "{:02x?}", &b[..n]);
                }
            }
        }
    }
    // jcc rel8 (16) and jmp rel8 with any displacement; call, jmp and jcc rel32 (18) with any second byte or condition.
    assert_eq!(taken, 3 * (17 * 256 + 2 * 256 + 16));
    assert_eq!(direct_branch(&[0xe8, 0, 0, 0]), None); // cut short
}
#[test]
fn gs_access_forms_are_safe_accesses_to_the_decoder() {
    // Whatever gs_access_len takes is, to the decoder and the full pass, an
    // allowed instruction of that length, not a branch, whose only memory
    // access is its explicit %gs operand with 32-bit addressing and which
    // does not write %rsp; and a module of it gets the same verdict from
    // the fast and the reference pass.
    let mut factory = InstructionInfoFactory::new();
    let mut taken = 0;
    let opcodes: [&[u8]; 30] = [
        &[0x88], &[0x89], &[0x8a], &[0x8b], &[0xc6], &[0xc7], &[0x63], &[0x80], &[0x81], &[0x83], &[0x38], &[0x39],
        &[0x3a], &[0x3b], &[0x0f, 0xb6], &[0x0f, 0xb7], &[0x0f, 0xbe], &[0x0f, 0xbf],
        // not taken: other opcodes, some with a ModRM
        &[0x8c], &[0x8d], &[0x8e], &[0x8f], &[0x84], &[0xf6], &[0xff], &[0x3c], &[0x0f, 0xb5], &[0x0f, 0x10], &[0x0f, 0xb8], &[0xc4],
    ];
    let mut forms = std::collections::BTreeSet::new();
    for (pi, prefixes) in [&[0x65u8, 0x67][..], &[0x65, 0x67, 0x66], &[0x67, 0x65], &[0x65, 0x66, 0x67], &[0x65, 0x67, 0xf3], &[0x64, 0x67]].into_iter().enumerate() {
        for rex in [None, Some(0x40u8), Some(0x41), Some(0x44), Some(0x48), Some(0x4c), Some(0x4f)] {
            for (oi, op) in opcodes.into_iter().enumerate() {
                for modrm in 0..=255u8 {
                    for sib in [0x00u8, 0x05, 0x24, 0x25, 0x64, 0xe5] {
                        let b = [prefixes, rex.as_slice(), op, &[modrm, sib], &[0x11; 8], &[0xcc; 4]].concat();
                        let n = gs_access_len(&b);
                        if n == 0 {
                            continue;
                        }
                        taken += 1;
                        forms.insert((pi, rex, oi));
                        let i = Decoder::with_ip(64, &b, CODE_BASE, DecoderOptions::NONE).decode();
                        let info = factory.info(&i);
                        let ok = !i.is_invalid()
                            && i.len() == n
                            && i.flow_control() == FlowControl::Next
                            && check_instruction(&i).is_ok()
                            && i.memory_segment() == Register::GS
                            && explicit_memory_safe(&i, true, u64::MAX)
                            && info.used_memory().iter().all(|m| m.segment() == Register::GS && m.address_size() == CodeSize::Code32)
                            && !info.used_registers().iter().any(|r| {
                                r.register().full_register() == Register::RSP && !matches!(r.access(), OpAccess::Read | OpAccess::CondRead)
                            });
                        assert!(ok, "{:02x?}: {:?}, {} bytes", &b[..n.max(i.len())], i.code(), i.len());
                        if taken % 61 == 0 {
                            for full in [false, true] {
                                reason(&module_with(&with_ret(&b[..n]), full, &[], &[], &[]));
                            }
                        }
                    }
                }
            }
        }
    }
    // Each of the 18 opcodes with both prefix forms and every REX; nothing else.
    assert_eq!(forms.len(), 2 * 7 * 18, "{:?}", forms);
    assert!(forms.iter().all(|&(pi, _, oi)| pi < 2 && oi < 18));
    // mov %rax,%gs:8(%edi) and the like; %rsp as a destination, and other prefix orders, go to the decoder.
    assert_eq!(gs_access_len(&[0x65, 0x67, 0x48, 0x89, 0x47, 0x08, 0xcc]), 6);
    assert_eq!(gs_access_len(&[0x65, 0x67, 0x48, 0x8b, 0x67, 0x08, 0xcc]), 0); // mov %gs:8(%edi),%rsp
    assert_eq!(gs_access_len(&[0x67, 0x65, 0x48, 0x89, 0x47, 0x08, 0xcc]), 0);
    assert_eq!(gs_access_len(&[0x65, 0x67, 0x66, 0xc7, 0x07, 0x34, 0x12, 0xcc]), 7); // movw $0x1234,%gs:(%edi)
    assert_eq!(gs_access_len(&[0x65, 0x67, 0x48, 0x89, 0x87, 0, 0]), 0); // cut short
}
#[test]
fn nops_and_direct_branches_keep_the_rules() {
    let sub = [0x48, 0x83, 0xec, 0x08]; // sub $8,%rsp
    let nop = [0x0f, 0x1f, 0x00];
    // A no-op neither checks a small step of %rsp nor spoils it; a branch after it is still refused.
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &nop[..], &[0x50][..]].concat()))), "accepted"); // push checks
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &nop[..], &[0xeb, 0x00][..]].concat()))), "branch before the stack pointer was checked");
    assert_eq!(reason(&module(&with_ret(&[&sub[..], &nop[..], &[0x0f, 0x84, 0, 0, 0, 0][..]].concat()))), "branch before the stack pointer was checked");
    // ... nor between the two instructions of a %rsp re-sandboxing.
    let or = [0x81, 0xcc, 0, 0, 0, 0xf0];
    assert_eq!(reason(&module(&with_ret(&[&[0x48, 0x29, 0xc4][..], &or[..], &nop[..], &[0x4c, 0x01, 0xf4][..]].concat()))),
               "stack pointer changed without re-sandboxing");
    // A no-op splits a sandboxing sequence.
    assert_eq!(reason(&module(&[0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x90, 0x4d, 0x01, 0xf3, 0x41, 0xff, 0xe3])), "indirect branch not sandboxed");
    assert_eq!(reason(&module(&[0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x90, 0x41, 0x53, 0xc3])), "return instruction");
    // Branches into a no-op and out of the code; a no-op or branch across a bundle boundary.
    assert_eq!(reason(&module(&with_ret(&[&[0xeb, 0x01][..], &nop[..]].concat()))), "branch into the middle of an instruction");
    assert_eq!(reason(&module(&with_ret(&[0x0f, 0x85, 0, 0, 0, 0x10]))), "direct branch outside the code segment");
    assert_eq!(reason(&module(&with_ret(&[&[0x90; 30][..], &nop[..]].concat()))), "instruction crosses a bundle boundary");
    assert_eq!(reason(&module(&with_ret(&[&[0x90; 28][..], &[0xe9, 0, 0, 0, 0][..]].concat()))), "instruction crosses a bundle boundary");
}

// ---- the five escapes the rules close, each at its root ----

/// `disp32(%rip)` operand bytes (ModRM already given) for an instruction of
/// `len` bytes starting at code offset `at`, pointing to domain offset `target`.
fn rip_disp(at: usize, len: usize, target: u64) -> [u8; 4] {
    (target.wrapping_sub(CODE_BASE + (at + len) as u64) as u32).to_le_bytes()
}

#[test]
fn cache_never_learns_from_push_or_pop_with_a_memory_operand() {
    // push %rax; push %rax; pop (%rsp); pop %rax; push %rsi; pop (%rdi): the
    // first pop's implicit read at (%rsp) looks like its explicit operand.
    let code = [0x50, 0x50, 0x8f, 0x04, 0x24, 0x58, 0x56, 0x8f, 0x07];
    assert_eq!(reason(&module(&with_ret(&code))), "unsandboxed store");
    // the same with push m64 (a store at the new %rsp, a load from the operand)
    assert_eq!(reason(&module_with(&with_ret(&[0xff, 0x34, 0x24, 0x58, 0xff, 0x37, 0x58]), true, &[], &[], &[])), "unsandboxed load");
    // pop to a sandboxed operand is still fine
    assert_eq!(reason(&module(&with_ret(&[0x50, 0x8f, 0x04, 0x24, 0x50, 0x65, 0x67, 0x8f, 0x07]))), "accepted");
}

#[test]
fn bit_strings_with_a_register_offset_are_refused() {
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x0f, 0xab, 0x04, 0x24]))), "bit-string access with a register offset"); // bts %rax,(%rsp)
    let mut btc = vec![0x48, 0x0f, 0xbb, 0x05];
    btc.extend_from_slice(&rip_disp(0, 8, 0x21000));
    assert_eq!(reason(&module_with(&with_ret(&btc), false, &[], &[0; 16], &[])), "bit-string access with a register offset"); // btc %rax,d(%rip)
    assert_eq!(reason(&module(&with_ret(&[0x65, 0x67, 0x0f, 0xb3, 0x07]))), "bit-string access with a register offset"); // btr %eax,%gs:(%edi)
    // bt reads anywhere too: refused in both modes, even where loads are free
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x0f, 0xa3, 0x07]))), "bit-string access with a register offset"); // bt %rax,(%rdi)
    // an immediate offset stays inside the operand; a register operand is no memory access
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x0f, 0xba, 0x2c, 0x24, 0x3f]))), "accepted"); // bts $63,(%rsp)
    assert_eq!(reason(&module(&with_ret(&[0x48, 0x0f, 0xab, 0xc3]))), "accepted"); // bts %rax,%rbx
}

#[test]
fn only_an_access_that_always_faults_checks_a_stack_step() {
    let step = [0x48, 0x81, 0xec, 0x00, 0x00, 0x01, 0x00]; // sub $0x10000,%rsp
    for check in [
        &[0xc4, 0xe2, 0x7d, 0x2c, 0x0c, 0x24][..], // vmaskmovps (%rsp),%ymm0,%ymm1
        &[0xc4, 0xe2, 0x7d, 0x2e, 0x0c, 0x24][..], // vmaskmovps %ymm1,%ymm0,(%rsp)
        &[0xc4, 0xe2, 0x7d, 0x2d, 0x0c, 0x24][..], // vmaskmovpd (%rsp),%ymm0,%ymm1
        &[0xc4, 0xe2, 0x7d, 0x8c, 0x0c, 0x24][..], // vpmaskmovd (%rsp),%ymm0,%ymm1
        &[0xc4, 0xe2, 0x7d, 0x8e, 0x0c, 0x24][..], // vpmaskmovd %ymm1,%ymm0,(%rsp)
        &[0xc4, 0xe2, 0xfd, 0x8c, 0x0c, 0x24][..], // vpmaskmovq (%rsp),%ymm0,%ymm1
        &[0x48, 0x0f, 0x45, 0x04, 0x24][..],       // cmovne (%rsp),%rax
        &[0x0f, 0x18, 0x0c, 0x24][..],             // prefetcht0 (%rsp)
        &[0x0f, 0xae, 0x3c, 0x24][..],             // clflush (%rsp)
    ] {
        let code = [&step[..], check, &[0xeb, 0x00][..]].concat();
        assert_eq!(reason(&module(&with_ret(&code))), "branch before the stack pointer was checked", "{:02x?}", check);
    }
    for check in [
        &[0x48, 0x89, 0x04, 0x24][..],       // mov %rax,(%rsp)
        &[0x48, 0x8b, 0x04, 0x24][..],       // mov (%rsp),%rax
        &[0xc5, 0xfc, 0x11, 0x04, 0x24][..], // vmovups %ymm0,(%rsp)
        &[0x48, 0x83, 0x3c, 0x24, 0x00][..], // cmpq $0,(%rsp)
    ] {
        let code = [&step[..], check, &[0xeb, 0x00][..]].concat();
        assert_eq!(reason(&module(&with_ret(&code))), "accepted", "{:02x?}", check);
    }
}

#[test]
fn branch_encodings_that_amd_decodes_differently_are_refused() {
    let vendor = "encoding decoded differently by CPU vendors";
    for b in [
        &[0x66, 0x0f, 0x85, 0x00, 0x00, 0x00, 0x00][..], // jne rel32 to Intel, jne rel16 + add %al,(%rax) to AMD
        &[0x66, 0xe9, 0x00, 0x00, 0x00, 0x00][..],       // jmp
        &[0x66, 0xe8, 0x00, 0x00, 0x00, 0x00][..],       // call
        &[0x66, 0xeb, 0x00][..],                         // jmp rel8: target truncated to 16 bits on AMD
        &[0x66, 0x74, 0x00][..],                         // je rel8
        &[0x66, 0x48, 0x0f, 0x84, 0x00, 0x00, 0x00, 0x00][..], // REX.W between: still refused
        &[0x67, 0xe8, 0x00, 0x00, 0x00, 0x00][..],       // address size on a call
        &[0x0f, 0xff, 0xc0][..],                         // ud0: ModRM on Intel, none on AMD
    ] {
        assert_eq!(reason(&module(&with_ret(b))), vendor, "{:02x?}", b);
    }
    // 66 on a return and on a masked indirect jump
    assert_eq!(reason(&module(&[0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x41, 0x53, 0x66, 0xc3])), vendor);
    assert_eq!(reason(&module(&[0x41, 0x5b, 0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x66, 0x41, 0xff, 0xe3])), vendor);
    // the same branches without the prefix, and 66-prefixed no-ops, are fine
    assert_eq!(reason(&module(&with_ret(&[0x0f, 0x85, 0x00, 0x00, 0x00, 0x00, 0xeb, 0x00, 0x66, 0x90, 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00]))), "accepted");
    assert_eq!(reason(&module(&with_ret(&[0x2e, 0x74, 0x00, 0x3e, 0x75, 0x00]))), "accepted"); // branch hints
}

#[test]
fn code_may_not_run_past_its_end() {
    let past = "code can run past its end";
    let exact = |c: &[u8]| {
        let pad = vec![0x90; (32 - base_adds(c).len() % 32) % 32];
        raw_module_with(&base_adds(&[&pad[..], c].concat()), false, &[], &[], &[])
    };
    assert_eq!(reason(&exact(&[0x90])), past); // a no-op in the last byte
    assert_eq!(reason(&exact(&[0x74, 0xfe])), past); // a conditional branch
    assert_eq!(reason(&exact(&[0xe8, 0xfb, 0xff, 0xff, 0xff])), past); // a call returns to the end
    assert_eq!(reason(&exact(&[0x48, 0x89, 0x04, 0x24])), past); // mov %rax,(%rsp)
    assert_eq!(reason(&exact(RET)), "accepted");
    assert_eq!(reason(&exact(&[0xeb, 0xfe])), "accepted"); // jmp
    assert_eq!(reason(&exact(&[0xcc])), "accepted"); // int3
    assert_eq!(reason(&exact(&[0x0f, 0x0b])), "accepted"); // ud2
    assert_eq!(reason(&module(&[0x90, 0x90])), "accepted"); // padded with int3 by module()
}

/// Every instruction the verifier allows, over the whole opcode space (one-,
/// two- and three-byte maps, VEX maps 1-3 with every pp/L/W, behind no
/// prefix, 66, F2 or F3, with every ModRM reg field and a memory and a
/// register r/m): each memory access iced reports is its explicit operand,
/// the stack slot of push/pop/call, or one of the implicit accesses listed
/// here, which rule 3 checks like any other (docs/sfi.md, "What each
/// instruction can address"; `xlat` is reported as an explicit operand,
/// `(%rbx,%al)`, with an index).  A new kind of implicit access (a newer iced,
/// a wider allow-list) fails this test until it is reviewed and listed.
#[test]
fn every_allowed_instruction_addresses_only_what_rule_3_checks() {
    use std::collections::BTreeSet;
    let mut implicit = BTreeSet::new();
    let mut max_size = 0usize;
    let mut allowed = 0usize;
    let mut factory = InstructionInfoFactory::new();
    let mut opcodes: Vec<Vec<u8>> = Vec::new();
    for op in 0..=255u8 {
        opcodes.push(vec![op]);
        opcodes.push(vec![0x0f, op]);
        opcodes.push(vec![0x0f, 0x38, op]);
        opcodes.push(vec![0x0f, 0x3a, op]);
        for map in 1..=3u8 {
            for pp in 0..4u8 {
                for l in 0..2u8 {
                    for w in 0..2u8 {
                        // C4 RXB.mmmmm W.vvvv.L.pp (vvvv = 1111: no register)
                        opcodes.push(vec![0xc4, 0xe0 | map, w << 7 | 0x78 | l << 2 | pp, op]);
                    }
                }
            }
        }
    }
    for opc in &opcodes {
        for prefix in [&[][..], &[0x66], &[0xf2], &[0xf3], &[0x48], &[0xf3, 0x48]] {
            if opc[0] == 0xc4 && !prefix.is_empty() {
                continue; // VEX takes no legacy 66/F2/F3
            }
            for reg in 0..8u8 {
                for rm in [0x07u8, 0xc1] {
                    // (%rdi) or %rcx/%xmm1, then an immediate's worth of bytes
                    let bytes = [prefix, &opc[..], &[reg << 3 | rm, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88][..]].concat();
                    let mut d = Decoder::with_ip(64, &bytes, CODE_BASE, DecoderOptions::NONE);
                    let i = d.decode();
                    if i.is_invalid() || check_instruction(&i).is_err() {
                        continue;
                    }
                    allowed += 1;
                    let info = factory.info(&i);
                    let has_mem = (0..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory);
                    for m in info.used_memory() {
                        max_size = max_size.max(m.memory_size().size());
                        let explicit = has_mem && m.base() == i.memory_base() && m.index() == i.memory_index()
                            && m.displacement() == i.memory_displacement64();
                        let stack = is_stack_op(&i) && m.base() == Register::RSP && m.index() == Register::None;
                        if !(explicit || stack) {
                            implicit.insert(format!("{:?}", i.mnemonic()));
                        }
                    }
                }
            }
        }
    }
    assert!(allowed > 10_000, "only {} forms decoded and allowed", allowed);
    // fnsave/fsave: 108 bytes, the largest access; the guard zones are 4 GiB.
    assert_eq!(max_size, 108);
    let want: BTreeSet<String> = [
        "Cmpsb", "Cmpsd", "Cmpsq", "Cmpsw", "Lodsb", "Lodsd", "Lodsq", "Lodsw", "Maskmovdqu", "Maskmovq", "Movsb", "Movsd", "Movsq",
        "Movsw", "Scasb", "Scasd", "Scasq", "Scasw", "Stosb", "Stosd", "Stosq", "Stosw", "Vmaskmovdqu",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(implicit, want, "allowed instructions with implicit memory accesses");
}

/// The runtime entries' bytes (layout::ENTRY_CODE) are entries.s assembled.
#[test]
fn runtime_entries_are_their_source() {
    let dir = std::env::temp_dir().join(format!("sfi-entries-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src/entries.s");
    let (obj, bin) = (dir.join("e.o"), dir.join("e.bin"));
    let ok = std::process::Command::new("as").args(["--64", "-o"]).arg(&obj).arg(src).status().map(|s| s.success()).unwrap_or(false)
        && std::process::Command::new("objcopy").args(["-O", "binary", "-j", ".text"]).arg(&obj).arg(&bin).status().unwrap().success();
    assert!(ok, "assembling {} failed", src);
    let bytes = std::fs::read(&bin).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let at = (CPUID_ENTRY - layout::ENTRY_PAGE) as usize;
    assert_eq!(&bytes[at..], &layout::ENTRY_CODE[..]);
}

/// A masked branch can reach every bundle start of the entry page: each is
/// int3 but the runtime entries.
#[test]
fn entry_page_bundle_starts_trap_but_the_runtime_entries() {
    let t = layout::runtime_pages(8192, 3, 0x1_0000_0000, 0x1234, 0x5678);
    for b in (0..4096).step_by(BUNDLE as usize) {
        let entry = RUNTIME_ENTRIES.contains(&(layout::ENTRY_PAGE + b as u64));
        assert_eq!(t[b] == 0xcc, !entry, "bundle at 0x{:x}", layout::ENTRY_PAGE + b as u64);
    }
}

/// Every instruction set the runtime's cpuid reports (entries.s: leaf 1
/// SSE SSE2 SSE3 SSSE3 SSE4.1 SSE4.2 POPCNT CX16 PCLMULQDQ AES MOVBE CMOV
/// CLFSH, leaf 7 BMI1 BMI2, 0x80000001 LZCNT) is one the verifier accepts.
#[test]
fn reported_features_are_allowed() {
    let insns: &[&[u8]] = &[
        &[0x0f, 0x58, 0xc0],                   // addps (SSE)
        &[0x66, 0x0f, 0x51, 0xc0],             // sqrtpd (SSE2)
        &[0x66, 0x0f, 0xd0, 0xc0],             // addsubpd (SSE3)
        &[0x66, 0x0f, 0x38, 0x00, 0xc0],       // pshufb (SSSE3)
        &[0x66, 0x0f, 0x38, 0x40, 0xc0],       // pmulld (SSE4.1)
        &[0xf2, 0x0f, 0x38, 0xf0, 0xc0],       // crc32b (SSE4.2)
        &[0xf3, 0x48, 0x0f, 0xb8, 0xc0],       // popcnt
        &[0x48, 0x0f, 0xc7, 0x0c, 0x24],       // cmpxchg16b (%rsp)
        &[0x66, 0x0f, 0x3a, 0x44, 0xc0, 0x00], // pclmulqdq
        &[0x66, 0x0f, 0x38, 0xdc, 0xc0],       // aesenc
        &[0x0f, 0x38, 0xf0, 0x04, 0x24],       // movbe (%rsp), %eax
        &[0x48, 0x0f, 0x45, 0xc0],             // cmovne
        &[0x0f, 0xae, 0x3c, 0x24],             // clflush (%rsp)
        &[0xc4, 0xe2, 0xf8, 0xf2, 0xc0],       // andn (BMI1)
        &[0xc4, 0xe2, 0xfb, 0xf5, 0xc0],       // pdep (BMI2)
        &[0xf3, 0x48, 0x0f, 0xbd, 0xc0],       // lzcnt
    ];
    for i in insns {
        assert_eq!(reason(&module(&with_ret(i))), "accepted", "{:02x?}", i);
    }
    assert_eq!(reason(&module(&with_ret(&[0x0f, 0xa2]))), "instruction set not allowed"); // cpuid
    assert_eq!(reason(&module(&with_ret(&[0x0f, 0x31]))), "instruction set not allowed"); // rdtsc
}
