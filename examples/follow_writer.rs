//! Follow another writer's appends: `cargo run --example follow_writer`.
//!
//! Two handles (two processes, say pi and a tool of yours) may hold the same log. Each append
//! takes a short lock, so lines never interleave; a handle that has not seen the other's
//! appends would start a sibling branch without knowing it, so its append is refused
//! (`Error::Conflict`) until it refreshes, or follows the new tip by policy.
use treelog::{Error, OnConflict, Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("shared.jsonl");
    let mut ours = Session::open(&path, SessionOptions::default())?;
    ours.append_message(&user("First, from us."))?;
    ours.sync()?;

    // Another writer opens the same log and appends after our entry.
    let mut theirs = Session::open(&path, SessionOptions::default())?;
    let their_id = theirs.append_message(&user("Second, from them."))?;
    theirs.sync()?;

    // Our handle still has our entry as its leaf: appending there would fork the conversation.
    match ours.append_message(&user("Third, from us.")) {
        Err(Error::Conflict { their_id: seen, .. }) => {
            println!("refused: they appended {seen} after our leaf")
        }
        Err(other) => return Err(other.into()),
        Ok(id) => println!("unexpected: appended {id}"),
    }

    // `refresh` reads what others appended; a handle that was at the log's leaf follows it.
    ours.refresh()?;
    println!(
        "after refresh our leaf is theirs: {}",
        ours.leaf_id()?.as_deref() == Some(their_id.as_str())
    );
    let third = ours.append_message(&user("Third, from us."))?;
    println!("appended {third} after {their_id}");

    // Or let appends follow the tip on their own: `OnConflict::FollowTip`.
    let options = SessionOptions {
        on_conflict: OnConflict::FollowTip,
        ..Default::default()
    };
    let mut follower = Session::open(&path, options)?;
    theirs.refresh()?;
    let fourth = theirs.append_message(&user("Fourth, from them."))?;
    theirs.sync()?;
    let fifth = follower.append_message(&user("Fifth, from the follower."))?;
    let parent = follower.entry(&fifth)?.and_then(|entry| entry.parent_id);
    println!(
        "the follower's entry {fifth} went after {}: {}",
        parent.as_deref().unwrap_or("?"),
        parent.as_deref() == Some(fourth.as_str())
    );
    println!("path: {:?}", follower.path_ids(None)?);
    Ok(())
}

fn user(text: &str) -> String {
    format!(
        r#"{{"role":"user","content":{},"timestamp":1735722000000}}"#,
        serde_json::json!(text)
    )
}
