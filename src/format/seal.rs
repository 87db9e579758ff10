//! Checksums on the values treelog stores in redb (format-spec/index.md, "Checksums").
//!
//! redb keeps a checksum per B-tree page but verifies it only in a full integrity check, so a
//! quick open would read a flipped bit as data. Every value treelog reads an answer from
//! therefore ends in a 4-byte **seal**: the crc32 (IEEE, little-endian) of a domain naming the
//! table, the value's key and the value's bytes before the seal. A value damaged in place fails
//! it; so does a sound value found under another key or in another table (a damaged branch page
//! of redb sends a search to the wrong leaf). Pure code, no I/O.

use super::decode_error::DecodeError;

/// Length of the seal at the end of a sealed value.
pub const SEAL_LEN: usize = 4;

/// The seal a value with `body` stored under `key` in the table of `domain` carries.
pub fn seal_of(domain: &[u8], key: &[u8], body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(domain);
    hasher.update(&(key.len() as u64).to_le_bytes());
    hasher.update(key);
    hasher.update(body);
    hasher.finalize()
}

/// Appends the seal of `body` (stored under `key` in `domain`) to it.
pub fn seal(domain: &[u8], key: &[u8], mut body: Vec<u8>) -> Vec<u8> {
    let seal = seal_of(domain, key, &body);
    body.extend_from_slice(&seal.to_le_bytes());
    body
}

/// The body of a sealed value, or an error naming `what` when the seal does not match.
pub fn unseal<'a>(
    domain: &[u8],
    key: &[u8],
    sealed: &'a [u8],
    what: impl FnOnce() -> String,
) -> Result<&'a [u8], DecodeError> {
    let Some(body_len) = sealed.len().checked_sub(SEAL_LEN) else {
        return Err(DecodeError(format!(
            "{}: {} bytes, too short for its checksum",
            what(),
            sealed.len()
        )));
    };
    let (body, trailer) = sealed.split_at(body_len);
    if seal_of(domain, key, body).to_le_bytes() != trailer {
        return Err(DecodeError(format!("{}: checksum mismatch", what())));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sealed value unseals to its body under its own domain and key only, and any flipped
    /// bit of it fails the seal.
    #[test]
    fn seals_bind_domain_key_and_bytes() {
        let sealed = seal(b"labels", b"target", b"value bytes".to_vec());
        assert_eq!(
            unseal(b"labels", b"target", &sealed, String::new),
            Ok(&b"value bytes"[..])
        );
        assert!(unseal(b"labels", b"targeT", &sealed, String::new).is_err());
        assert!(unseal(b"records", b"target", &sealed, String::new).is_err());
        // The key's length is in the sum: moving a byte between key and body changes it.
        assert!(unseal(b"labels", b"targetv", &sealed[1..], String::new).is_err());
        for bit in 0..sealed.len() * 8 {
            let mut damaged = sealed.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(unseal(b"labels", b"target", &damaged, || "v".into()).is_err());
        }
        assert!(unseal(b"labels", b"target", &sealed[..3], String::new).is_err());
    }
}
