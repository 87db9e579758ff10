//! Fork a session into a new file: `cargo run --example fork_session`.
//!
//! Two ways, as pi offers them: `fork_from` copies every entry of a session into a new one
//! (pi's `--fork`, e.g. to continue it in another project), and `create_branched_session`
//! copies only the path from the root to one entry (pi's "fork from here"). Both new headers
//! name the source in `parentSession`; the source is never modified.
use treelog::{Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut source = Session::create(dir.path(), "/home/dev/project", SessionOptions::default())?;
    let question = source
        .append_message(r#"{"role":"user","content":"Try plan A.","timestamp":1735722000000}"#)?;
    source.append_message(
        r#"{"role":"user","content":"Plan A failed.","timestamp":1735722001000}"#,
    )?;
    source.branch(&question)?;
    source.append_message(
        r#"{"role":"user","content":"Plan B worked.","timestamp":1735722002000}"#,
    )?;
    source.append_label_change(&question, Some("start"))?;
    source.sync()?; // the copies read the log from disk
    println!("source: {} entries", source.entry_count()?);

    // Every entry, both branches, into a new session for another working directory.
    let other_project = dir.path().join("other-project");
    let copy = Session::fork_from(
        source.log_path(),
        "/home/dev/other-project",
        &other_project,
        SessionOptions::default(),
    )?;
    println!(
        "fork_from: {} entries in a new session {}",
        copy.entry_count()?,
        copy.session_id()
    );
    println!(
        "  its parentSession names the source: {}",
        copy.header().parent_session.is_some()
    );

    // Only the path to `question`: the new file holds the root-to-entry path and the labels
    // of the entries it copied.
    let branched_path = source.create_branched_session(&question)?;
    let branched = Session::open(&branched_path, SessionOptions::default())?;
    println!(
        "create_branched_session: {} entries; label kept: {:?}",
        branched.entry_count()?,
        branched
            .labels()?
            .into_iter()
            .map(|(_, label, _)| label)
            .collect::<Vec<_>>()
    );
    Ok(())
}
