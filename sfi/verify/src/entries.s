# The runtime's answers to cpuid, rdtsc, rdtscp and xgetbv, in the entry page
# (docs/sfi.md, "Runtime entries").  Assembled at origin 0 = domain offset
# ENTRY_PAGE (0xf000); layout.rs holds the bytes from 0x20 up to the end
# (ENTRY_CODE) and a unit test checks that they are this file's.
#
# A module reaches an entry only by `lea -128(%rsp), %rsp; call ENTRY`
# (any direct call or jump to it is allowed: rule 7).  At an entry %rsp = E
# and (E) holds the return address, untrusted.  Every routine leaves every
# register but its outputs and the flags as it found them, returns to
# B + ((E) mod 2^32 & ~31) with %rsp = E + 136 (the caller's %rsp before the
# lea), and touches only E-16 .. E+8 and reads E+128: the caller's red zone
# (E+8 .. E+136) is not written.  Every bundle start that is not an entry is
# int3, so a masked branch into the page lands on an entry or traps.

    .text
    .org 8, 0xcc
base_slot:                      # B, written by the runtime
    .quad 0

# cpuid: %eax = leaf, %ecx = subleaf -> %eax, %ebx, %ecx, %edx (upper halves
# zero), the fixed feature set.
    .org 0x20, 0xcc
cpuid_entry:
    pushfq
    cmp $7, %eax
    je leaf7
    ja high
    cmp $1, %eax
    je leaf1
    jb leaf0
    jmp zero                    # leaves 2..6

# rdtsc: %edx:%eax = the time-stamp counter with its low 8 bits cleared.
    .org 0x40, 0xcc
rdtsc_entry:
    pushfq
    rdtsc
    mov $0, %al
    jmp done

# rdtscp: as rdtsc, and %ecx = 0 (TSC_AUX: one processor).
    .org 0x60, 0xcc
rdtscp_entry:
    pushfq
    rdtsc
    mov $0, %al
    xor %ecx, %ecx
    jmp done

    .org 0x80, 0xcc
    int3
high:
    cmp $0x80000001, %eax
    je ext1
    cmp $0x80000000, %eax
    je ext0
    jmp zero

    .org 0xa0, 0xcc
    int3
leaf0:                          # highest leaf 7, vendor "Keep SFI CPU"
    mov $7, %eax
    mov $0x7065654b, %ebx
    mov $0x49465320, %edx
    mov $0x55504320, %ecx
    jmp done

    .org 0xc0, 0xcc
    int3
leaf1:                          # family 6 model 0; 64-byte clflush line, one processor
    mov $0x600, %eax
    mov $0x10800, %ebx
    mov $0x02d82203, %ecx       # SSE3 PCLMULQDQ SSSE3 CX16 SSE4.1 SSE4.2 MOVBE POPCNT AES
    mov $0x06088111, %edx       # FPU TSC CX8 CMOV CLFSH SSE SSE2
    jmp done

    .org 0xe0, 0xcc
    int3
leaf7:                          # subleaf 0: BMI1 BMI2; other subleaves zero
    test %ecx, %ecx
    jnz zero
    xor %eax, %eax
    mov $0x108, %ebx
    xor %ecx, %ecx
    xor %edx, %edx
    jmp done

    .org 0x100, 0xcc
    int3
ext0:                           # highest extended leaf 0x80000001
    mov $0x80000001, %eax
    xor %ebx, %ebx
    xor %ecx, %ecx
    xor %edx, %edx
    jmp done

    .org 0x120, 0xcc
    int3
ext1:
    xor %eax, %eax
    xor %ebx, %ebx
    mov $0x20, %ecx             # LZCNT
    mov $0x28000000, %edx       # RDTSCP, long mode
    jmp done

    .org 0x140, 0xcc
    int3
zero:                           # any other leaf
    xor %eax, %eax
    xor %ebx, %ebx
    xor %ecx, %ecx
    xor %edx, %edx
    jmp done

# The common return: (E-8) = flags.  The load of E+128 faults unless
# E + 136 is at most the top of the stack, so %rsp after the return is in
# the stack area whatever %rsp the entry was reached with.
    .org 0x160, 0xcc
    int3
done:
    push %rdx                   # E-16
    mov 144(%rsp), %rdx         # E+128
    mov 16(%rsp), %rdx          # the return address
    and $-32, %edx
    jmp done2

    .org 0x180, 0xcc
    int3
done2:
    add base_slot(%rip), %rdx
    mov %rdx, 16(%rsp)          # masked, in the stack slot it came from
    pop %rdx
    popfq
    ret $128

# xgetbv: %ecx = XCR index -> %edx:%eax (upper halves zero).  XCR0 is 3
# (x87 and SSE state; no AVX state, as cpuid reports no OSXSAVE), any other
# index 0.
    .org 0x1a0, 0xcc
xgetbv_entry:
    pushfq
    xor %edx, %edx
    xor %eax, %eax
    test %ecx, %ecx
    jnz done
    mov $3, %al
    jmp done

    .org 0x1c0, 0xcc
