//! Build the context an agent sends to the model: `cargo run --example build_context`.
//!
//! `build_context` returns what pi 1.6's `buildSessionContext()` returns for the leaf: the
//! messages from the root (or from the latest compaction) to the leaf, with context edits
//! applied, and the model and thinking level in force. With the index it reads only those
//! entries, whatever the size of the history.
use treelog::{Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = Session::create(dir.path(), "/home/dev/project", SessionOptions::default())?;
    session.append_model_change("anthropic", "claude-sonnet-4-5")?;
    session.append_thinking_level_change("high")?;
    session.append_message(&message("user", "Read the README and summarise it."))?;
    let long_answer = session.append_message(&message("assistant", "A very long summary..."))?;

    let context = session.build_context(None)?;
    println!(
        "before compaction: {} messages, model {}, thinking {}",
        context.messages.len(),
        context.model.as_ref().map_or("none", |model| model.get()),
        context.thinking_level.get()
    );

    // A compaction replaces what came before `first_kept_entry_id` with its summary: the
    // context then starts with the summary (a `compactionSummary` message).
    session.append_compaction(
        "The user asked for a summary of the README; it was given.",
        Some(&long_answer),
        "20000",
        None,
        None,
        None,
    )?;
    session.append_message(&message("user", "Now list the open issues."))?;
    let context = session.build_context(None)?;
    println!("after compaction: {} messages", context.messages.len());
    for message in &context.messages {
        let value: serde_json::Value = serde_json::from_str(message.get())?;
        println!("  {}", value["role"].as_str().unwrap_or("?"));
    }

    // The whole answer as one JSON document, the same bytes pi's function would give.
    let json = context.to_json();
    println!(
        "to_json: {} bytes, starts {}",
        json.len(),
        &json[..json.len().min(40)]
    );

    // The context of any entry, not only the leaf's: where a branch would start from.
    let earlier = session.build_context(Some(&long_answer))?;
    println!(
        "context at {long_answer}: {} messages",
        earlier.messages.len()
    );
    Ok(())
}

fn message(role: &str, text: &str) -> String {
    let content = if role == "user" {
        serde_json::json!(text)
    } else {
        serde_json::json!([{ "type": "text", "text": text }])
    };
    let mut message =
        serde_json::json!({ "role": role, "content": content, "timestamp": 1735722000000u64 });
    if role == "assistant" {
        message["provider"] = "anthropic".into();
        message["model"] = "claude-sonnet-4-5".into();
        message["stopReason"] = "stop".into();
    }
    message.to_string()
}
