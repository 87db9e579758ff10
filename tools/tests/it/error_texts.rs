//! What the `treelog` binary prints when the file system refuses it: a permission error says
//! "permission denied", names the file and what could not be done, and never the OS's text for a
//! misused descriptor (`Bad file descriptor (os error 9)`, which an append to a read-only log
//! printed) or the internal step (`lock: Permission denied`, which creating a log in a read-only
//! directory printed).
//!
//! Root ignores file permissions, so under root the binary runs as `nobody` through
//! `setpriv`; where that is impossible the test says why and checks nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The uid and gid of `nobody` on Debian and most Linux systems.
const NOBODY_ID: &str = "65534";

/// How to run the binary so that file permissions apply: directly, or through `setpriv` as
/// `nobody` when this is root. `Err` says why it cannot be done here.
fn unprivileged_runner() -> Result<Vec<String>, String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|error| format!("cannot run `id -u`: {error}"))?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Ok(Vec::new());
    }
    let runner: Vec<String> = [
        "setpriv",
        &format!("--reuid={NOBODY_ID}"),
        &format!("--regid={NOBODY_ID}"),
        "--clear-groups",
    ]
    .map(String::from)
    .into();
    let probe = Command::new(&runner[0])
        .args(&runner[1..])
        .arg(env!("CARGO_BIN_EXE_treelog"))
        .arg("--version")
        .output()
        .map_err(|error| format!("running as root and `setpriv` cannot be run: {error}"))?;
    if !probe.status.success() {
        return Err(format!(
            "running as root and `setpriv` cannot run treelog as nobody: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        ));
    }
    Ok(runner)
}

fn run(runner: &[String], args: &[&str], stdin: &str) -> Output {
    let mut command = match runner.split_first() {
        Some((program, rest)) => {
            let mut command = Command::new(program);
            command.args(rest).arg(env!("CARGO_BIN_EXE_treelog"));
            command
        }
        None => Command::new(env!("CARGO_BIN_EXE_treelog")),
    };
    treelog_testkit::process::output_with_stdin(command.args(args), stdin)
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/pi-sample-200.jsonl")
}

/// Appending to a read-only log, creating a log in a read-only directory, and reading an
/// unreadable log each exit 2 with one line naming the file, the step in words and
/// "permission denied"; the read-only log is left as it was.
#[test]
fn permission_errors_say_permission_denied() {
    let runner = match unprivileged_runner() {
        Ok(runner) => runner,
        Err(reason) => {
            println!("skipped: {reason} (root ignores file permissions)");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    set_mode(dir.path(), 0o755);
    let read_only = dir.path().join("read-only.jsonl");
    std::fs::copy(sample(), &read_only).expect("copy sample");
    set_mode(&read_only, 0o444);
    let before = std::fs::read(&read_only).expect("read log");
    let read_only_dir = dir.path().join("read-only-dir");
    std::fs::create_dir(&read_only_dir).expect("mkdir");
    set_mode(&read_only_dir, 0o555);
    let unreadable = dir.path().join("unreadable.jsonl");
    std::fs::copy(sample(), &unreadable).expect("copy sample");
    set_mode(&unreadable, 0o000);
    let new_log = read_only_dir.join("new.jsonl");
    let message = "{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}\n";
    let hint = "permission denied (check the permissions of the file and of its directory)";

    let cases: [(&[&str], &str, String); 3] = [
        (
            &["append", read_only.to_str().unwrap()],
            message,
            format!(
                "treelog: {}: cannot open the log for appending: {hint}\n",
                read_only.display()
            ),
        ),
        (
            &["append", new_log.to_str().unwrap()],
            message,
            format!(
                "treelog: {}: cannot create the log: {hint}\n",
                new_log.display()
            ),
        ),
        (
            &["info", unreadable.to_str().unwrap()],
            "",
            format!(
                "treelog: {}: cannot open the log: {hint}\n",
                unreadable.display()
            ),
        ),
    ];
    for (args, stdin, expected) in cases {
        let output = run(&runner, args, stdin);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr, expected, "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(std::fs::read(&read_only).expect("read log"), before);
    assert!(!new_log.exists());
}
