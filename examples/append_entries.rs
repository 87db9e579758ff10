//! Append every kind of entry pi writes: `cargo run --example append_entries`.
//!
//! Each `append_*` writes one line at the end of the log, as a child of the session's leaf,
//! and returns the new entry's id (8 hex digits, as pi makes them). JSON arguments (messages,
//! usage, details) are stored byte for byte.
use treelog::{Durability, Session, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // `EveryAppend`: each append is fsynced before it returns (the safest, slowest policy;
    // `Batched(n)` and `None` trade durability on a machine crash for speed).
    let options = SessionOptions {
        durability: Durability::EveryAppend,
        ..Default::default()
    };
    let mut session = Session::create(dir.path(), "/home/dev/project", options)?;

    // The settings pi records when a conversation starts.
    session.append_model_change("anthropic", "claude-sonnet-4-5")?;
    session.append_thinking_level_change("medium")?;

    // Messages: a user turn, the assistant's tool call, the tool's result, the answer.
    session.append_message(
        r#"{"role":"user","content":"How many lines has src/main.rs?","timestamp":1735722000000}"#,
    )?;
    let call = session.append_message(
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"wc -l src/main.rs"}}],"provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"toolUse","timestamp":1735722001000}"#,
    )?;
    session.append_message(
        r#"{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"42 src/main.rs"}],"isError":false,"timestamp":1735722002000}"#,
    )?;
    let answer = session.append_message(
        r#"{"role":"assistant","content":[{"type":"text","text":"It has 42 lines."}],"provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"stop","timestamp":1735722003000}"#,
    )?;

    // What the calls cost, outside the context (pi 1.6).
    let usage = r#"{"input":120,"output":30,"cacheRead":0,"cacheWrite":0,"totalTokens":150,"cost":{"input":0.0004,"output":0.0005,"cacheRead":0,"cacheWrite":0,"total":0.0009}}"#;
    session.append_usage("turn", "anthropic", "claude-sonnet-4-5", usage, None)?;

    // Extension state (never in the context) and an extension's message (in the context).
    session.append_custom_entry("todo-list", Some(r#"{"open":["add tests"]}"#))?;
    session.append_custom_message_entry(
        "reminder",
        r#""Run the tests before committing.""#,
        true,
        None,
    )?;

    // A name for the session list, and a label on an entry (a bookmark in pi's tree view).
    session.append_session_info("Count lines")?;
    session.append_label_change(&answer, Some("answer"))?;

    // A context edit (pi 1.6) replaces an earlier entry's content in the context only: the
    // tool call stays in the log as it was.
    session.append_context_edit(&call, Some(r#"{"content":"(tool call elided)"}"#))?;

    // A compaction: a summary replaces what came before it in the context; entries from
    // `first_kept_entry_id` on are kept.
    session.append_compaction(
        "The user asked for the line count of src/main.rs: 42.",
        Some(&answer),
        "1500",
        None,
        None,
        None,
    )?;

    // A branch summary: leave the current branch for an earlier entry, leaving a summary of
    // what the abandoned branch did.
    session.branch_with_summary(
        Some(&answer),
        "Tried counting with awk instead; same result.",
        None,
        None,
        None,
    )?;

    // Every entry, in log order, with its kind.
    for entry in session.entries()? {
        let entry = entry?;
        println!(
            "{}  {:<22} parent {}",
            entry.id,
            entry.type_name(),
            entry.parent_id.as_deref().unwrap_or("(root)")
        );
    }
    println!(
        "{} entries; the context holds {} messages",
        session.entry_count()?,
        session.build_context(None)?.messages.len()
    );
    Ok(())
}
