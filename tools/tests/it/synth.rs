//! Synthetic transcripts for the tests, written in process by the generator `treelog demo`
//! shares with the developer tool (`treelog-synth`), and the generator's own checks.

use std::path::Path;

use treelog::SessionOptions;
use treelog_synth::{GenOptions, GenSummary, Writer};

/// What `treelog-dev gen FILE --entries N --seed S` writes by default, with `writer`.
pub fn options(entries: u64, seed: u64, writer: Writer) -> GenOptions {
    GenOptions {
        entries,
        seed,
        branch_rate: 0.01,
        compact_every: 5000,
        payload_bytes: 1024,
        edit_rate: 0.0,
        cwd: "/home/dev/project".into(),
        writer,
        sessions: SessionOptions::default(),
    }
}

/// Writes a new transcript of `entries` entries at `path` with the bulk writer, indexed.
pub fn generate(path: &Path, entries: u64, seed: u64) -> GenSummary {
    treelog_synth::generate(path, &options(entries, seed, Writer::Bulk), |_| {})
        .unwrap_or_else(|error| panic!("generate {}: {error}", path.display()))
}
