//! What treelog's tests and fuzz targets share, in one dev-only crate: the root crate's and the
//! CLI's integration tests take it as a dev-dependency, the fuzz crate as a dependency.
//!
//! - `answers` / `Answers`: everything a session answers, in one comparable value, and the opens
//!   the tests compare (`replay`, `open`, `no_index`, `scratch_dir`, `indexed_sample`);
//! - `tamper`: damage written into a sidecar behind treelog's back;
//! - `model`: the reference model of the session API, for the model test and the fuzzer;
//! - `fuzz`: the check behind each fuzz target and the replay of the committed corpus;
//! - `rng`: the seeded generator of the randomized tests;
//! - `hooked_storage`: a log in memory whose reads can be watched and appends made to fail;
//! - `openclaw_fixture`: OpenClaw's state directory fixture, unpacked;
//! - `search_texts` (feature `search`): the brute-force side of the search tests;
//! - `process`: a child process run with its standard input given.

pub mod fuzz;
pub mod hooked_storage;
pub mod model;
pub mod openclaw_fixture;
pub mod process;
pub mod rng;
#[cfg(feature = "search")]
pub mod search_index;
#[cfg(feature = "search")]
pub mod search_texts;

mod answers;
mod tamper;

pub use answers::{Answers, TreeRow, answers, indexed_sample, no_index, open, replay, scratch_dir};
pub use tamper::{
    CHILDREN, FIELD_TAGS, RECORDS, patch_record, patch_stored_field, tamper, tamper_page,
};
