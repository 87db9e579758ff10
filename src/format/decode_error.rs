//! The error of every decoder of stored bytes (`record.rs`, `seal.rs`, `page.rs`,
//! `id_index.rs`): below them all, so that the seal and the values it seals do not import each
//! other. `record` re-exports it where the public API has it.

/// Why a stored value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);
