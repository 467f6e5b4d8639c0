/* Sealing: authenticated encryption of kernel state handed to user level
 * (seed 003, "sensitive" data).  SipHash-2-4 (Aumasson and Bernstein) under
 * keys drawn at boot serves as the pseudo-random function: a keystream in
 * counter mode encrypts, and two SipHashes under independent keys make a
 * 128-bit tag over the clear header and the ciphertext.  A user-level
 * holder can neither read nor forge a sealed blob; what the blob is bound
 * to (which object, which export) is up to the caller's header. */
#ifndef KEEP_SEAL_H
#define KEEP_SEAL_H

#include "types.h"

/* Draw the keys (RDRAND when the CPU has it, mixed with the TSC). */
void seal_init(void);

/* Replace the keys by ones derived from a 32-byte key (KERNEL.SET_SEAL_KEY):
 * what is sealed under one key opens under the same key at a later boot. */
void seal_set_key(const u64 key[4]);
/* Raised by every seal_set_key: what was sealed under an older count opens
 * under other keys. */
extern u64 seal_generation;

/* SipHash-2-4 of len bytes under key k (exported for the host tests). */
u64 siphash24(const u64 k[2], const void *data, size_t len);

/* Encrypt body (len a multiple of 8) in place under nonce, then tag the
 * head bytes before it and the ciphertext: head and body are contiguous
 * (head first), head_len a multiple of 8. */
void seal(void *head, size_t head_len, size_t body_len, u64 nonce, u64 tag[2]);
/* A nonce for sealing body that depends on its content and salt alone
 * (a synthetic nonce, as SIV's): the same content sealed twice gives the
 * same ciphertext, so an unchanged page of a checkpoint is written once.
 * Bit 63 is set; the nonces of exports never set it. */
u64 seal_nonce(u64 salt, const void *body, size_t len);
/* Check the tag and, if it holds, decrypt the body in place: true.  False,
 * with nothing changed, if the tag does not match. */
bool unseal(void *head, size_t head_len, size_t body_len, u64 nonce, const u64 tag[2]);

#endif
