//! The sessions stored under an `s3://BUCKET/PREFIX/`, for `treelog list` and `search`: found
//! with delimited listings, then described as local sessions are ([`crate::listing`]), each
//! opened with its index from the cache directory as [`super::open_session`] opens it, several
//! at once ([`each_session`]).
//!
//! A row needs the session's message count on every branch, its last entry's timestamp and its
//! last name, which only the whole log (or its index) gives: the first segment's head and the
//! segment listing do not. So each session costs what a warm open costs (three listings of its
//! segment folder and one ranged read for a log under 64 KiB), and a first open reads the log
//! once to build its index in the cache.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::address::{S3Address, S3Prefix};
use super::error::{ObjectStoreError, Result};
use super::remote::{Folder, Remote, StoreConfig};
use super::storage::SegmentStorage;
use super::transfer::open_storage;
use crate::SessionOptions;
use crate::listing::SessionInfo;

/// Sessions opened at the same time, each on its own connection: an open costs round trips,
/// not work, so it overlaps with the others.
pub const OPENED_AT_ONCE: usize = 16;

/// Folder levels below a prefix that [`logs_under`] looks in, as a search looks below a
/// directory.
const FOLDER_DEPTH_MAX: usize = 32;

/// The name of a log's segment folder ends with this after the log's name.
const SEGMENTS_FOLDER_SUFFIX: &str = ".d/";

/// What a log's name ends with, as a local session file's.
const LOG_SUFFIX: &str = ".jsonl";

/// The logs under `prefix`, in key order: every `NAME.jsonl.d/` folder directly in it and in
/// its subfolders one level down (pi's layout `sessions/--<cwd>--/NAME.jsonl`), as the local
/// listing looks at a directory. An object `NAME.jsonl` (a JSONL file copied as one object) is
/// listed too: opening it says that it is not a log stored as segments.
pub fn session_addresses(prefix: &S3Prefix) -> Result<Vec<S3Address>> {
    addresses_to_depth(prefix, 1)
}

/// The logs under `prefix` at any depth (up to 32 folder levels), in key order, found as
/// [`session_addresses`] finds them: what a search of the prefix covers, as a search of a
/// directory covers every `*.jsonl` below it. A log's segment folder is not looked into.
pub fn logs_under(prefix: &S3Prefix) -> Result<Vec<S3Address>> {
    addresses_to_depth(prefix, FOLDER_DEPTH_MAX)
}

fn addresses_to_depth(prefix: &S3Prefix, depth_max: usize) -> Result<Vec<S3Address>> {
    let config = StoreConfig::from_env()?;
    let remote = Remote::connect(&config, &prefix.bucket)?;
    let mut keys = BTreeSet::new();
    let mut pending = vec![(prefix.prefix.clone(), 0)];
    while let Some((folder, depth)) = pending.pop() {
        let listed = remote.list_folder(&folder)?;
        keys.extend(logs_in(&listed));
        if depth < depth_max {
            pending.extend(
                listed
                    .folders
                    .into_iter()
                    .filter(|folder| log_key(folder).is_none())
                    .map(|folder| (folder, depth + 1)),
            );
        }
    }
    Ok(keys
        .into_iter()
        .map(|key| S3Address {
            bucket: prefix.bucket.clone(),
            key,
        })
        .collect())
}

/// The logs one folder listing shows: its `NAME.jsonl.d/` subfolders and `NAME.jsonl` objects.
fn logs_in(folder: &Folder) -> BTreeSet<String> {
    let from_folders = folder.folders.iter().filter_map(|key| log_key(key));
    let from_objects = folder
        .objects
        .iter()
        .filter(|key| is_log_name(key))
        .map(String::as_str);
    from_folders
        .chain(from_objects)
        .map(str::to_string)
        .collect()
}

/// The log whose segment folder `folder` is (`p/NAME.jsonl` for `p/NAME.jsonl.d/`), if it is one.
fn log_key(folder: &str) -> Option<&str> {
    folder
        .strip_suffix(SEGMENTS_FOLDER_SUFFIX)
        .filter(|key| is_log_name(key))
}

/// Whether `key` names a log: its last part is `NAME.jsonl`, NAME not empty.
fn is_log_name(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    name.len() > LOG_SUFFIX.len() && name.ends_with(LOG_SUFFIX)
}

/// Describes the sessions at `addresses` (all in one bucket), [`OPENED_AT_ONCE`] at a time,
/// each opened with `options` as [`super::open_session`] opens it; the results come back in the
/// order of `addresses`. A session that cannot be read is an error in its place, naming it.
pub fn describe_sessions(
    addresses: &[S3Address],
    options: &SessionOptions,
) -> Result<Vec<Result<SessionInfo>>> {
    each_session(addresses, |remote, address| {
        describe(remote, address, options)
    })
}

/// Runs `work` on each of `addresses` (all in one bucket), [`OPENED_AT_ONCE`] at a time, each
/// worker on its own connection; the results come back in the order of `addresses`.
pub fn each_session<T: Send>(
    addresses: &[S3Address],
    work: impl Fn(&Arc<Remote>, &S3Address) -> Result<T> + Sync,
) -> Result<Vec<Result<T>>> {
    let Some(first) = addresses.first() else {
        return Ok(Vec::new());
    };
    let config = StoreConfig::from_env()?;
    let remotes = (0..OPENED_AT_ONCE.min(addresses.len()))
        .map(|_| Remote::connect(&config, &first.bucket))
        .collect::<Result<Vec<_>>>()?;
    let next = AtomicUsize::new(0);
    let work = &work;
    let done: Vec<Vec<(usize, Result<T>)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = remotes
            .into_iter()
            .map(|remote| {
                let next = &next;
                scope.spawn(move || {
                    let remote = Arc::new(remote);
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(address) = addresses.get(index) else {
                            break;
                        };
                        done.push((index, work(&remote, address)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut slots: Vec<Option<Result<T>>> = addresses.iter().map(|_| None).collect();
    for (index, result) in done.into_iter().flatten() {
        slots[index] = Some(result);
    }
    Ok(slots.into_iter().flatten().collect())
}

/// The row of the session at `address`; its file modification time is its last segment's.
fn describe(
    remote: &Arc<Remote>,
    address: &S3Address,
    options: &SessionOptions,
) -> Result<SessionInfo> {
    let storage = SegmentStorage::open(remote.clone(), address)?;
    let Some(last) = storage.segments().pop() else {
        return Err(ObjectStoreError::Layout {
            object: address.url(),
            reason: format!(
                "no log there (no segment under {}): it was removed while listed",
                address.object_url(&address.segments_folder())
            ),
        });
    };
    let modified_ms = last.modified_ns / 1_000_000;
    let mut session = open_storage(storage, remote.config(), options.clone())?;
    Ok(crate::listing::describe(
        &mut session,
        Path::new(&address.url()),
        modified_ms,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_of_a_folder_listing() {
        let folder = Folder {
            folders: vec![
                "p/a.jsonl.d/".into(),
                "p/--cwd--/".into(),
                "p/.jsonl.d/".into(),
                "p/notes.d/".into(),
            ],
            objects: vec!["p/b.jsonl".into(), "p/a.jsonl".into(), "p/c.txt".into()],
        };
        let logs: Vec<String> = logs_in(&folder).into_iter().collect();
        assert_eq!(logs, ["p/a.jsonl", "p/b.jsonl"]);
        assert_eq!(log_key("p/--cwd--/"), None);
        assert_eq!(log_key("x.jsonl.d/"), Some("x.jsonl"));
    }
}
