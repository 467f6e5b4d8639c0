# Shared by the host runtime's stubs and user/lib/sfi-rt's (Keep): included into
# their global_asm! blocks.
# Empties the x87 stack, on which a domain may have left values (it
# cannot change the control words: fldcw and ldmxcsr are refused).  Eight
# ffree take about 3 cycles; emms took the null call from 25 to 30-52
# cycles, and a test with fxam costs 230 on an empty st(0).
    .macro X87_EMPTY
    ffree %st(0)
    ffree %st(1)
    ffree %st(2)
    ffree %st(3)
    ffree %st(4)
    ffree %st(5)
    ffree %st(6)
    ffree %st(7)
    .endm
