//! The object-store protocol under a deterministic simulator (format-spec/object-store.md,
//! RELIABILITY.md): `world` is the store and its scheduler, `cases` the scripted schedules of
//! the races once found, `run` the seeded schedules of writers, compactors, readers, pulls and
//! verifies with the invariants checked after every step.

mod cases;
pub mod run;
mod seeds;
pub mod world;

use std::sync::Arc;

use treelog::object_store::{Remote, S3Address};

use world::World;

/// The log every actor works on.
pub fn log() -> S3Address {
    super::address("s.jsonl")
}

/// A client for actor `actor` of `world`, with its clock.
pub fn remote(world: &Arc<World>, actor: usize) -> Arc<Remote> {
    Arc::new(
        Remote::over(&super::config(), "b", world.store(actor))
            .unwrap()
            .with_clock(world.clock(actor)),
    )
}

/// The log the store holds now: the segments read (the outermost, from byte 0, each where the
/// one before ends) concatenated; an error when they do not tile it (a gap, an overlap).
pub fn true_log(world: &World) -> Result<Vec<u8>, String> {
    let state = world.lock();
    let folder = "s.jsonl.d/seg-";
    let mut segments: Vec<(u64, u64, &[u8])> = Vec::new();
    for (key, obj) in &state.objects {
        let Some(name) = key.strip_prefix(folder) else {
            continue;
        };
        let start: u64 = name[..20]
            .parse()
            .map_err(|_| format!("foreign object {key}"))?;
        segments.push((start, start + obj.bytes.len() as u64, &obj.bytes));
    }
    // Outermost first at each start.
    segments.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
    let mut log = Vec::new();
    let mut end = 0;
    for (start, seg_end, bytes) in segments {
        if start == end {
            log.extend_from_slice(bytes);
            end = seg_end;
        } else if start > end {
            return Err(format!("gap: bytes {end}..{start} have no segment"));
        } else if seg_end > end {
            return Err(format!(
                "overlap: a segment {start}..{seg_end} crosses byte {end}"
            ));
        }
    }
    Ok(log)
}
