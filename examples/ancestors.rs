//! Ancestor queries: `cargo run --example ancestors`.
//!
//! With the index, each query costs O(log depth) (jump pointers), not a walk of the branch:
//! what a UI needs to diff two branches or to check that an entry is on the current path.
use treelog::{Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = Session::create(dir.path(), "/home/dev/project", SessionOptions::default())?;
    // root - a1 - a2 - a3      (branch A)
    //          \
    //           b2 - b3        (branch B, from a1)
    let root = session.append_message(&user("root"))?;
    let a1 = session.append_message(&user("a1"))?;
    let a2 = session.append_message(&user("a2"))?;
    let a3 = session.append_message(&user("a3"))?;
    session.branch(&a1)?;
    let b2 = session.append_message(&user("b2"))?;
    let b3 = session.append_message(&user("b3"))?;
    let name = |id: &str| -> &str {
        [
            (&root, "root"),
            (&a1, "a1"),
            (&a2, "a2"),
            (&a3, "a3"),
            (&b2, "b2"),
            (&b3, "b3"),
        ]
        .into_iter()
        .find(|(known, _)| known.as_str() == id)
        .map_or("?", |(_, name)| name)
    };

    println!(
        "a1 is an ancestor of b3: {}",
        session.is_ancestor(&a1, &b3)?
    );
    println!(
        "a2 is an ancestor of b3: {}",
        session.is_ancestor(&a2, &b3)?
    );
    let fork = session.common_ancestor(&a3, &b3)?;
    println!(
        "branch point of a3 and b3: {}",
        fork.as_deref().map_or("none", name)
    );
    let (only_a, only_b) = session.branch_difference(&a3, &b3)?;
    let names = |ids: &[String]| ids.iter().map(|id| name(id)).collect::<Vec<_>>().join(" ");
    println!(
        "only on A: {}; only on B: {}",
        names(&only_a),
        names(&only_b)
    );
    println!("path to b3: {}", names(&session.path_ids(Some(&b3))?));
    Ok(())
}

fn user(text: &str) -> String {
    format!(
        r#"{{"role":"user","content":{},"timestamp":1735722000000}}"#,
        serde_json::json!(text)
    )
}
