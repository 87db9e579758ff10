//! Where the commands keep sidecar indexes, chosen once per run by the global options
//! `--index-dir DIR` (or the environment variable `TREELOG_INDEX_DIR`; the flag wins) and
//! `--no-index-write`, and applied to every session a command opens on the user's logs
//! (`demo`'s too; `bench` keeps its sidecars beside its transcripts, which is what it
//! measures, and says so in its `--help`) and to the search index (`search`, `reindex
//! --search`).

use std::path::PathBuf;
use std::sync::OnceLock;

use treelog::SessionOptions;

/// The global index options (shown in every command's `--help`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct IndexArgs {
    /// Keep sidecar indexes in DIR (created when first needed) instead of beside the logs,
    /// each named after its log's file name and a hash of the log's full path, so that the
    /// session folders are left untouched. Default: $TREELOG_INDEX_DIR, else beside each log.
    #[arg(long, global = true, value_name = "DIR", env = "TREELOG_INDEX_DIR")]
    pub index_dir: Option<PathBuf>,
    /// Never create or write an index: a valid one is read, and without one the log is read
    /// whole (slower on long logs). Nothing is written beside the logs or in the index
    /// directory (appends still write to the log).
    #[arg(long, global = true)]
    pub no_index_write: bool,
}

static CHOSEN: OnceLock<IndexArgs> = OnceLock::new();

/// Records the run's choice; called once, by `main`, before any command runs.
pub fn choose(args: IndexArgs) {
    let _ = CHOSEN.set(args);
}

/// The session options every command starts from: the library's defaults with the run's
/// index location and write permission.
pub fn options() -> SessionOptions {
    let chosen = CHOSEN.get().cloned().unwrap_or_default();
    SessionOptions {
        index_dir: chosen.index_dir,
        index_write: !chosen.no_index_write,
        ..SessionOptions::default()
    }
}
