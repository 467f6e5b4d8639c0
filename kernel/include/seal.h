/* Sealing: authenticated encryption of kernel state handed to user level
 * (seed 003, "sensitive" data) with ChaCha20-Poly1305 (RFC 8439) under a
 * key drawn at boot or set by KERNEL.SET_SEAL_KEY: the body encrypted,
 * the 128-bit tag over the clear header (the AEAD's associated data) and
 * the ciphertext.  A user-level holder can neither read nor forge a sealed
 * blob; what the blob is bound to (which object, which export) is up to
 * the caller's header. */
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

/* RFC 8439's AEAD (2.8) on len bytes of data in place, any lengths
 * (exported for the host tests, which check the RFC's vectors): seal
 * encrypts and writes the tag; open checks the tag (in constant time) and
 * decrypts: false, with nothing changed, if it does not match. */
void aead_seal(const u32 key[8], const u8 nonce[12], const u8 *aad, size_t aad_len, u8 *data, size_t len,
               u8 tag[16]);
bool aead_open(const u32 key[8], const u8 nonce[12], const u8 *aad, size_t aad_len, u8 *data, size_t len,
               const u8 tag[16]);

/* Encrypt body in place under nonce (the AEAD's 96-bit nonce: 32 bits of
 * a keyed hash of the head, and this one), then tag the head bytes before it and the
 * ciphertext: head and body are contiguous (head first), head_len a
 * multiple of 8 (tag's alignment). */
void seal(void *head, size_t head_len, size_t body_len, u64 nonce, u64 tag[2]);
/* A synthetic nonce (as SIV's) for sealing a record: a keyed hash of salt
 * and the len bytes at data, the record's clear header and its body
 * together.  The same record sealed twice gives the same ciphertext, so an
 * unchanged page of a checkpoint is written once; another header or
 * another body gives another nonce (up to a collision of 63 bits), so no
 * one-time Poly1305 key ever tags two messages.  Bit 63 is set; callers
 * that need a second domain clear it. */
u64 seal_nonce(u64 salt, const void *data, size_t len);
/* Check the tag and, if it holds, decrypt the body in place: true.  False,
 * with nothing changed, if the tag does not match. */
bool unseal(void *head, size_t head_len, size_t body_len, u64 nonce, const u64 tag[2]);

#endif
