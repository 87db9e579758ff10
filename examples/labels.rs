//! Labels: `cargo run --example labels`.
//!
//! A label is a bookmark on an entry (pi's tree view shows it). Setting, changing or clearing
//! one appends a `label` entry: the log stays append-only, the last label entry for a target
//! wins, and the index answers the current label without reading the log.
use treelog::{Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = Session::create(dir.path(), "/home/dev/project", SessionOptions::default())?;
    let plan = session.append_message(
        r#"{"role":"user","content":"Plan the refactor.","timestamp":1735722000000}"#,
    )?;
    let done = session
        .append_message(r#"{"role":"user","content":"Ship it.","timestamp":1735722001000}"#)?;

    session.append_label_change(&plan, Some("plan"))?;
    session.append_label_change(&done, Some("release"))?;
    session.append_label_change(&plan, Some("plan v2"))?; // a later label replaces the earlier one
    println!("label of {plan}: {}", shown(session.label(&plan)?));

    // Clearing: `None` (or an empty label).
    session.append_label_change(&done, None)?;
    println!(
        "label of {done} after clearing: {}",
        shown(session.label(&done)?)
    );

    // Every labelled entry: (entry id, label, when it was set).
    for (id, label, timestamp) in session.labels()? {
        println!("{id} is labelled {label:?} (since {timestamp})");
    }

    // A label must name an entry that exists: an unknown id is refused and nothing is written.
    match session.append_label_change("0badc0de", Some("nowhere")) {
        Ok(_) => println!("unexpected: the label was written"),
        Err(error) => println!("refused: {error}"),
    }
    Ok(())
}

/// A label as the user sees it.
fn shown(label: Option<String>) -> String {
    label.unwrap_or_else(|| "(none)".into())
}
