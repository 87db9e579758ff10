//! The CLI on files and folders someone else prepared: a FIFO given as a log, a log on a
//! read-only file system, a signal while `demo` holds its scratch folder. Each case is built by
//! the test; each failed before treelog checked what it opens and where it writes
//! (`treelog::fs_safe`).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

const LOG: &str = concat!(
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    "\n",
    r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
    "\n"
);

fn treelog() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_treelog"));
    command.env("PI_CODING_AGENT_DIR", "/nonexistent-treelog-test");
    command
}

/// Waits for `child` at most `limit`; kills it and fails the test when it runs longer.
fn wait_at_most(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every command given a FIFO as a log ends within a second with an error naming it (exit 2),
/// instead of waiting for a writer.
#[test]
fn fifo_as_a_log_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for command in ["verify", "info", "context", "tree", "search"] {
        let mut args = vec![command];
        if command == "search" {
            args.push("hi");
        }
        let mut child = treelog()
            .args(&args)
            .arg(&fifo)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_at_most(&mut child, Duration::from_secs(1), command);
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("pipe.jsonl"), "{command}: {stderr}");
    }
}

/// A log on a read-only file system (a tmpfs remounted read-only in a mount namespace of its
/// own, which even root cannot write) is read with `--no-index-write`, and without it the
/// command answers from the log and says in one line on stderr that no index was written.
#[test]
fn log_on_a_read_only_file_system_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a.jsonl");
    fs::write(&source, LOG).unwrap();
    let mount = dir.path().join("ro");
    fs::create_dir(&mount).unwrap();
    let bin = env!("CARGO_BIN_EXE_treelog");
    let script = format!(
        "set -e; mount -t tmpfs none '{m}'; cp '{s}' '{m}/a.jsonl'; mount -o remount,ro '{m}'; \
         if touch '{m}/probe' 2>/dev/null; then echo writable; exit 9; fi; \
         '{bin}' info --no-index-write '{m}/a.jsonl' >'{d}/quiet.out' 2>'{d}/quiet.err'; \
         '{bin}' info '{m}/a.jsonl' >'{d}/loud.out' 2>'{d}/loud.err'",
        m = mount.display(),
        s = source.display(),
        d = dir.path().display(),
    );
    let output: Output = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env("PI_CODING_AGENT_DIR", "/nonexistent-treelog-test")
        .output()
        .expect("run unshare");
    let read = |name: &str| fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    assert!(
        output.status.success(),
        "{}{}\nquiet: {}\nloud: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        read("quiet.err"),
        read("loud.err")
    );
    for out in ["quiet.out", "loud.out"] {
        assert!(read(out).contains("s1"), "{out}: {}", read(out));
    }
    assert_eq!(read("quiet.err"), "");
    let loud = read("loud.err");
    assert_eq!(loud.lines().count(), 1, "{loud}");
    assert!(
        loud.contains("read-only") && loud.contains("reading the log into memory"),
        "{loud}"
    );
}

/// The `treelog-demo-*` folders in `tmp`.
fn demo_dirs(tmp: &Path) -> Vec<PathBuf> {
    fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("treelog-demo-"))
        })
        .collect()
}

/// `demo`'s scratch folder is private (0700), and SIGINT or SIGTERM removes it before the
/// process ends by that signal.
#[test]
fn demo_scratch_folder_is_private_and_removed_on_signals() {
    for signal in ["TERM", "INT"] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = treelog()
            .args(["demo", "--entries", "300000"])
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let scratch = loop {
            if let Some(found) = demo_dirs(tmp.path()).pop() {
                break found;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no scratch folder"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let mode = fs::symlink_metadata(&scratch).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", scratch.display());
        // Let the demo write in it, then signal it.
        std::thread::sleep(Duration::from_millis(300));
        let killed = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = wait_at_most(&mut child, Duration::from_secs(20), "demo");
        assert!(!status.success(), "SIG{signal}: the demo finished first");
        assert_eq!(demo_dirs(tmp.path()), Vec::<PathBuf>::new(), "SIG{signal}");
    }
}
