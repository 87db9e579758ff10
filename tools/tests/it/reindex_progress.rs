//! The `reindex` progress bar: on a terminal it moves with the bytes indexed within one file (not
//! only when a file is done), with throughput and time left, and names its last phase (checking the
//! index, which reads no log bytes); `--quiet` draws none; in a pipe nothing is drawn. The terminal
//! is `script`'s pseudo-terminal; where `script` cannot run, the terminal cases say why and check
//! nothing.

use std::process::Command;

fn treelog() -> &'static str {
    env!("CARGO_BIN_EXE_treelog")
}

/// Runs `treelog ARGS` on a pseudo-terminal, returning what it drew, or why it cannot.
fn on_terminal(args: &str) -> Result<String, String> {
    let output = Command::new("script")
        .args(["-qec", &format!("{} {args}", treelog()), "/dev/null"])
        .output()
        .map_err(|error| format!("`script` cannot be run: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "`script` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The positions the bar showed, in bytes as drawn ("3.00 MiB/7.41 MiB" gives "3.00 MiB").
fn positions(drawn: &str) -> Vec<String> {
    drawn
        .split(['\r', '\n'])
        .filter(|frame| frame.contains("ETA"))
        .filter_map(|frame| {
            let at = frame.find('/')?;
            let start = frame[..at].rfind(' ').map_or(0, |space| {
                frame[..space].rfind(' ').map_or(0, |before| before + 1)
            });
            Some(frame[start..at].trim().to_string())
        })
        .collect()
}

/// A rebuild of one multi-chunk log draws the bar at several positions before the end, each
/// with a throughput and a time left, then says it is checking the index; `--quiet` draws
/// nothing; a pipe gets no bar.
#[test]
fn progress_bar_moves_within_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.jsonl");
    crate::synth::generate(&log, 24_000, 1);
    let len = std::fs::metadata(&log).unwrap().len();
    assert!(len > 4 * 1024 * 1024, "{len} bytes: several chunks");
    let path = log.to_str().unwrap();

    let piped = Command::new(treelog())
        .args(["reindex", "--force", path])
        .output()
        .unwrap();
    let piped_stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(!piped_stderr.contains("ETA") && !piped_stderr.contains("checking the index"));

    let drawn = match on_terminal(&format!("reindex --force {path}")) {
        Ok(drawn) => drawn,
        Err(reason) => {
            println!("skipped the terminal cases: {reason}");
            return;
        }
    };
    let shown: std::collections::BTreeSet<String> = positions(&drawn)
        .into_iter()
        .filter(|position| position != "0 B")
        .collect();
    assert!(
        shown.len() >= 2,
        "the bar moved only to {shown:?} within one file:\n{drawn}"
    );
    assert!(drawn.contains("/s, ETA "), "{drawn}");
    // The last phase, the whole-index check, reads no log bytes: the bar says what it does.
    assert!(drawn.contains("0/1 files, checking the index"), "{drawn}");

    let quiet = on_terminal(&format!("reindex --force --quiet {path}")).unwrap();
    assert!(!quiet.contains("ETA"), "{quiet}");
    assert!(quiet.contains("rebuilt"), "{quiet}");
}
