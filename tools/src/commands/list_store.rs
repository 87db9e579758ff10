//! `treelog list s3://BUCKET/PREFIX/`: the sessions stored under an object-store prefix, found
//! with delimited listings and read through their cached indexes, several at once
//! (`treelog::object_store::describe_sessions`).

use std::path::Path;

use treelog::listing::SessionInfo;
use treelog::object_store::{S3Prefix, describe_sessions, session_addresses};

use super::push_pull::cli_error;
use crate::exit::CliError;

/// The `s3://` prefix `dir` names, or `None` when it names a local directory.
pub fn prefix_of(dir: &Path) -> Option<Result<S3Prefix, CliError>> {
    let parsed = S3Prefix::parse(dir.to_str()?)?;
    Some(parsed.map_err(cli_error))
}

/// Every session under `prefix`, in key order: its row, or why it could not be read (naming
/// its address and what the store answered). An error listing the prefix itself (no such
/// bucket, a store that cannot be reached) stops the command.
pub fn read_sessions(prefix: &S3Prefix) -> Result<Vec<Result<SessionInfo, String>>, CliError> {
    let addresses = session_addresses(prefix).map_err(cli_error)?;
    let read = describe_sessions(&addresses, &crate::sidecars::options()).map_err(cli_error)?;
    Ok(read
        .into_iter()
        .map(|info| info.map_err(|error| cli_error(error).to_string()))
        .collect())
}
