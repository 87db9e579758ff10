//! Entry and session identifiers as the reference tools make them: 8 lowercase hex characters
//! for entries, a UUIDv7 for sessions (RFC 9562, laid out as pi-ai's `uuidv7` lays it out), and
//! a UUIDv8 derived from a name where an id must come out the same on every open. The
//! randomness comes from the standard library's per-process hash keys, so no dependency and no
//! I/O is needed.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
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
pub fn new_entry_id(taken: impl FnMut(&str) -> bool) -> String {
    entry_id_from_draws(uuid_v4, taken)
}

/// A new entry id as pi's `generateId` makes one from `crypto.randomUUID`: the first 8
/// characters of a drawn uuid that `taken` does not reject, tried [`ENTRY_ID_TRIES_MAX`]
/// times, else a whole drawn uuid. A caller passes pi's own draws to write pi's ids.
pub fn entry_id_from_draws(
    mut draw_uuid: impl FnMut() -> String,
    mut taken: impl FnMut(&str) -> bool,
) -> String {
    for _ in 0..ENTRY_ID_TRIES_MAX {
        let uuid = draw_uuid();
        let candidate = uuid.get(..8).unwrap_or(&uuid);
        if !taken(candidate) {
            return candidate.to_string();
        }
    }
    draw_uuid()
}

/// A random uuid (version 4) in the 8-4-4-4-12 form.
pub fn uuid_v4() -> String {
    let high = (random_u64() & !0xf000) | 0x4000;
    let low = (random_u64() & !(0b11 << 62)) | (0b10 << 62);
    format_uuid(high, low)
}

/// The largest timestamp a UUIDv7 holds: 48 bits of epoch milliseconds.
const UUID_V7_TIMESTAMP_MS_MAX: u64 = 0xffff_ffff_ffff;

/// The largest value of the 41-bit counter pi-ai's `uuidv7` keeps in the random fields.
const UUID_V7_SEQUENCE_MAX: u64 = (1 << 41) - 1;

/// What pi-ai's `uuidv7` remembers between calls: the largest timestamp handed out (so ids
/// never go back in time when the clock does) and a counter started at a random 40-bit value
/// and incremented per id (so ids of one process sort in the order they were made, even
/// within a millisecond).
struct V7Clock {
    last_ms: u64,
    sequence: Option<u64>,
}

static V7_CLOCK: Mutex<V7Clock> = Mutex::new(V7Clock {
    last_ms: 0,
    sequence: None,
});

/// A new session id: a UUIDv7 for the current time `now_ms`, as pi's `createSessionId()`
/// makes it (pi-ai's `uuidv7()` without a timestamp): the timestamp never goes below an earlier
/// id's, and the ids one process makes are strictly increasing.
pub fn new_session_id(now_ms: i64) -> String {
    let mut clock = V7_CLOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let timestamp_ms = (now_ms.max(0) as u64)
        .min(UUID_V7_TIMESTAMP_MS_MAX)
        .max(clock.last_ms);
    clock.last_ms = timestamp_ms;
    let sequence = next_sequence(&mut clock.sequence);
    drop(clock);
    uuid_v7_bytes(timestamp_ms, sequence)
}

/// A UUIDv7 carrying exactly `epoch_ms` (clamped to the 48 bits it has room for), as pi-ai's
/// `uuidv7(timestampMs)`: for ids whose time is given, e.g. synthetic transcripts.
pub fn uuid_v7(epoch_ms: i64) -> String {
    let timestamp_ms = (epoch_ms.max(0) as u64).min(UUID_V7_TIMESTAMP_MS_MAX);
    let sequence = {
        let mut clock = V7_CLOCK
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        next_sequence(&mut clock.sequence)
    };
    uuid_v7_bytes(timestamp_ms, sequence)
}

/// The counter's next value: a random 40-bit start, then one more per id. pi-ai throws when
/// the 41 bits run out (after 2^40 ids at least); this starts again from a random value.
fn next_sequence(sequence: &mut Option<u64>) -> u64 {
    let next = match *sequence {
        Some(value) if value < UUID_V7_SEQUENCE_MAX => value + 1,
        _ => random_u64() & ((1 << 40) - 1),
    };
    *sequence = Some(next);
    next
}

/// The 16 bytes of pi-ai's `uuidv7`: 48 bits of timestamp, version 7, the counter's top 12 bits
/// (`rand_a`), variant `10`, the counter's other 29 bits, then 33 random bits.
fn uuid_v7_bytes(timestamp_ms: u64, sequence: u64) -> String {
    let random = random_u64();
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&timestamp_ms.to_be_bytes()[2..]);
    bytes[6] = 0x70 | ((sequence >> 37) & 0x0f) as u8;
    bytes[7] = (sequence >> 29) as u8;
    bytes[8] = 0x80 | ((sequence >> 23) & 0x3f) as u8;
    bytes[9] = (sequence >> 15) as u8;
    bytes[10] = (sequence >> 7) as u8;
    bytes[11] = (((sequence & 0x7f) << 1) as u8) | (random & 1) as u8;
    bytes[12..].copy_from_slice(&((random >> 1) as u32).to_be_bytes());
    format_uuid_bytes(&bytes)
}

/// A UUIDv8 (RFC 9562 §5.8) made of the blake3 hash of `name`: the same name always gives the
/// same id. For a session id that must be stable without being stored anywhere, such as the
/// one shown for a log that has lines but no header (each open must agree, and `treelog
/// repair` writes the id that was shown).
pub fn uuid_v8_from_name(name: &[u8]) -> String {
    let digest = blake3::hash(name);
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_bytes()[..16]);
    bytes[6] = 0x80 | (bytes[6] & 0x0f);
    bytes[8] = 0x80 | (bytes[8] & 0x3f);
    format_uuid_bytes(&bytes)
}

fn format_uuid_bytes(bytes: &[u8; 16]) -> String {
    let high = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
    let low = u64::from_be_bytes(bytes[8..].try_into().expect("8 bytes"));
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

/// The version of `id` when it is a uuid laid out as RFC 9562 and as this module writes one:
/// 36 characters, lowercase hex with dashes at 8, 13, 18 and 23, and the variant bits `10`;
/// `None` for anything else. The layout check the tests and the fuzz checks share.
pub fn uuid_version(id: &str) -> Option<u8> {
    let bytes = id.as_bytes();
    if bytes.len() != 36 {
        return None;
    }
    let layout_holds = bytes.iter().enumerate().all(|(index, &byte)| {
        if matches!(index, 8 | 13 | 18 | 23) {
            byte == b'-'
        } else {
            byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)
        }
    });
    let nibble = |index: usize| (bytes[index] as char).to_digit(16).map(|digit| digit as u8);
    if !layout_holds || nibble(19)? >> 2 != 0b10 {
        return None;
    }
    nibble(14)
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

    /// The layout check accepts this module's uuids and refuses each way of breaking one:
    /// length, case, a dash out of place, a non-hex character, the variant bits.
    #[test]
    fn uuid_version_checks_the_layout() {
        let cases: &[(&str, Option<u8>)] = &[
            ("01943a1b-2c3d-7e4f-8a5b-6c7d8e9f0a1b", Some(7)),
            ("01943a1b-2c3d-4e4f-bfff-6c7d8e9f0a1b", Some(4)),
            ("01943a1b-2c3d-7e4f-8a5b-6c7d8e9f0a1", None),
            ("01943a1b-2c3d-7e4f-8a5b-6c7d8e9f0a1bc", None),
            ("01943A1B-2C3D-7E4F-8A5B-6C7D8E9F0A1B", None),
            ("01943a1b2-c3d-7e4f-8a5b-6c7d8e9f0a1b", None),
            ("01943a1b-2c3d-7e4f-8a5b-6c7d8e9f0a1g", None),
            ("01943a1b-2c3d-7e4f-ca5b-6c7d8e9f0a1b", None),
            ("01943a1b-2c3d-7e4f-7a5b-6c7d8e9f0a1b", None),
            ("a1b2c3d4", None),
            ("", None),
        ];
        for &(id, expected) in cases {
            assert_eq!(uuid_version(id), expected, "{id}");
        }
    }

    /// The version of a uuid this module wrote, its layout checked.
    fn version_of(id: &str) -> u8 {
        uuid_version(id).unwrap_or_else(|| panic!("not an RFC 9562 uuid: {id}"))
    }

    /// Session ids are UUIDv7 (version 7, variant 10) carrying the timestamp, as pi's.
    #[test]
    fn uuid_v7_layout() {
        for epoch_ms in [0, 1, 1_735_722_000_007, UUID_V7_TIMESTAMP_MS_MAX as i64] {
            let id = uuid_v7(epoch_ms);
            assert_eq!(version_of(&id), 7);
            assert_eq!(&id[..8], format!("{:08x}", epoch_ms as u64 >> 16));
            assert_eq!(&id[9..13], format!("{:04x}", epoch_ms as u64 & 0xffff));
        }
        assert_eq!(version_of(&new_session_id(1_735_722_000_007)), 7);
        assert_eq!(version_of(&uuid_v4()), 4);
    }

    /// New session ids of one process are strictly increasing, also within one millisecond
    /// and when the clock goes back, as pi-ai's counter makes them.
    #[test]
    fn new_session_ids_increase() {
        let mut previous = new_session_id(1_735_722_000_007);
        for now_ms in [
            1_735_722_000_007,
            1_735_722_000_007,
            1_735_722_000_000,
            1_735_722_000_100,
        ] {
            let id = new_session_id(now_ms);
            assert_eq!(version_of(&id), 7);
            assert!(id > previous, "{id} after {previous}");
            previous = id;
        }
        // The clock went back to ...000: the id keeps the later time.
        assert!(previous.starts_with(&format!("{:08x}", 1_735_722_000_100u64 >> 16)));
    }

    /// A name's UUIDv8 is a valid version 8 uuid, the same for the same name, another for
    /// another name.
    #[test]
    fn uuid_v8_from_name_is_stable() {
        let id = uuid_v8_from_name(b"/home/user/session.jsonl");
        assert_eq!(version_of(&id), 8);
        assert_eq!(id, uuid_v8_from_name(b"/home/user/session.jsonl"));
        assert_ne!(id, uuid_v8_from_name(b"/home/user/other.jsonl"));
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
