//! Branch and reset: `cargo run --example branch_and_reset`.
//!
//! A session is a tree: every entry names its parent, and the leaf is where the next append
//! goes. Moving the leaf back to an earlier entry and appending starts a sibling branch (pi's
//! `/tree` and "edit an earlier message"); nothing is ever deleted.
use treelog::{Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = Session::create(dir.path(), "/home/dev/project", SessionOptions::default())?;
    let question = session.append_message(&user("Write a haiku about logs."))?;
    let first_try = session.append_message(&assistant("Lines fall like leaves..."))?;

    // `branch` moves the leaf (in memory only: the log records the branch when the next
    // entry names its parent). The next append is a second child of `question`.
    session.branch(&question)?;
    let second_try = session.append_message(&assistant("Append-only rain..."))?;
    let children: Vec<String> = session
        .children(&question)?
        .into_iter()
        .map(|entry| entry.id)
        .collect();
    println!(
        "the question has {} answers: {} (the second is {second_try})",
        children.len(),
        children.join(", ")
    );

    // The leaf decides what the path and the context hold: only the current branch.
    println!(
        "leaf {} with path {:?}",
        session.leaf_id()?.unwrap_or_default(),
        session.path_ids(None)?
    );
    session.branch(&first_try)?;
    println!(
        "leaf {} with path {:?}",
        session.leaf_id()?.unwrap_or_default(),
        session.path_ids(None)?
    );

    // `reset_leaf`: the next append starts a new root (a second conversation in the file).
    session.reset_leaf();
    let new_root = session.append_message(&user("Something else entirely."))?;
    println!("new root {new_root}: path {:?}", session.path_ids(None)?);

    // The whole tree, depth-first, children in pi's order (`treelog tree` draws this).
    for node in session.tree()? {
        let node = node?;
        println!(
            "{}{} ({})",
            "  ".repeat(node.depth as usize),
            node.id,
            node.kind.as_str()
        );
    }
    Ok(())
}

fn user(text: &str) -> String {
    format!(
        r#"{{"role":"user","content":{},"timestamp":1735722000000}}"#,
        serde_json::json!(text)
    )
}

fn assistant(text: &str) -> String {
    format!(
        r#"{{"role":"assistant","content":[{{"type":"text","text":{}}}],"provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"stop","timestamp":1735722001000}}"#,
        serde_json::json!(text)
    )
}
