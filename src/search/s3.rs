//! Searching logs on an object store: one log `s3://BUCKET/KEY`, or every log below a prefix
//! `s3://BUCKET/PREFIX/` (at any depth, as a directory's search covers every `*.jsonl` below
//! it). Each log is searched as a local copy of its bytes in a cache folder per prefix, and the
//! folder as the directory holding the same files would be: the hits, their order, lines,
//! snippets and flags are those of the same logs in a local directory; hits are then named by
//! the logs' addresses.
//!
//! The cache folder is `s3-<16 hex digits of blake3(STORE \0 BUCKET \0 PREFIX \0)>/`
//! (format-spec/object-store.md §7.1) in the index directory when one is named
//! (`SearchOptions::index_dir`), else in the cache directory of the logs' sidecars
//! ([`crate::object_store::default_cache_dir`]). The copy of `PREFIX/sub/x.jsonl` is
//! `sub/x.jsonl` in it, beside its record ([`crate::object_store::update_copy`]) and its
//! sidecar; the folder's search index is its `.treelog-search/`. A search of one log uses the
//! folder of the prefix it is in (`s3://BUCKET/a/x.jsonl`: of `a/`), as a file's search uses its
//! directory's index. A key with a `.treelog-search` part is not searched, as that directory is
//! not entered locally.
//!
//! Every search catches each copy up from the segments appended since the last one (anything
//! else is checked byte for byte against the store, never assumed). A copy replaced by other
//! bytes has its sidecar and the folder's search index deleted, so that both are rebuilt from
//! the new bytes; a prefix's search deletes the copies of logs no longer below it. The lock file
//! `.treelog-copies.lock` in the folder is held from the catch-up to the end of the search, so
//! that two searches never change the copies under each other.
//!
//! Without index writes nothing is written to the cache: a folder whose copies hold the logs as
//! they are is searched read-only, and otherwise the copies are made in a temporary folder
//! (from the cached ones, so that only the bytes after them are read), indexed in memory and
//! deleted after the search. A cache folder that cannot be created or locked is searched so
//! too, as a search index that cannot be written is.
//!
//! An `s3://BUCKET/KEY` without segments names the prefix `KEY/` when logs are below it, and is
//! an error otherwise; a prefix with no log below it has no hit, as an empty directory.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::object_store::{
    CopyChange, ObjectStoreError, Remote, S3Address, S3Prefix, SCHEME, SegmentStorage, StoreConfig,
    copy_is_current, copy_record_path, default_cache_dir, each_session, logs_under, update_copy,
};

use super::copies::{Materialized, Prepared, copy_path, remove_if_present, temporary_dir};
use super::error::SearchError;
use super::find;
use super::store::INDEX_DIR_NAME;

/// Hex digits of the prefix's hash in the cache folder's name.
const CACHE_KEY_HEX_LEN: usize = 16;

/// The lock file of a cache folder.
const LOCK_FILE_NAME: &str = ".treelog-copies.lock";

/// What an address names: one log, or the logs below a prefix (`logs`, in key order).
enum Scope {
    Log(S3Address),
    Prefix {
        prefix: S3Prefix,
        logs: Vec<S3Address>,
    },
}

/// The logs `text` names (`None` when it is not an `s3://` address), with their copies brought
/// up to date for a search with `index_dir` and `index_write`.
pub(crate) fn prepare(
    text: &str,
    index_dir: Option<&Path>,
    index_write: bool,
) -> Option<Result<Materialized, SearchError>> {
    text.starts_with(SCHEME)
        .then(|| prepare_scope(&scope(text)?, index_dir, index_write))
}

/// What `text` names: a prefix when it ends with `/` or names a bucket alone; else the log
/// `KEY`, or the prefix `KEY/` when `KEY` has no segment but logs are below `KEY/`.
fn scope(text: &str) -> Result<Scope, SearchError> {
    let rest = &text[SCHEME.len()..];
    if rest.contains('/')
        && !rest.ends_with('/')
        && let Some(address) = S3Address::parse(text)
    {
        let address = address?;
        let config = StoreConfig::from_env()?;
        let remote = Arc::new(Remote::connect(&config, &address.bucket)?);
        if !SegmentStorage::open(remote, &address)?
            .segments()
            .is_empty()
        {
            return Ok(Scope::Log(address));
        }
        let prefix = S3Prefix {
            bucket: address.bucket.clone(),
            prefix: format!("{}/", address.key),
        };
        let logs = logs_under(&prefix)?;
        if logs.is_empty() {
            return Err(ObjectStoreError::Layout {
                object: address.url(),
                reason: format!(
                    "no such log: no segment under {}, and no log under {}",
                    address.object_url(&address.segments_folder()),
                    prefix.url()
                ),
            }
            .into());
        }
        return Ok(Scope::Prefix { prefix, logs });
    }
    let prefix = match S3Prefix::parse(text) {
        Some(prefix) => prefix?,
        None => {
            return Err(ObjectStoreError::Address {
                address: text.to_owned(),
                reason: "not an s3:// address".into(),
            }
            .into());
        }
    };
    let logs = logs_under(&prefix)?;
    Ok(Scope::Prefix { prefix, logs })
}

/// The copies of one scope: the cache folder, the path searched, each log with its key in the
/// folder, and whether copies of other logs in the folder are stale.
struct Plan {
    folder: PathBuf,
    /// The folder, or the one log's copy in it.
    searched: PathBuf,
    /// Each log, its key below the folder, and its address as hits name it.
    logs: Vec<(S3Address, String, String)>,
    whole_folder: bool,
}

impl Plan {
    /// `work(store, log, its copy in folder)` for each log, several at once, in `logs` order.
    fn each_copy<T, Work>(
        &self,
        folder: &Path,
        work: Work,
    ) -> Result<Vec<Result<T, ObjectStoreError>>, SearchError>
    where
        T: Send,
        Work: Fn(&Arc<Remote>, &S3Address, &Path) -> Result<T, ObjectStoreError> + Sync,
    {
        let addresses: Vec<S3Address> = self.logs.iter().map(|(log, ..)| log.clone()).collect();
        let keys: HashMap<&S3Address, &str> = self
            .logs
            .iter()
            .map(|(log, key, _)| (log, key.as_str()))
            .collect();
        Ok(each_session(&addresses, |remote, address| {
            let copy = copy_path(folder, keys.get(address).copied().unwrap_or_default());
            work(remote, address, &copy)
        })?)
    }
}

fn plan_of(scope: &Scope, root: &Path) -> Result<Plan, SearchError> {
    let config = StoreConfig::from_env()?;
    Ok(match scope {
        Scope::Log(address) => {
            let (parent, name) = match address.key.rsplit_once('/') {
                Some((parent, name)) => (format!("{parent}/"), name),
                None => (String::new(), address.key.as_str()),
            };
            let folder = cache_folder(root, &config, &address.bucket, &parent);
            Plan {
                searched: copy_path(&folder, name),
                folder,
                logs: vec![(address.clone(), name.to_owned(), address.url())],
                whole_folder: false,
            }
        }
        Scope::Prefix { prefix, logs } => {
            let folder = cache_folder(root, &config, &prefix.bucket, &prefix.prefix);
            let logs = logs
                .iter()
                .filter_map(|log| {
                    let key = log.key.strip_prefix(&prefix.prefix)?;
                    let searched = key.split('/').all(|part| part != INDEX_DIR_NAME);
                    searched.then(|| (log.clone(), key.to_owned(), log.url()))
                })
                .collect();
            Plan {
                searched: folder.clone(),
                folder,
                logs,
                whole_folder: true,
            }
        }
    })
}

/// The cache folder of the logs below `prefix` of `bucket` on `config`'s store.
fn cache_folder(root: &Path, config: &StoreConfig, bucket: &str, prefix: &str) -> PathBuf {
    let mut hasher = blake3::Hasher::new();
    for part in [config.store_name().as_str(), bucket, prefix] {
        hasher.update(part.as_bytes());
        hasher.update(&[0]);
    }
    let key = &hasher.finalize().to_hex()[..CACHE_KEY_HEX_LEN];
    root.join(format!("s3-{key}"))
}

fn prepare_scope(
    scope: &Scope,
    index_dir: Option<&Path>,
    index_write: bool,
) -> Result<Materialized, SearchError> {
    let root = index_dir.map_or_else(default_cache_dir, Path::to_path_buf);
    let plan = plan_of(scope, &root)?;
    let mut materialized = Materialized {
        searches: Vec::new(),
        temporary: None,
        lock: None,
    };
    if plan.logs.is_empty() {
        return Ok(materialized);
    }
    let addresses = |folder: &Path| -> HashMap<PathBuf, String> {
        plan.logs
            .iter()
            .map(|(_, key, url)| (copy_path(folder, key), url.clone()))
            .collect()
    };
    // A cache folder that cannot be written is searched as without index writes.
    materialized.lock = index_write.then(|| lock(&plan.folder).ok()).flatten();
    let index_write = materialized.lock.is_some();
    if index_write {
        update_copies(&plan, &plan.folder)?;
    } else if !copies_current(&plan)? {
        let temporary_dir = temporary_dir("s3")?;
        let temporary = temporary_dir.path().to_path_buf();
        materialized.temporary = Some(temporary_dir);
        seed_copies(&plan, &temporary)?;
        update_copies(&plan, &temporary)?;
        let searched = if plan.whole_folder {
            temporary.clone()
        } else {
            copy_path(&temporary, &plan.logs[0].1)
        };
        materialized.searches.push(Prepared {
            path: searched,
            index_write: false,
            addresses: addresses(&temporary),
        });
        return Ok(materialized);
    }
    materialized.searches.push(Prepared {
        path: plan.searched.clone(),
        index_write,
        addresses: addresses(&plan.folder),
    });
    Ok(materialized)
}

/// Creates the cache folder if needed and takes its lock (waiting for another search to
/// finish with it).
fn lock(folder: &Path) -> Result<File, SearchError> {
    // Copies of logs on a store are not local files of their own: 0600 in a 0700 folder.
    crate::fs_safe::create_owned_dir(folder, 0o700)
        .map_err(|error| SearchError::io(folder, "create the cache folder", error))?;
    let path = folder.join(LOCK_FILE_NAME);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|error| SearchError::io(&path, "open", error))?;
    file.lock()
        .map_err(|error| SearchError::io(&path, "lock the cache folder", error))?;
    crate::fs_safe::remove_leftovers(folder, crate::fs_safe::partial_pid);
    Ok(file)
}

/// Brings the copies of `plan`'s logs in `folder` up to date, several at once; deletes the
/// sidecar of each replaced copy and then the folder's search index, and, for a whole folder,
/// the copies of logs no longer there.
fn update_copies(plan: &Plan, folder: &Path) -> Result<(), SearchError> {
    let updated = plan.each_copy(folder, update_copy)?;
    let mut rebuild = false;
    for ((_, key, _), update) in plan.logs.iter().zip(updated) {
        let change = update?.change;
        if matches!(change, CopyChange::Replaced | CopyChange::Absent) {
            remove_if_present(&crate::sidecar_path(&copy_path(folder, key)))?;
        }
        // A log gone is dropped from the index by the search, as a deleted file is.
        rebuild |= change == CopyChange::Replaced;
    }
    if plan.whole_folder {
        for stale in stale_copies(plan, folder)? {
            remove_if_present(&stale)?;
            remove_if_present(&copy_record_path(&stale))?;
            remove_if_present(&crate::sidecar_path(&stale))?;
        }
    }
    if rebuild {
        let index = folder.join(INDEX_DIR_NAME);
        match fs::remove_dir_all(&index) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(SearchError::io(&index, "delete the stale index", error));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The copies in `folder` of logs not in `plan` (none when there is no folder).
fn stale_copies(plan: &Plan, folder: &Path) -> Result<Vec<PathBuf>, SearchError> {
    if !folder.is_dir() {
        return Ok(Vec::new());
    }
    let wanted: HashSet<&str> = plan.logs.iter().map(|(_, key, _)| key.as_str()).collect();
    Ok(find::logs_under(folder)?
        .into_iter()
        .filter(|found| !wanted.contains(found.key.as_str()))
        .map(|found| found.path)
        .collect())
}

/// Whether the cache holds every log of `plan` as it is now (and, for a whole folder, no copy
/// of another), read without writing.
fn copies_current(plan: &Plan) -> Result<bool, SearchError> {
    let current = plan.each_copy(&plan.folder, copy_is_current)?;
    for log in current {
        if !log? {
            return Ok(false);
        }
    }
    Ok(!plan.whole_folder || stale_copies(plan, &plan.folder)?.is_empty())
}

/// Copies the cached copies of `plan`'s logs, with their records and mtimes, into `folder`, so
/// that catching them up there reads only what the cache lacks.
fn seed_copies(plan: &Plan, folder: &Path) -> Result<(), SearchError> {
    for (_, key, _) in &plan.logs {
        let (cached, seeded) = (copy_path(&plan.folder, key), copy_path(folder, key));
        let Ok(metadata) = fs::metadata(&cached) else {
            continue;
        };
        if let Some(parent) = seeded.parent() {
            fs::create_dir_all(parent)
                .map_err(|error| SearchError::io(parent, "create a temporary folder", error))?;
        }
        let copied = fs::copy(&cached, &seeded).and_then(|_| {
            let file = OpenOptions::new().write(true).open(&seeded)?;
            metadata.modified().and_then(|time| file.set_modified(time))
        });
        if copied.is_ok() {
            // Without its record the seeded copy is checked against the store byte for byte.
            let _ = fs::copy(copy_record_path(&cached), copy_record_path(&seeded));
        } else {
            let _ = fs::remove_file(&seeded);
        }
    }
    Ok(())
}
