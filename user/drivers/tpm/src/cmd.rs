//! TPM 2.0 commands and responses, marshalled by hand after the TPM 2.0
//! Library specification, Part 2 (structures: tags, algorithm and command
//! codes, handles, attributes) and Part 3 (each command's handle, parameter
//! and response layout).  Every value is big-endian.  Response codes are
//! named by the `tpm2-protocol` crate ([`rc_name`]).
//!
//! A builder writes into a caller's buffer and returns the command's
//! length; a parser takes a whole response and returns its fields, or
//! [`Error`]: the TPM's response code, or a response that does not parse.

/// Structure tags (Part 2, TPM_ST).
pub const ST_NO_SESSIONS: u16 = 0x8001;
pub const ST_SESSIONS: u16 = 0x8002;

/// Command codes (Part 2, TPM_CC).
pub mod cc {
    pub const NV_DEFINE_SPACE: u32 = 0x0000_012a;
    pub const CREATE_PRIMARY: u32 = 0x0000_0131;
    pub const NV_INCREMENT: u32 = 0x0000_0134;
    pub const STARTUP: u32 = 0x0000_0144;
    pub const NV_READ: u32 = 0x0000_014e;
    pub const CREATE: u32 = 0x0000_0153;
    pub const LOAD: u32 = 0x0000_0157;
    pub const UNSEAL: u32 = 0x0000_015e;
    pub const FLUSH_CONTEXT: u32 = 0x0000_0165;
    pub const START_AUTH_SESSION: u32 = 0x0000_0176;
    pub const GET_RANDOM: u32 = 0x0000_017b;
    pub const PCR_READ: u32 = 0x0000_017e;
    pub const POLICY_PCR: u32 = 0x0000_017f;
    pub const PCR_EXTEND: u32 = 0x0000_0182;
    pub const POLICY_GET_DIGEST: u32 = 0x0000_0189;
}

/// Algorithms (Part 2, TPM_ALG).
pub mod alg {
    pub const AES: u16 = 0x0006;
    pub const KEYEDHASH: u16 = 0x0008;
    pub const SHA256: u16 = 0x000b;
    pub const NULL: u16 = 0x0010;
    pub const ECC: u16 = 0x0023;
    pub const CFB: u16 = 0x0043;
}

/// Handles (Part 2, TPM_RH and TPM_RS).
pub mod rh {
    pub const OWNER: u32 = 0x4000_0001;
    pub const NULL: u32 = 0x4000_0007;
    /// The password authorization session.
    pub const PW: u32 = 0x4000_0009;
}

/// Response codes the driver tells apart (Part 2, TPM_RC).
pub mod rc {
    pub const SUCCESS: u32 = 0x000;
    /// TPM2_Startup when the TPM has been started.
    pub const INITIALIZE: u32 = 0x100;
    pub const NV_UNINITIALIZED: u32 = 0x14a;
    pub const NV_DEFINED: u32 = 0x14c;
    /// Format-one codes: the error in bits 0-5 with bit 7 set, the
    /// handle, session or parameter number above it.
    pub const FMT1: u32 = 0x080;
    pub const POLICY_FAIL: u32 = 0x09d;
    pub const INTEGRITY: u32 = 0x09f;
    pub const HANDLE: u32 = 0x08b;
    pub const SIZE: u32 = 0x095;

    /// The error of a format-one code (bits 0-5 and the format bit), or
    /// the code itself.
    pub const fn base(code: u32) -> u32 {
        if code & FMT1 != 0 { code & 0xbf } else { code }
    }
}

/// Object attributes (Part 2, TPMA_OBJECT).
pub mod obj {
    pub const FIXED_TPM: u32 = 1 << 1;
    pub const FIXED_PARENT: u32 = 1 << 4;
    pub const SENSITIVE_DATA_ORIGIN: u32 = 1 << 5;
    pub const USER_WITH_AUTH: u32 = 1 << 6;
    pub const NO_DA: u32 = 1 << 10;
    pub const RESTRICTED: u32 = 1 << 16;
    pub const DECRYPT: u32 = 1 << 17;
}

/// NV index attributes (Part 2, TPMA_NV).
pub mod nv {
    pub const AUTHWRITE: u32 = 1 << 2;
    /// TPM_NT_COUNTER in the index type's field (bits 4-7).
    pub const COUNTER: u32 = 1 << 4;
    pub const AUTHREAD: u32 = 1 << 18;
    pub const NO_DA: u32 = 1 << 25;
}

/// Session types (Part 2, TPM_SE).
pub const SE_POLICY: u8 = 0x01;
pub const SE_TRIAL: u8 = 0x03;

/// A SHA-256 digest.
pub type Digest = [u8; 32];

/// Why a command did not give its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The TPM answered this response code.
    Tpm(u32),
    /// The response is shorter than its fields, or its header is wrong.
    Malformed,
    /// The command does not fit the buffer (or an argument is too long).
    TooLong,
}

pub type Result<T> = core::result::Result<T, Error>;

/// A response code's name ("TPM_RC_POLICY_FAIL", with the handle,
/// session or parameter it is about), written into `out`.
pub fn rc_name(code: u32, out: &mut dyn core::fmt::Write) -> core::fmt::Result {
    match tpm2_protocol::data::TpmRc::try_from(code) {
        Ok(r) => write!(out, "{r}"),
        Err(_) => write!(out, "TPM response code {code:#x}"),
    }
}

/// Writes a command into a buffer.
pub struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
    ok: bool,
}

impl<'a> Writer<'a> {
    /// A command with `tag` and `code`; the size is filled in by `finish`.
    pub fn command(buf: &'a mut [u8], tag: u16, code: u32) -> Writer<'a> {
        let mut w = Writer { buf, len: 0, ok: true };
        w.u16(tag);
        w.u32(0);
        w.u32(code);
        w
    }

    pub fn bytes(&mut self, b: &[u8]) {
        if self.len + b.len() > self.buf.len() {
            self.ok = false;
            return;
        }
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }
    pub fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_be_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes());
    }
    /// A TPM2B: a 16-bit size, then the bytes.
    pub fn sized(&mut self, b: &[u8]) {
        if b.len() > u16::MAX as usize {
            self.ok = false;
            return;
        }
        self.u16(b.len() as u16);
        self.bytes(b);
    }
    /// Starts a TPM2B whose size is filled in by `end_sized`.
    pub fn begin_sized(&mut self) -> usize {
        self.u16(0);
        self.len
    }
    pub fn end_sized(&mut self, at: usize) {
        if self.ok {
            let n = (self.len - at) as u16;
            self.buf[at - 2..at].copy_from_slice(&n.to_be_bytes());
        }
    }
    /// The authorization area of one session: a password session with an
    /// empty password (`handle` PW), or a policy session.
    pub fn auth(&mut self, handle: u32) {
        self.u32(4 + 2 + 1 + 2);
        self.u32(handle);
        self.sized(&[]); // nonceCaller
        self.u8(0); // sessionAttributes: the session ends with the command
        self.sized(&[]); // hmac (the password: empty)
    }
    /// A TPML_PCR_SELECTION of the SHA-256 bank selecting `pcrs` (a bit
    /// per PCR 0-23).
    pub fn pcr_selection(&mut self, pcrs: u32) {
        self.u32(1);
        self.u16(alg::SHA256);
        self.u8(3);
        self.bytes(&pcrs.to_le_bytes()[..3]);
    }
    /// The command's length, with the size field written; Err if it did
    /// not fit.
    pub fn finish(self) -> Result<usize> {
        if !self.ok {
            return Err(Error::TooLong);
        }
        self.buf[2..6].copy_from_slice(&(self.len as u32).to_be_bytes());
        Ok(self.len)
    }
}

/// Reads a response's fields.
pub struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b }
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(Error::Malformed);
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.bytes(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.bytes(4)?.try_into().unwrap()))
    }
    /// A TPM2B's bytes.
    pub fn sized(&mut self) -> Result<&'a [u8]> {
        let n = self.u16()? as usize;
        self.bytes(n)
    }
    /// A TPM2B with its size field.
    pub fn sized_whole(&mut self) -> Result<&'a [u8]> {
        let all = self.b;
        let n = self.u16()? as usize;
        self.bytes(n)?;
        Ok(&all[..2 + n])
    }
    pub fn rest(&self) -> &'a [u8] {
        self.b
    }
}

/// Checks a response's header: its size matches, its code is success.
/// Returns a reader after the header (at the handles), and the tag.
pub fn response(b: &[u8]) -> Result<(Reader<'_>, u16)> {
    let mut r = Reader::new(b);
    let tag = r.u16()?;
    let size = r.u32()? as usize;
    let code = r.u32()?;
    if size != b.len() || size < 10 {
        return Err(Error::Malformed);
    }
    if code != rc::SUCCESS {
        return Err(Error::Tpm(code));
    }
    if tag != ST_NO_SESSIONS && tag != ST_SESSIONS {
        return Err(Error::Malformed);
    }
    Ok((r, tag))
}

/// The response's parameters, after `handles` handles (and, with
/// sessions, the parameter size).
pub fn params(b: &[u8], handles: usize) -> Result<(Reader<'_>, [u32; 1])> {
    let (mut r, tag) = response(b)?;
    let mut h = [0u32; 1];
    for i in 0..handles {
        let v = r.u32()?;
        if i < 1 {
            h[i] = v;
        }
    }
    if tag == ST_SESSIONS {
        let n = r.u32()? as usize;
        let p = r.bytes(n)?;
        return Ok((Reader::new(p), h));
    }
    Ok((r, h))
}

/// TPM2_Startup(CLEAR).
pub fn startup(buf: &mut [u8]) -> Result<usize> {
    let mut w = Writer::command(buf, ST_NO_SESSIONS, cc::STARTUP);
    w.u16(0); // TPM_SU_CLEAR
    w.finish()
}

/// TPM2_GetRandom of `n` bytes.
pub fn get_random(buf: &mut [u8], n: u16) -> Result<usize> {
    let mut w = Writer::command(buf, ST_NO_SESSIONS, cc::GET_RANDOM);
    w.u16(n);
    w.finish()
}

/// GetRandom's bytes (the TPM may give fewer than asked).
pub fn parse_random(b: &[u8]) -> Result<&[u8]> {
    params(b, 0)?.0.sized()
}

/// TPM2_PCR_Read of one SHA-256 PCR.
pub fn pcr_read(buf: &mut [u8], pcr: u32) -> Result<usize> {
    if pcr >= 24 {
        return Err(Error::TooLong);
    }
    let mut w = Writer::command(buf, ST_NO_SESSIONS, cc::PCR_READ);
    w.pcr_selection(1 << pcr);
    w.finish()
}

/// PCR_Read's value; Malformed unless exactly one 32-byte digest came.
pub fn parse_pcr_read(b: &[u8]) -> Result<Digest> {
    let mut r = params(b, 0)?.0;
    r.u32()?; // pcrUpdateCounter
    let banks = r.u32()?;
    for _ in 0..banks {
        r.u16()?;
        let n = r.u8()? as usize;
        r.bytes(n)?;
    }
    if r.u32()? != 1 {
        return Err(Error::Malformed);
    }
    r.sized()?.try_into().map_err(|_| Error::Malformed)
}

/// TPM2_PCR_Extend of a SHA-256 PCR with `digest`.
pub fn pcr_extend(buf: &mut [u8], pcr: u32, digest: &Digest) -> Result<usize> {
    let mut w = Writer::command(buf, ST_SESSIONS, cc::PCR_EXTEND);
    w.u32(pcr);
    w.auth(rh::PW);
    w.u32(1);
    w.u16(alg::SHA256);
    w.bytes(digest);
    w.finish()
}

/// A command that returns nothing but its code.
pub fn parse_empty(b: &[u8]) -> Result<()> {
    response(b).map(drop)
}

/// TPM2_CreatePrimary of the owner hierarchy's storage key: an ECC P-256
/// restricted decryption key with AES-128-CFB for its children.  The key
/// comes from the owner seed and this template, so the same TPM gives the
/// same key every time, and another TPM another.
pub fn create_primary(buf: &mut [u8]) -> Result<usize> {
    let mut w = Writer::command(buf, ST_SESSIONS, cc::CREATE_PRIMARY);
    w.u32(rh::OWNER);
    w.auth(rh::PW);
    // inSensitive: an empty userAuth and no data.
    let s = w.begin_sized();
    w.sized(&[]);
    w.sized(&[]);
    w.end_sized(s);
    // inPublic.
    let p = w.begin_sized();
    w.u16(alg::ECC);
    w.u16(alg::SHA256);
    w.u32(obj::FIXED_TPM | obj::FIXED_PARENT | obj::SENSITIVE_DATA_ORIGIN | obj::USER_WITH_AUTH
        | obj::NO_DA | obj::RESTRICTED | obj::DECRYPT);
    w.sized(&[]); // authPolicy
    w.u16(alg::AES);
    w.u16(128);
    w.u16(alg::CFB);
    w.u16(alg::NULL); // scheme
    w.u16(0x0003); // TPM_ECC_NIST_P256
    w.u16(alg::NULL); // kdf
    w.sized(&[]); // unique.x
    w.sized(&[]); // unique.y
    w.end_sized(p);
    w.sized(&[]); // outsideInfo
    w.u32(0); // creationPCR: none
    w.finish()
}

/// The handle a command created (CreatePrimary, Load, StartAuthSession).
pub fn parse_handle(b: &[u8]) -> Result<u32> {
    Ok(params(b, 1)?.1[0])
}

/// TPM2_Create of a sealed data object under `parent`: a keyed-hash
/// object holding `secret`, usable only through a policy session whose
/// digest is `policy` (no userWithAuth).
pub fn create_sealed(buf: &mut [u8], parent: u32, policy: &Digest, secret: &[u8]) -> Result<usize> {
    if secret.len() > MAX_SECRET {
        return Err(Error::TooLong);
    }
    let mut w = Writer::command(buf, ST_SESSIONS, cc::CREATE);
    w.u32(parent);
    w.auth(rh::PW);
    let s = w.begin_sized();
    w.sized(&[]); // userAuth
    w.sized(secret);
    w.end_sized(s);
    let p = w.begin_sized();
    w.u16(alg::KEYEDHASH);
    w.u16(alg::SHA256);
    w.u32(obj::FIXED_TPM | obj::FIXED_PARENT | obj::NO_DA);
    w.sized(policy);
    w.u16(alg::NULL); // scheme
    w.sized(&[]); // unique
    w.end_sized(p);
    w.sized(&[]); // outsideInfo
    w.u32(0); // creationPCR
    w.finish()
}

/// The most a sealed object holds (Part 2, MAX_SYM_DATA).
pub const MAX_SECRET: usize = 128;

/// Create's outPrivate and outPublic, each with its size field: the
/// sealed blob is the two, one after the other.
pub fn parse_create(b: &[u8]) -> Result<(&[u8], &[u8])> {
    let mut r = params(b, 0)?.0;
    let private = r.sized_whole()?;
    let public = r.sized_whole()?;
    Ok((private, public))
}

/// Splits a sealed blob into its private and public parts; Malformed
/// unless it is exactly the two.
pub fn split_blob(blob: &[u8]) -> Result<(&[u8], &[u8])> {
    let mut r = Reader::new(blob);
    let private = r.sized_whole()?;
    let public = r.sized_whole()?;
    if !r.rest().is_empty() {
        return Err(Error::Malformed);
    }
    Ok((private, public))
}

/// TPM2_Load of a sealed blob under `parent`.
pub fn load(buf: &mut [u8], parent: u32, blob: &[u8]) -> Result<usize> {
    let (private, public) = split_blob(blob)?;
    let mut w = Writer::command(buf, ST_SESSIONS, cc::LOAD);
    w.u32(parent);
    w.auth(rh::PW);
    w.bytes(private);
    w.bytes(public);
    w.finish()
}

/// TPM2_StartAuthSession of an unbound, unsalted policy (or trial)
/// session with SHA-256; `nonce` is the caller's (16 bytes at least).
pub fn start_policy_session(buf: &mut [u8], trial: bool, nonce: &[u8; 16]) -> Result<usize> {
    let mut w = Writer::command(buf, ST_NO_SESSIONS, cc::START_AUTH_SESSION);
    w.u32(rh::NULL); // tpmKey
    w.u32(rh::NULL); // bind
    w.sized(nonce);
    w.sized(&[]); // encryptedSalt
    w.u8(if trial { SE_TRIAL } else { SE_POLICY });
    w.u16(alg::NULL); // symmetric
    w.u16(alg::SHA256);
    w.finish()
}

/// TPM2_PolicyPCR over the SHA-256 PCRs `pcrs`, at their current values.
pub fn policy_pcr(buf: &mut [u8], session: u32, pcrs: u32) -> Result<usize> {
    let mut w = Writer::command(buf, ST_NO_SESSIONS, cc::POLICY_PCR);
    w.u32(session);
    w.sized(&[]); // pcrDigest: the TPM's current values
    w.pcr_selection(pcrs);
    w.finish()
}

/// TPM2_PolicyGetDigest.
pub fn policy_get_digest(buf: &mut [u8], session: u32) -> Result<usize> {
    let mut w = Writer::command(buf, ST_NO_SESSIONS, cc::POLICY_GET_DIGEST);
    w.u32(session);
    w.finish()
}

pub fn parse_digest(b: &[u8]) -> Result<Digest> {
    params(b, 0)?.0.sized()?.try_into().map_err(|_| Error::Malformed)
}

/// TPM2_Unseal of `item`, authorized by the policy session `session`.
pub fn unseal(buf: &mut [u8], item: u32, session: u32) -> Result<usize> {
    let mut w = Writer::command(buf, ST_SESSIONS, cc::UNSEAL);
    w.u32(item);
    w.auth(session);
    w.finish()
}

pub fn parse_unseal(b: &[u8]) -> Result<&[u8]> {
    params(b, 0)?.0.sized()
}

/// TPM2_FlushContext of a transient object or a session.
pub fn flush(buf: &mut [u8], handle: u32) -> Result<usize> {
    let mut w = Writer::command(buf, ST_NO_SESSIONS, cc::FLUSH_CONTEXT);
    w.u32(handle);
    w.finish()
}

/// TPM2_NV_DefineSpace of an 8-byte counter at `index`, read and
/// incremented with its own (empty) authorization value.
pub fn nv_define_counter(buf: &mut [u8], index: u32) -> Result<usize> {
    let mut w = Writer::command(buf, ST_SESSIONS, cc::NV_DEFINE_SPACE);
    w.u32(rh::OWNER);
    w.auth(rh::PW);
    w.sized(&[]); // auth
    let p = w.begin_sized();
    w.u32(index);
    w.u16(alg::SHA256);
    w.u32(nv::COUNTER | nv::AUTHWRITE | nv::AUTHREAD | nv::NO_DA);
    w.sized(&[]); // authPolicy
    w.u16(8);
    w.end_sized(p);
    w.finish()
}

/// TPM2_NV_Increment of the counter at `index`.
pub fn nv_increment(buf: &mut [u8], index: u32) -> Result<usize> {
    let mut w = Writer::command(buf, ST_SESSIONS, cc::NV_INCREMENT);
    w.u32(index);
    w.u32(index);
    w.auth(rh::PW);
    w.finish()
}

/// TPM2_NV_Read of the 8-byte counter at `index`.
pub fn nv_read(buf: &mut [u8], index: u32) -> Result<usize> {
    let mut w = Writer::command(buf, ST_SESSIONS, cc::NV_READ);
    w.u32(index);
    w.u32(index);
    w.auth(rh::PW);
    w.u16(8);
    w.u16(0);
    w.finish()
}

pub fn parse_nv_counter(b: &[u8]) -> Result<u64> {
    let data = params(b, 0)?.0.sized()?;
    Ok(u64::from_be_bytes(data.try_into().map_err(|_| Error::Malformed)?))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    fn hex(s: &str) -> std::vec::Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn build(f: impl FnOnce(&mut [u8]) -> Result<usize>) -> std::vec::Vec<u8> {
        let mut b = [0u8; 1024];
        let n = f(&mut b).unwrap();
        b[..n].to_vec()
    }

    #[test]
    fn startup_and_get_random_encode() {
        assert_eq!(build(startup), hex("8001 0000000c 00000144 0000"));
        assert_eq!(build(|b| get_random(b, 32)), hex("8001 0000000c 0000017b 0020"));
    }

    #[test]
    fn pcr_read_selects_one_sha256_pcr() {
        assert_eq!(build(|b| pcr_read(b, 9)), hex("8001 00000014 0000017e 00000001 000b 03 000200"));
        assert_eq!(build(|b| pcr_read(b, 0)), hex("8001 00000014 0000017e 00000001 000b 03 010000"));
        let mut b = [0u8; 64];
        assert_eq!(pcr_read(&mut b, 24), Err(Error::TooLong));
    }

    #[test]
    fn pcr_extend_has_a_password_session() {
        let d = [0xab; 32];
        let c = build(|b| pcr_extend(b, 8, &d));
        let mut want = hex("8002 00000041 00000182 00000008 00000009 40000009 0000 00 0000 00000001 000b");
        want.extend_from_slice(&d);
        assert_eq!(c, want);
        assert_eq!(c.len(), 0x41);
    }

    #[test]
    fn create_primary_template() {
        let c = build(create_primary);
        // Header, handle, the session, inSensitive (4 bytes of two empty
        // TPM2Bs), then inPublic's size and its type, name algorithm and
        // attributes (0x30472).
        assert_eq!(&c[..10], &hex("8002 00000043 00000131")[..]);
        assert_eq!(&c[10..27], &hex("40000001 00000009 40000009 0000 00 0000")[..]);
        assert_eq!(&c[27..33], &hex("0004 0000 0000")[..]);
        assert_eq!(&c[33..43], &hex("001a 0023 000b 00030472")[..]);
        assert_eq!(u16::from_be_bytes([c[33], c[34]]) as usize, c.len() - 35 - 6);
    }

    #[test]
    fn create_sealed_carries_secret_and_policy() {
        let pol = [7u8; 32];
        let c = build(|b| create_sealed(b, 0x8000_0000, &pol, b"key"));
        assert_eq!(&c[10..14], &hex("80000000")[..]);
        // inSensitive: size 7, empty userAuth, data "key".
        assert_eq!(&c[27..36], &hex("0007 0000 0003 6b6579")[..]);
        // inPublic: keyedhash, sha256, fixedTPM|fixedParent|noDA, the policy.
        assert_eq!(&c[36..48], &hex("002e 0008 000b 00000412 0020")[..]);
        assert_eq!(&c[48..80], &pol[..]);
        let mut b = [0u8; 1024];
        assert_eq!(create_sealed(&mut b, 1, &pol, &[0; MAX_SECRET + 1]), Err(Error::TooLong));
        assert!(create_sealed(&mut b, 1, &pol, &[0; MAX_SECRET]).is_ok());
    }

    #[test]
    fn a_small_buffer_is_too_long_not_a_panic() {
        let mut b = [0u8; 20];
        assert_eq!(create_primary(&mut b), Err(Error::TooLong));
        assert_eq!(pcr_extend(&mut b, 1, &[0; 32]), Err(Error::TooLong));
    }

    #[test]
    fn session_policy_and_nv_encode() {
        let c = build(|b| start_policy_session(b, true, &[1; 16]));
        assert_eq!(&c[..18], &hex("8001 0000002b 00000176 40000007 40000007")[..]);
        assert_eq!(&c[18..20], &hex("0010")[..]);
        assert_eq!(&c[36..], &hex("0000 03 0010 000b")[..]);
        assert_eq!(build(|b| policy_pcr(b, 0x0300_0000, 0x300)),
                   hex("8001 0000001a 0000017f 03000000 0000 00000001 000b 03 000300"));
        let d = build(|b| nv_define_counter(b, 0x0150_0001));
        assert_eq!(&d[27..], &hex("0000 000e 01500001 000b 02040014 0000 0008")[..]);
        assert_eq!(build(|b| nv_read(b, 0x0150_0001)),
                   hex("8002 00000023 0000014e 01500001 01500001 00000009 40000009 0000 00 0000 0008 0000"));
        assert_eq!(build(|b| flush(b, 0x8000_0001)), hex("8001 0000000e 00000165 80000001"));
    }

    #[test]
    fn responses_decode() {
        let r = hex("8001 00000010 00000000 0004 01020304");
        assert_eq!(parse_random(&r), Ok(&[1, 2, 3, 4][..]));
        let mut pcr = hex("8001 0000003e 00000000 00000011 00000001 000b 03 000100 00000001 0020");
        pcr.extend_from_slice(&[0x5a; 32]);
        assert_eq!(parse_pcr_read(&pcr), Ok([0x5a; 32]));
        // With sessions: handle, parameter size, parameters, the session's
        // response area.
        let h = hex("8002 00000017 00000000 80000000 00000000 0000 01 0000");
        assert_eq!(parse_handle(&h), Ok(0x8000_0000));
        let nv = hex("8002 0000001d 00000000 0000000a 0008 0000000000000007 0000 01 0000");
        assert_eq!(parse_nv_counter(&nv), Ok(7));
        let blob = hex("0003 aabbcc 0002 ddee");
        assert_eq!(split_blob(&blob), Ok((&blob[..5], &blob[5..])));
        let mut cr = hex("8002 0000001c 00000000 00000009");
        cr.extend_from_slice(&blob);
        cr.extend_from_slice(&hex("0000 01 0000"));
        assert_eq!(parse_create(&cr), Ok((&blob[..5], &blob[5..])));
    }

    #[test]
    fn error_codes_and_bad_responses() {
        // TPM_RC_POLICY_FAIL (format one), about the first session.
        let r = hex("8001 0000000a 0000099d");
        assert_eq!(parse_empty(&r), Err(Error::Tpm(0x99d)));
        assert_eq!(rc::base(0x99d), rc::POLICY_FAIL);
        assert_eq!(rc::base(0x1df), rc::INTEGRITY);
        assert_eq!(rc::base(rc::INITIALIZE), rc::INITIALIZE);
        // A size that is not the response's, a short one, a bad tag.
        assert_eq!(parse_empty(&hex("8001 0000000b 00000000")), Err(Error::Malformed));
        assert_eq!(parse_empty(&hex("8001 0000")), Err(Error::Malformed));
        assert_eq!(parse_empty(&hex("1234 0000000a 00000000")), Err(Error::Malformed));
        assert_eq!(parse_random(&hex("8001 0000000d 00000000 0004 01")), Err(Error::Malformed));
        assert_eq!(parse_pcr_read(&hex("8001 0000000a 00000000")), Err(Error::Malformed));
        assert_eq!(split_blob(&hex("0003 aabbcc 0002 ddee ff")), Err(Error::Malformed));
        assert_eq!(split_blob(&hex("0003 aabb")), Err(Error::Malformed));
    }

    #[test]
    fn codes_have_names() {
        let name = |c| {
            let mut s = String::new();
            rc_name(c, &mut s).unwrap();
            s
        };
        assert!(name(0x99d).contains("POLICY_FAIL"), "{}", name(0x99d));
        assert!(name(0x100).contains("INITIALIZE"), "{}", name(0x100));
        assert!(name(0x14c).contains("NV_DEFINED"), "{}", name(0x14c));
        assert!(name(0xffff_ffff).contains("0xffffffff"));
    }
}
