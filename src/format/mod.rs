//! The log and index formats as pure code: no file, no clock, no randomness beyond the id
//! generator's. Everything here is safe to call on any bytes from disk.

pub mod ids;
pub mod json_scan;
pub mod line;
pub mod record;
pub mod time;
pub mod write;

/// The session format version treelog writes (pi's `CURRENT_SESSION_VERSION`).
pub const CURRENT_VERSION: u32 = 3;
