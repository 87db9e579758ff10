//! The Node binding of treelog: the native half of `index.js`, which gives pi-coding-agent's
//! `SessionManager` its exact shape. This half is thin: a `NativeSession` (`session.rs`) holds
//! one `treelog::Session` and answers each query with one JSON string, and every append
//! (`appends.rs`) takes the id and timestamp the JS side drew, as pi draws them. A session
//! bound to a file stays in memory until it holds a conversation (`pending.rs`).
//!
//! Errors reach JS as `Error`s whose `code` is stable (`errors.rs`); a panic in the engine
//! becomes a `TREELOG_PANIC` error and leaves the handle unusable, never aborting the process.

mod appends;
mod errors;
pub mod listing;
mod open;
mod pending;
pub mod search;
mod session;
mod tree_selector;
pub mod wire;

/// Installs the quiet panic hook when the addon loads: a panic the library catches (redb on a
/// damaged sidecar) must not print into the Node process's output.
#[napi_derive::module_init]
fn init() {
    treelog::quiet_panics::install();
}
