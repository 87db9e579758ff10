//! What a killed rebuild left (`<sidecar>.rebuild-<pid>-<hex>`) stayed forever, and
//! `repair --apply` replaced a symlinked log with a regular file at the default mode (0644 for a
//! 0600 log) while the link's target stayed unrepaired. Found by killing processes mid-write and
//! by repairing logs kept behind links. Now the next rebuild in the folder removes a dead
//! process's leftovers (never a running one's), and a replaced log is replaced at the end of its
//! links with its mode.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::time::{Duration, SystemTime};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;
const ENTRY: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;

/// The id of a process that has ended.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A file at `path`, last modified `age` ago.
fn old_file(path: &Path, age: Duration) {
    fs::write(path, "left behind").unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

/// A rebuild removes a dead process's old `.rebuild-*` file beside the sidecar, and keeps a
/// running process's, and one written moments ago.
#[test]
fn rebuild_removes_dead_leftovers_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.jsonl");
    fs::write(&log, format!("{HEADER}\n{ENTRY}\n")).unwrap();
    let sidecar = treelog::sidecar_path(&log);
    let name = |pid: u32| format!("{}.rebuild-{pid}-0000abcd", sidecar.display());
    let dead = name(dead_pid());
    let running = name(std::process::id());
    let fresh = format!("{}.rebuild-{}-0000beef", sidecar.display(), dead_pid());
    old_file(Path::new(&dead), Duration::from_secs(600));
    old_file(Path::new(&running), Duration::from_secs(600));
    old_file(Path::new(&fresh), Duration::ZERO);
    treelog::Session::open(&log, Default::default())
        .unwrap()
        .close()
        .unwrap();
    assert!(sidecar.exists(), "the open built the index");
    assert!(
        !Path::new(&dead).exists(),
        "a dead process's leftover stayed"
    );
    assert!(
        Path::new(&running).exists(),
        "a running process's file was removed"
    );
    assert!(
        Path::new(&fresh).exists(),
        "a file written moments ago was removed"
    );
}

/// `repair --apply` of a symlinked 0600 log repairs the target, keeps the link a link and the
/// target's mode; the backup is no more readable than the log.
#[test]
fn repair_goes_through_a_symlinked_log_and_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.jsonl");
    let link = dir.path().join("link.jsonl");
    // The header further down: the repair moves it up.
    fs::write(&real, format!("{ENTRY}\n{HEADER}\n")).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
    symlink(&real, &link).unwrap();
    let outcome = treelog::repair::repair_file(&link, true, "/w").unwrap();
    assert!(!outcome.plan.is_empty());
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_link(&link).unwrap(), real);
    assert_eq!(
        fs::read_to_string(&real).unwrap(),
        format!("{HEADER}\n{ENTRY}\n")
    );
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&real), 0o600);
    assert_eq!(mode(&outcome.backup.unwrap()), 0o600);
}
