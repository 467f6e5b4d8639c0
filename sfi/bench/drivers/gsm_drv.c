/* GSM 06.10 full-rate speech codec (libgsm): encode and decode a
   synthetic 8 kHz signal (a mix of tones, glides and noise) frame by frame. */
#include <stdio.h>
#include <stdlib.h>
#include <gsm.h>

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: gsm SECONDS\n"); return 2; }
    long frames = atol(argv[1]) * 8000 / 160;
    gsm enc = gsm_create(), dec = gsm_create();
    unsigned seed = 12345, h = 2166136261u;
    long energy = 0;
    int phase1 = 0, phase2 = 0;
    for (long f = 0; f < frames; f++) {
        gsm_signal pcm[160], out[160];
        gsm_frame fr;
        for (int i = 0; i < 160; i++) {
            long t = f * 160 + i;
            phase1 = (phase1 + 300 + (int)(t % 4000) / 8) & 0xffff;
            phase2 = (phase2 + 1100) & 0xffff;
            int tri1 = (phase1 < 0x8000 ? phase1 : 0xffff - phase1) - 0x4000;
            int tri2 = (phase2 < 0x8000 ? phase2 : 0xffff - phase2) - 0x4000;
            seed = seed * 1103515245u + 12345u;
            int noise = (int)((seed >> 16) & 0x7ff) - 0x400;
            int env = (int)((t / 400) % 20) + 4;
            pcm[i] = (gsm_signal)((tri1 * env / 24 + tri2 / 3 + noise) & ~7);
        }
        gsm_encode(enc, pcm, fr);
        if (gsm_decode(dec, fr, out)) { printf("decode failed\n"); return 1; }
        for (int i = 0; i < 33; i++) h = (h ^ fr[i]) * 16777619u;
        for (int i = 0; i < 160; i++) { h = (h ^ (unsigned short)out[i]) * 16777619u; energy += out[i] < 0 ? -out[i] : out[i]; }
    }
    gsm_destroy(enc);
    gsm_destroy(dec);
    printf("gsm: %ld frames, mean |out| %ld, hash %08x\n", frames, energy / (frames * 160), h);
    return 0;
}
