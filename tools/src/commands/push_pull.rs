//! `treelog push FILE s3://...` and `treelog pull s3://... FILE`: a log copied byte for byte
//! between a local file and an S3-compatible object store (format-spec/object-store.md), both
//! sides hashed with blake3; and the helpers through which every command reads, appends to or
//! verifies a log named `s3://BUCKET/KEY`. The store's settings come from the environment:
//! `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ALLOW_HTTP`.

use std::path::{Path, PathBuf};

use treelog::object_store::{ObjectStoreError, S3Address, Transferred};
use treelog::{Session, SessionOptions};

use crate::exit::CliError;
use crate::out::Out;

/// Settings of the object store, shown in the help of push, pull and compact.
pub const STORE_HELP: &str = "\
The object store is named by the environment: AWS_ENDPOINT_URL (e.g. http://127.0.0.1:8333),
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (unsigned requests without them), AWS_REGION
(default us-east-1), AWS_ALLOW_HTTP=true for a plain-http endpoint. A log s3://BUCKET/KEY is
stored as the segment objects KEY.d/seg-{start offset, 20 digits}, or covering segments
KEY.d/seg-{start}-{end} written by `treelog compact` (format-spec/object-store.md);
the commands that read a session (context, path, tree, info, export), append and verify accept
s3:// addresses too, keeping the index in a local cache (--index-dir, else
$XDG_CACHE_HOME/treelog).";

/// Copy a local log to an object store, byte for byte, and check the copy.
///
/// The log is written as segment objects, each created only if no object has its name; a log
/// already at the address must be the beginning of FILE (only the rest is pushed), anything
/// else is refused. The log is then read back and its blake3 compared with FILE's.
#[derive(clap::Args, Debug)]
#[command(after_help = STORE_HELP)]
pub struct PushArgs {
    /// The local log (.jsonl).
    pub file: PathBuf,
    /// Where it goes: s3://BUCKET/KEY.
    pub address: String,
}

/// Copy a log from an object store to a local file, byte for byte, and check the copy.
///
/// The segments are listed and checked (contiguous, nothing foreign), read, written to a
/// temporary file beside FILE, synced and renamed into place; FILE is then read back and its
/// blake3 compared with the log's.
#[derive(clap::Args, Debug)]
#[command(after_help = STORE_HELP)]
pub struct PullArgs {
    /// The log on the store: s3://BUCKET/KEY.
    pub address: String,
    /// The local file to write.
    pub file: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn run_push(args: PushArgs, out: &mut Out) -> Result<(), CliError> {
    super::foreign::refuse_other(&args.file)?;
    let address = parse_required(&args.address)?;
    let copied = treelog::object_store::push(&args.file, &address).map_err(cli_error)?;
    report(
        &copied,
        &args.file.display().to_string(),
        &address.url(),
        out,
    )
}

pub fn run_pull(args: PullArgs, out: &mut Out) -> Result<(), CliError> {
    let address = parse_required(&args.address)?;
    let copied =
        treelog::object_store::pull(&address, &args.file, args.force).map_err(cli_error)?;
    report(
        &copied,
        &address.url(),
        &args.file.display().to_string(),
        out,
    )
}

fn report(copied: &Transferred, from: &str, to: &str, out: &mut Out) -> Result<(), CliError> {
    let kept = if copied.already_there_bytes > 0 {
        format!(" ({} already there)", copied.already_there_bytes)
    } else {
        String::new()
    };
    out.line(&format!(
        "{from} -> {to}: {} bytes{kept}, {} segment(s); blake3 {} on both sides",
        copied.len_bytes, copied.segments, copied.blake3
    ))
}

/// The `s3://` address `text` names, or `None` when it names no object store.
pub fn address_of(path: &Path) -> Option<Result<S3Address, CliError>> {
    let parsed = S3Address::parse(path.to_str()?)?;
    Some(parsed.map_err(cli_error))
}

pub fn parse_required(text: &str) -> Result<S3Address, CliError> {
    match S3Address::parse(text) {
        Some(parsed) => parsed.map_err(cli_error),
        None => Err(CliError::input(
            text,
            "not an object-store address: expected s3://BUCKET/KEY",
        )),
    }
}

/// Opens the session at `address` with the run's options; `must_exist` refuses an address
/// that holds no log yet (the commands that read one), as a missing file is refused.
pub fn open_address(
    address: &S3Address,
    options: SessionOptions,
    must_exist: bool,
) -> Result<Session, CliError> {
    let mut session = treelog::object_store::open_session(address, options).map_err(cli_error)?;
    if must_exist && session.stats()?.log_len_bytes == 0 {
        return Err(CliError::input(
            address.url(),
            format!(
                "no such log: no segment under {}",
                address.object_url(&address.segments_folder())
            ),
        ));
    }
    Ok(session)
}

/// `treelog verify` of a log on a store.
pub fn verify(
    address: &S3Address,
    full: bool,
    options: &SessionOptions,
) -> Result<treelog::verify::Report, CliError> {
    treelog::object_store::verify(address, full, options).map_err(cli_error)
}

/// The CLI's error for an object-store error: the object (or file) it names, and the rest.
pub fn cli_error(error: ObjectStoreError) -> CliError {
    match error {
        ObjectStoreError::Session(error) => CliError::Library(error),
        ObjectStoreError::Io {
            path,
            operation,
            source,
        } => CliError::io(path, operation, source),
        ObjectStoreError::Address { address, reason } => CliError::input(address, reason),
        ObjectStoreError::Config { reason } => CliError::input("object store settings", reason),
        ObjectStoreError::Store {
            object,
            operation,
            answer,
        } => CliError::input(
            object,
            format!("cannot {operation}: the store answered: {answer}"),
        ),
        ObjectStoreError::Layout { object, reason } => CliError::input(object, reason),
        error @ (ObjectStoreError::Timeout { .. } | ObjectStoreError::Listing { .. }) => {
            let text = error.to_string();
            let (location, message) = text.split_once(": ").unwrap_or(("store", &text));
            CliError::input(location, message)
        }
        ObjectStoreError::Refused { target, reason } => CliError::input(target, reason),
        error @ ObjectStoreError::Mismatch { .. } => {
            let text = error.to_string();
            let (location, message) = text.split_once(": ").unwrap_or(("copy", &text));
            CliError::input(location, message)
        }
    }
}
