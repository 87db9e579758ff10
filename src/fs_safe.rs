//! Files and folders where someone else may have put a link or left a file. treelog creates,
//! clears and replaces only what it has checked, never through a link, and gives what it
//! derives from a log no wider permissions than the log's. The rules, shared by every writer
//! of the engine and the CLI:
//!
//! - A folder treelog names and writes in (a search folder, a cache folder, a temporary
//!   folder) is checked with `symlink_metadata`-like calls before use ([`check_owned_dir`],
//!   [`create_owned_dir`]): a link, something that is not a folder, or a folder of another user
//!   is refused with a [`Refusal`] that the caller's error names, never followed. A folder the
//!   user names (`--index-dir`, `demo --dir`) is taken as named.
//! - A file derived from a source (a sidecar, a search index, a copy) takes its permission bits
//!   at most ([`mode_for_derived`], [`dir_mode_for`]): 0600 files and 0700 folders when the
//!   source is not a local file (an OpenClaw database, a log on an object store).
//! - A temporary folder ([`PrivateTempDir`]) has an unpredictable name, is made exclusively
//!   with mode 0700, and is removed when dropped, or on a signal by [`remove_temp_dirs`], which
//!   a front end's signal handler calls. One left by a killed process is removed by the next
//!   temporary folder of the same kind.
//! - A file replaced whole ([`replace_file_keeping`]) is replaced at the end of its links
//!   (the link stays a link), keeping its mode and owner.
//! - What a killed process left beside the files it was writing (`.rebuild-*`, `.tmp-*`,
//!   `.pull-*`, `.partial`) is removed by the next run that writes there ([`remove_leftovers`]):
//!   only names of treelog's own patterns, of a process no longer running here, untouched for
//!   [`LEFTOVER_AGE_MIN`], never through a link.
//! - A log is read only when it is a regular file ([`open_regular`]): a FIFO, a device or a
//!   socket is refused without blocking.
//!
//! This file reads and writes no log's content and knows nothing of indexes.

use std::fs::{self, DirBuilder, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rustix::fs::OFlags;
use rustix::io::Errno;

/// `open(2)` flags as `custom_flags` takes them.
fn flags(flags: OFlags) -> i32 {
    flags.bits() as i32
}

/// Why a path was refused: carried inside the `io::Error` the functions here return, so that
/// every caller's error names the path and says this ([`refusal`] finds it again).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The path is a symbolic link.
    Link,
    /// The folder belongs to another user.
    OtherOwner { owner_uid: u32 },
    /// The path is there but is not a folder.
    NotAFolder,
    /// The path is not a regular file: `kind` is what it is (`FIFO`, `socket`, ...).
    NotARegularFile { kind: &'static str },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Link => write!(
                f,
                "it is a symbolic link, and treelog follows no link where it writes"
            ),
            Refusal::OtherOwner { owner_uid } => write!(
                f,
                "it belongs to another user (uid {owner_uid}), and treelog writes only in \
                 folders of its own user"
            ),
            Refusal::NotAFolder => write!(f, "it is not a folder"),
            Refusal::NotARegularFile { kind } => {
                write!(
                    f,
                    "it is a {kind}, not a regular file: only files are read as logs"
                )
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// The `io::Error` that carries `refusal`.
pub fn refused(refusal: Refusal) -> io::Error {
    let kind = match refusal {
        Refusal::NotARegularFile { .. } => io::ErrorKind::InvalidInput,
        _ => io::ErrorKind::PermissionDenied,
    };
    io::Error::new(kind, refusal)
}

/// The refusal `error` carries, if it is one of [`refused`]'s.
pub fn refusal(error: &io::Error) -> Option<&Refusal> {
    error.get_ref().and_then(|inner| inner.downcast_ref())
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Opens the folder `path` without following a link (`O_NOFOLLOW | O_DIRECTORY`).
fn open_dir_no_follow(path: &Path) -> io::Result<File> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(flags(
            OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC,
        ))
        .open(path);
    match opened {
        Ok(dir) => Ok(dir),
        Err(error) if error.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
            Err(refused(Refusal::Link))
        }
        Err(error) if error.raw_os_error() == Some(Errno::NOTDIR.raw_os_error()) => {
            Err(refused(Refusal::NotAFolder))
        }
        Err(error) => Err(error),
    }
}

/// Whether the folder `path` exists, checked as a folder treelog may write in: an error
/// carrying a [`Refusal`] when it is a link, not a folder, or another user's; `Ok(false)`
/// when there is nothing there.
pub fn check_owned_dir(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
        Ok(meta) => check_owned_meta(&meta).map(|()| true),
    }
}

fn check_owned_meta(meta: &Metadata) -> io::Result<()> {
    if meta.file_type().is_symlink() {
        return Err(refused(Refusal::Link));
    }
    if !meta.is_dir() {
        return Err(refused(Refusal::NotAFolder));
    }
    if meta.uid() != effective_uid() {
        return Err(refused(Refusal::OtherOwner {
            owner_uid: meta.uid(),
        }));
    }
    Ok(())
}

/// Creates the folder `path` with `mode` (its parents as `create_dir_all` does), or checks the
/// one there ([`check_owned_dir`]) and narrows its permissions to `mode`. The check and the
/// narrowing act on the folder opened without following a link, so a link swapped in between
/// is refused too.
pub fn create_owned_dir(path: &Path, mode: u32) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(mode).create(path) {
        Ok(()) => return Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let dir = open_dir_no_follow(path)?;
    let meta = dir.metadata()?;
    check_owned_meta(&meta)?;
    narrow(&dir, &meta, mode)
}

/// Sets the permissions of this user's folder `path` (not followed if it is a link) to `mode`,
/// or with `widen` off only takes away the bits `mode` lacks: for a folder treelog made, whose
/// permissions follow what it holds (exactly when all of that is known).
pub fn set_dir_mode(path: &Path, mode: u32, widen: bool) -> io::Result<()> {
    let dir = open_dir_no_follow(path)?;
    let meta = dir.metadata()?;
    check_owned_meta(&meta)?;
    let bits = meta.mode() & 0o7777;
    let wanted = if widen { mode } else { bits & mode };
    if bits == wanted {
        return Ok(());
    }
    dir.set_permissions(fs::Permissions::from_mode(wanted))
}

/// Takes away from the open file or folder `file` the permission bits `mode` lacks.
fn narrow(file: &File, meta: &Metadata, mode: u32) -> io::Result<()> {
    let bits = meta.mode() & 0o7777;
    if bits & !mode == 0 {
        return Ok(());
    }
    file.set_permissions(fs::Permissions::from_mode(bits & mode))
}

/// Narrows the permissions of the file `path` (not followed if it is a link) to `mode`, as
/// [`create_owned_dir`] does a folder's; nothing when it is absent.
pub fn narrow_file(path: &Path, mode: u32) -> io::Result<()> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(flags(OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK))
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) if error.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
            return Err(refused(Refusal::Link));
        }
        Err(error) => return Err(error),
    };
    let meta = file.metadata()?;
    narrow(&file, &meta, mode)
}

/// The mode of a file derived from a source with metadata `source` (`None`: not a local file):
/// the source's read and write bits for group and others, read and write for the owner; 0600
/// without a source.
pub fn mode_for_derived(source: Option<&Metadata>) -> u32 {
    source.map_or(0o600, |meta| mode_for_derived_bits(meta.mode()))
}

/// [`mode_for_derived`] of a source with permission bits `source_mode`.
pub fn mode_for_derived_bits(source_mode: u32) -> u32 {
    0o600 | (source_mode & 0o066)
}

/// The mode of a folder holding files of mode `file_mode`: search bits where there are read
/// bits (0600 gives 0700, 0644 gives 0755).
pub fn dir_mode_for(file_mode: u32) -> u32 {
    let file_mode = file_mode & 0o666;
    file_mode | ((file_mode & 0o444) >> 2)
}

/// [`mode_for_derived`] of the file at `source` (followed if it is a link: its target's
/// permissions are what protects the text); 0600 when it cannot be read.
pub fn mode_derived_from(source: &Path) -> u32 {
    mode_for_derived(fs::metadata(source).ok().as_ref())
}

/// Creates the file `path` exclusively (never through a link, never an existing file) with
/// `mode`, for writing.
pub fn create_new_file(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(flags(OFlags::CLOEXEC))
        .open(path)
}

/// [`create_new_file`] for a name that holds this process's id (`<name>.<pid>.partial`): a file
/// an earlier process with the same id left there is removed first (a link as a link, never
/// followed), as no running process but this one writes under that name.
pub fn create_own_file(path: &Path, mode: u32) -> io::Result<File> {
    match create_new_file(path, mode) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(path)?;
            create_new_file(path, mode)
        }
        other => other,
    }
}

/// The process id in a partial file's name, `<name>.<pid>.partial` (for [`remove_leftovers`]).
pub fn partial_pid(name: &str) -> Option<u32> {
    let (_, pid) = name.strip_suffix(".partial")?.rsplit_once('.')?;
    pid.parse().ok()
}

/// Opens the log at `path` with `options`, refusing anything but a regular file without
/// blocking: the path is looked at first, and the open is non-blocking (a FIFO swapped in
/// between is refused by the opened file's own metadata).
pub fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    if let Ok(meta) = fs::metadata(path) {
        check_regular(&meta)?;
    }
    let file = options
        .custom_flags(flags(OFlags::NONBLOCK | OFlags::CLOEXEC))
        .open(path)?;
    check_regular(&file.metadata()?)?;
    Ok(file)
}

/// Refuses metadata that is not a regular file's.
pub fn check_regular(meta: &Metadata) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    let name = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "folder"
    } else if kind.is_fifo() {
        "FIFO (named pipe)"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else {
        "special file"
    };
    Err(refused(Refusal::NotARegularFile { kind: name }))
}

/// The end of `path`'s chain of links: the file a write to `path` reaches (`path` itself when
/// it is not a link, or is absent). A relative link is taken from its own folder.
pub fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    const HOPS_MAX: usize = 40;
    let mut at = path.to_path_buf();
    for _ in 0..HOPS_MAX {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&at)?;
                at = match at.parent() {
                    Some(parent) => parent.join(target),
                    None => target,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::from_raw_os_error(Errno::LOOP.raw_os_error()))
}

/// Replaces the file `path` with `bytes` atomically, at the end of its links (a symlinked log
/// stays a link to the replaced file): a new file beside the target, created exclusively with
/// the target's mode and given its owner, written and synced, renamed over the target, and the
/// folder synced. A crash leaves the old file or the new one, and at worst a leftover
/// `.<name>.tmp-<pid>-<hex>` that [`remove_leftovers`] removes. A missing file is created with
/// the mode a new file gets.
pub fn replace_file_keeping(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = resolve_links(path)?;
    let kept = match fs::metadata(&target) {
        Ok(meta) => Some(meta),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = target.with_file_name(format!(
        ".{name}{TMP_INFIX}{}-{:08x}",
        std::process::id(),
        crate::format::ids::random_u64() as u32
    ));
    let mode = kept.as_ref().map_or(0o666, |meta| meta.mode() & 0o7777);
    let result = (|| {
        let mut file = create_new_file(&temp, mode)?;
        if let Some(meta) = &kept {
            if (meta.uid(), meta.gid()) != (file.metadata()?.uid(), file.metadata()?.gid()) {
                // Only a privileged user may give a file away; others keep it as theirs.
                let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
            }
            // The umask may have narrowed the mode at creation: the target's is kept exactly.
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, &target)?;
        // The rename made durable: the folder synced.
        let folder = match target.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder,
            _ => Path::new("."),
        };
        File::open(folder)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// What [`replace_file_keeping`] adds to a file's name for its temporary file.
pub const TMP_INFIX: &str = ".tmp-";

/// How long a leftover must have been untouched before [`remove_leftovers`] removes it: a
/// process on another machine sharing the folder is never cut short while it writes.
pub const LEFTOVER_AGE_MIN: Duration = Duration::from_secs(60);

/// Whether process `pid` runs on this machine (as far as this process can tell).
fn process_runs(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // Signal 0 only checks that the process exists; EPERM says it does, as another user's.
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(error) => error == rustix::io::Errno::PERM,
    }
}

/// The process id in a leftover's `name` between `prefix` and the first `-` or `.` after it
/// (or the end), when `name` starts with `prefix`.
pub fn pid_after(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    let digits = rest.split(['-', '.']).next()?;
    digits.parse().ok()
}

/// Removes the entries of `folder` that `pid_of` names as a leftover of process `pid` (it
/// returns the pid from the name), when that process no longer runs here, the entry is this
/// user's, not a link, and untouched for [`LEFTOVER_AGE_MIN`]. Best effort: what cannot be
/// read or removed is left. Returns how many were removed.
pub fn remove_leftovers(folder: &Path, pid_of: impl Fn(&str) -> Option<u32>) -> usize {
    let Ok(entries) = fs::read_dir(folder) else {
        return 0;
    };
    let uid = effective_uid();
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(&pid_of) else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age >= LEFTOVER_AGE_MIN);
        if meta.file_type().is_symlink() || meta.uid() != uid || !old || process_runs(pid) {
            continue;
        }
        let gone = if meta.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed += usize::from(gone.is_ok());
    }
    removed
}

/// The folders [`remove_leftovers_once`] has looked at.
static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// [`remove_leftovers`] the first time this process asks for `folder`; nothing after that.
pub fn remove_leftovers_once(folder: &Path, pid_of: impl Fn(&str) -> Option<u32>) -> usize {
    if let Ok(mut swept) = SWEPT.lock() {
        if swept.iter().any(|done| done == folder) {
            return 0;
        }
        swept.push(folder.to_path_buf());
    }
    remove_leftovers(folder, pid_of)
}

/// The temporary folders this process holds, removed by [`remove_temp_dirs`] on a signal.
static TEMP_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A private temporary folder: `$TMPDIR/treelog-<kind>-<pid>-<16 random hex digits>`, created
/// exclusively with mode 0700, removed with what it holds when dropped (and by
/// [`remove_temp_dirs`]).
#[derive(Debug)]
pub struct PrivateTempDir {
    path: PathBuf,
}

impl PrivateTempDir {
    /// Creates one for `kind` (`demo`, `s3-verify`...), after removing the folders of the same
    /// kind that killed processes left ([`remove_leftovers`]).
    pub fn new(kind: &str) -> io::Result<PrivateTempDir> {
        const TRIES: usize = 16;
        let base = std::env::temp_dir();
        let prefix = format!("treelog-{kind}-");
        remove_leftovers(&base, |name| {
            pid_after(name, &prefix).filter(|_| name.len() > prefix.len())
        });
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..TRIES {
            let path = base.join(format!(
                "{prefix}{}-{:016x}",
                std::process::id(),
                crate::format::ids::random_u64()
            ));
            // `mkdir` is exclusive: a name taken by anything, a link included, fails.
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    if let Ok(mut held) = TEMP_DIRS.lock() {
                        held.push(path.clone());
                    }
                    return Ok(PrivateTempDir { path });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last = error,
                Err(error) => return Err(error),
            }
        }
        Err(last)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
        if let Ok(mut held) = TEMP_DIRS.lock() {
            held.retain(|path| path != &self.path);
        }
    }
}

/// Removes every temporary folder this process holds: for a front end's signal handler, run
/// before the process ends on SIGINT or SIGTERM (a drop never runs then).
pub fn remove_temp_dirs() {
    let held = match TEMP_DIRS.lock() {
        Ok(held) => held.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    for path in held {
        let _ = fs::remove_dir_all(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A derived file never gets a read or write bit its source lacks, and its owner can
    /// always read and write it; a folder gets search bits where it has read bits.
    #[test]
    fn derived_modes_are_masked_by_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("log");
        fs::write(&source, "").unwrap();
        for (source_mode, file_mode, folder_mode) in [
            (0o600, 0o600, 0o700),
            (0o644, 0o644, 0o755),
            (0o640, 0o640, 0o750),
            (0o400, 0o600, 0o700),
            (0o666, 0o666, 0o777),
        ] {
            fs::set_permissions(&source, fs::Permissions::from_mode(source_mode)).unwrap();
            assert_eq!(mode_derived_from(&source), file_mode, "{source_mode:o}");
            assert_eq!(dir_mode_for(file_mode), folder_mode, "{source_mode:o}");
        }
        assert_eq!(mode_for_derived(None), 0o600);
    }

    /// A leftover's process id is read from its name, and only names of the pattern count.
    #[test]
    fn pid_after_reads_the_pattern_only() {
        assert_eq!(
            pid_after("x.treelog.rebuild-123-abcd", "x.treelog.rebuild-"),
            Some(123)
        );
        assert_eq!(pid_after(".x.jsonl.pull-77", ".x.jsonl.pull-"), Some(77));
        assert_eq!(pid_after("x.treelog.rebuild-", "x.treelog.rebuild-"), None);
        assert_eq!(pid_after("y.treelog.rebuild-1", "x.treelog.rebuild-"), None);
    }
}
