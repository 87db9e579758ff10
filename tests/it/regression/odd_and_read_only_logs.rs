//! A FIFO given as a log made `verify` (and any open) wait forever for a writer, and every open
//! asked for append access, so a log on a read-only file system could not be read at all, even
//! with index writes off. Found by trying the CLI on odd files. Now only a regular file is read
//! as a log, refused without blocking, and a log is opened for reading until its first append.

use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

const LOG: &str = concat!(
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    "\n",
    r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
    "\n"
);

/// Runs `work` on a thread and gives its answer, or fails the test after a second.
fn within_a_second<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(work());
    });
    receiver
        .recv_timeout(Duration::from_secs(1))
        .expect("the call blocked on the FIFO")
}

/// A FIFO is refused by an open and by `verify`, at once, with an error naming it.
#[test]
fn fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let path = fifo.clone();
    let opened = within_a_second(move || {
        treelog::Session::open(&path, Default::default())
            .err()
            .map(|e| e.to_string())
    });
    let message = opened.expect("a FIFO opened as a log");
    assert!(
        message.contains("pipe.jsonl") && message.contains("FIFO"),
        "{message}"
    );
    let path = fifo.clone();
    let verified =
        within_a_second(move || treelog::verify::verify_log(&path, true).map(|_| ()).err());
    let message = verified.expect("a FIFO verified as a log").to_string();
    assert!(
        message.contains("pipe.jsonl") && message.contains("FIFO"),
        "{message}"
    );
}

/// The access mode of this process's descriptors open on `path`, read from /proc.
fn access_modes(path: &Path) -> Vec<u32> {
    let path = fs::canonicalize(path).unwrap();
    let mut modes = Vec::new();
    for entry in fs::read_dir("/proc/self/fd").unwrap().flatten() {
        if fs::read_link(entry.path()).ok().as_deref() != Some(path.as_path()) {
            continue;
        }
        let info = fs::read_to_string(Path::new("/proc/self/fdinfo").join(entry.file_name()));
        let Ok(info) = info else { continue };
        let flags = info
            .lines()
            .find_map(|line| line.strip_prefix("flags:"))
            .map(|flags| u32::from_str_radix(flags.trim(), 8).unwrap())
            .unwrap();
        modes.push(flags & 0o3);
    }
    modes
}

/// Opening a log to read it, with index writes on or off, asks for no write access (`O_RDONLY`),
/// so a log on a read-only file system or one this user may not write is read.
#[test]
fn reading_a_log_asks_for_no_write_access() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.jsonl");
    fs::write(&log, LOG).unwrap();
    for index_write in [true, false] {
        let options = treelog::SessionOptions {
            index_write,
            ..Default::default()
        };
        let session = treelog::Session::open(&log, options).unwrap();
        assert_eq!(session.path_ids(None).unwrap().len(), 1);
        let modes = access_modes(&log);
        assert!(!modes.is_empty(), "the log is not held open");
        assert!(
            modes.iter().all(|&mode| mode == 0),
            "open for writing: {modes:?}"
        );
        session.close().unwrap();
    }
}
