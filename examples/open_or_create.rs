//! Open or create a session: `cargo run --example open_or_create`.
//!
//! A session is a JSONL log (the file pi reads and writes) plus a sidecar index beside it
//! (`<log>.treelog`), which treelog creates, checks and updates on its own.
use treelog::{IndexState, Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sessions = tempfile::tempdir()?; // stands for ~/.pi/agent/sessions/<project>/

    // `create` picks pi's file name (`<timestamp>_<uuid>.jsonl`); the file itself is written
    // by the first append, so a session nobody writes to leaves no file behind.
    let mut session = Session::create(
        sessions.path(),
        "/home/dev/project",
        SessionOptions::default(),
    )?;
    let path = session.log_path().to_path_buf();
    println!(
        "created {} (on disk yet: {})",
        file_name(&path),
        path.exists()
    );
    session.append_message(r#"{"role":"user","content":"Hello!","timestamp":1735722000000}"#)?;
    println!("after the first append, on disk: {}", path.exists());
    session.close()?; // fsyncs the log (per the durability policy) and writes the index

    // `open` reads the index the last open left, checks it against the log, and catches it
    // up if another program (pi itself) appended since.
    let session = Session::open(&path, SessionOptions::default())?;
    println!(
        "opened session {} with {} entry, index {}",
        session.session_id(),
        session.entry_count()?,
        describe(session.index_state())
    );
    println!(
        "sidecar beside the log: {}",
        treelog::sidecar_path(&path).exists()
    );
    drop(session);
    let again = Session::open(&path, SessionOptions::default())?;
    println!("opened again: index {}", describe(again.index_state()));

    // Opening a path where no file exists gives a new, empty session bound to that path, as
    // pi's `SessionManager.open` does.
    let fresh = Session::open(
        &sessions.path().join("new.jsonl"),
        SessionOptions::default(),
    )?;
    println!(
        "a missing file opens as an empty session: {} entries",
        fresh.entry_count()?
    );

    // `continue_recent` reopens the newest session of a directory for this working directory,
    // or creates one (pi's `--continue`).
    let recent = Session::continue_recent(
        sessions.path(),
        "/home/dev/project",
        SessionOptions::default(),
    )?;
    println!("continue_recent picked {}", file_name(recent.log_path()));
    Ok(())
}

/// The index state in words: what the open did with the sidecar.
fn describe(state: &IndexState) -> String {
    match state {
        IndexState::Fresh => "fresh (it covered the whole log)".into(),
        IndexState::CaughtUp { lines, .. } => format!("caught up ({lines} new lines read)"),
        IndexState::Rebuilt { reason, .. } => format!("built from the log ({reason})"),
        IndexState::Unindexed { reason, .. } => format!("not used ({reason})"),
    }
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}
