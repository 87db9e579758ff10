//! Entry and session identifiers as the reference tools make them: 8 lowercase hex characters
//! for entries, a uuidv7 for sessions. The randomness comes from the standard library's
//! per-process hash keys, so no dependency and no I/O is needed.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many random 8-hex candidates are tried before falling back to a full uuid, as pi does.
pub const ENTRY_ID_TRIES_MAX: usize = 100;

/// A 64-bit random value. Each call hashes a process-wide counter with a key the standard
/// library seeds from the operating system's random source.
pub fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static KEYS: RandomState = RandomState::new();
    }
    KEYS.with(|keys| {
        let mut hasher = keys.build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.finish()
    })
}

/// A new entry id: 8 lowercase hex characters that `taken` rejects no more than
/// [`ENTRY_ID_TRIES_MAX`] times, else a full 36-character uuid (the reference fallback).
pub fn new_entry_id(mut taken: impl FnMut(&str) -> bool) -> String {
    for _ in 0..ENTRY_ID_TRIES_MAX {
        let candidate = super::id_index::hex8_id(random_u64() as u32);
        if !taken(&candidate) {
            return candidate;
        }
    }
    uuid_v4()
}

/// A random uuid (version 4) in the 8-4-4-4-12 form.
pub fn uuid_v4() -> String {
    let high = (random_u64() & !0xf000) | 0x4000;
    let low = (random_u64() & !(0b11 << 62)) | (0b10 << 62);
    format_uuid(high, low)
}

/// A uuidv7: 48 bits of epoch milliseconds, then random bits, as pi's session ids.
pub fn uuid_v7(epoch_ms: i64) -> String {
    let high = ((epoch_ms as u64 & 0xffff_ffff_ffff) << 16) | 0x7000 | (random_u64() & 0x0fff);
    let low = (random_u64() & !(0b11 << 62)) | (0b10 << 62);
    format_uuid(high, low)
}

fn format_uuid(high: u64, low: u64) -> String {
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

/// A deterministic 8-hex id for entry number `seq` of a v1 file (which stores no ids), so that
/// the same file always migrates to the same ids. `taken` resolves collisions deterministically.
pub fn migrated_entry_id(
    session_id: &str,
    seq: u64,
    mut taken: impl FnMut(&str) -> bool,
) -> String {
    for attempt in 0u32.. {
        let mut hasher = blake3::Hasher::new();
        hasher.update(session_id.as_bytes());
        hasher.update(&seq.to_le_bytes());
        hasher.update(&attempt.to_le_bytes());
        let digest = hasher.finalize();
        let bytes = digest.as_bytes();
        let candidate =
            super::id_index::hex8_id(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
        if !taken(&candidate) {
            return candidate;
        }
    }
    unreachable!("u32 attempts cover more candidates than a session can hold ids")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entry ids are 8 lowercase hex characters and a collision check is honoured.
    #[test]
    fn entry_ids_are_hex_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let id = new_entry_id(|c| seen.contains(c));
            assert_eq!(id.len(), 8);
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
            assert!(seen.insert(id));
        }
        // When every 8-hex candidate is taken, the fallback is a full uuid.
        assert_eq!(new_entry_id(|_| true).len(), 36);
    }

    /// Session ids carry version 7, the variant bits and the timestamp.
    #[test]
    fn uuid_v7_layout() {
        let id = uuid_v7(1_735_722_000_007);
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "7");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(&id[..8], format!("{:08x}", 1_735_722_000_007u64 >> 16));
    }

    /// Migrated ids depend only on the session and the position.
    #[test]
    fn migrated_ids_are_deterministic() {
        assert_eq!(
            migrated_entry_id("s", 3, |_| false),
            migrated_entry_id("s", 3, |_| false)
        );
        assert_ne!(
            migrated_entry_id("s", 3, |_| false),
            migrated_entry_id("s", 4, |_| false)
        );
    }
}
