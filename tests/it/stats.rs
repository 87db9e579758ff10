//! `Session::size_stats`: where a session's bytes are, checked on a session built here whose
//! every line's size is known: an extension's large custom entries, a tool result with an
//! image, a user's `!` command, and a branch left behind.

use treelog::stats::{BASH_EXECUTION_KEY, Tally};
use treelog::{Session, SessionOptions};

/// Line bytes of the entries named, read back from the log.
fn line_bytes(session: &Session, ids: &[&str]) -> u64 {
    ids.iter()
        .map(|id| session.entry(id).unwrap().unwrap().json.len() as u64)
        .sum()
}

/// Every split adds up to what the log holds, and each extension, tool and image is found.
#[test]
fn splits_by_type_role_tool_extension_and_images() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/w", SessionOptions::default()).unwrap();
    let user = session
        .append_message(r#"{"role":"user","content":"look","timestamp":1}"#)
        .unwrap();
    let blob = "x".repeat(50_000);
    let custom_a = session
        .append_custom_entry("kendex/state", Some(&format!(r#"{{"blob":"{blob}"}}"#)))
        .unwrap();
    let custom_b = session
        .append_custom_entry("kendex/state", Some(r#"{"small":1}"#))
        .unwrap();
    let image = "A".repeat(3_000);
    let tool = session
        .append_message(&format!(
            r#"{{"role":"toolResult","toolCallId":"c1","toolName":"screenshot","content":[{{"type":"text","text":"shot"}},{{"type":"image","data":"{image}","mimeType":"image/png"}}],"isError":false,"timestamp":2}}"#
        ))
        .unwrap();
    let bash = session
        .append_message(r#"{"role":"bashExecution","command":"ls","output":"a b","exitCode":0,"cancelled":false,"truncated":false,"timestamp":3}"#)
        .unwrap();
    // A branch off the first message: the entries above stay in the log, off the active path.
    session.branch(&user).unwrap();
    let answer = session
        .append_message(
            r#"{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":4}"#,
        )
        .unwrap();
    session.sync().unwrap();

    let stats = session.size_stats().unwrap();
    let custom = Tally {
        count: 2,
        bytes: line_bytes(&session, &[&custom_a, &custom_b]),
    };
    assert_eq!(stats.by_custom_type["kendex/state"], custom);
    assert_eq!(stats.by_type["custom"], custom);
    assert_eq!(
        stats.by_tool["screenshot"].bytes,
        line_bytes(&session, &[&tool])
    );
    assert_eq!(stats.by_tool[BASH_EXECUTION_KEY].count, 1);
    assert_eq!(
        stats.by_role["bashExecution"].bytes,
        line_bytes(&session, &[&bash])
    );
    assert_eq!(
        stats.images,
        Tally {
            count: 1,
            bytes: 3_000
        }
    );
    assert_eq!(stats.lines.count, 6);
    let all = line_bytes(
        &session,
        &[&user, &custom_a, &custom_b, &tool, &bash, &answer],
    );
    assert_eq!(stats.lines.bytes, all);
    let by_type: u64 = stats.by_type.values().map(|tally| tally.bytes).sum();
    assert_eq!(by_type, all, "the types split every line");
    assert_eq!(stats.largest[0].id, custom_a);
    assert_eq!(stats.largest[0].detail.as_deref(), Some("kendex/state"));
    let path = line_bytes(&session, &[&user, &answer]);
    assert_eq!(
        stats.active_path,
        Tally {
            count: 2,
            bytes: path
        }
    );
    assert_eq!(
        stats.context,
        Tally {
            count: 2,
            bytes: path
        }
    );
    assert!(
        stats.log_bytes > all,
        "the log holds the header and newlines too"
    );
}

/// The index keeps the tool, extension and image tallies as it indexes: the stats a handle
/// gives from its unwritten lines, from the committed index after a reopen, after two handles
/// took turns appending (each catching up on the other's lines before it wrote), and from an
/// index rebuilt from the log are the same.
#[test]
fn tallies_agree_however_the_index_was_built() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Session::create(dir.path(), "/w", SessionOptions::default()).unwrap();
    let log = first.log_path().to_path_buf();
    let append_turn = |session: &mut Session, n: usize| {
        session
            .append_message(&format!(
                r#"{{"role":"toolResult","toolCallId":"c{n}","toolName":"tool{}","content":[{{"type":"image","data":"{}"}}],"isError":false,"timestamp":{n}}}"#,
                n % 3,
                "B".repeat(n)
            ))
            .unwrap();
        session
            .append_custom_entry(&format!("ext/{}", n % 2), Some(r#"{"n":1}"#))
            .unwrap();
        session
            .append_message(&format!(r#"{{"role":"weird{}","timestamp":{n}}}"#, n % 2))
            .unwrap();
    };
    for n in 0..5 {
        append_turn(&mut first, n);
    }
    let unwritten = first.size_stats().unwrap();
    first.sync().unwrap();
    let mut second = Session::open(&log, SessionOptions::default()).unwrap();
    assert_eq!(second.size_stats().unwrap(), unwritten, "committed");
    for n in 5..8 {
        append_turn(&mut first, n);
    }
    first.sync().unwrap();
    second.refresh().unwrap();
    for n in 8..12 {
        append_turn(&mut second, n);
    }
    second.sync().unwrap();
    first.refresh().unwrap();
    let taken_turns = first.size_stats().unwrap();
    assert_eq!(second.size_stats().unwrap(), taken_turns);
    assert_eq!(taken_turns.by_tool.len(), 3);
    assert_eq!(taken_turns.by_custom_type.len(), 2);
    assert_eq!(taken_turns.by_role["weird1"].count, 6);
    assert_eq!(
        taken_turns.images,
        Tally {
            count: 12,
            bytes: (0..12).sum::<u64>()
        }
    );
    drop((first, second));
    let reopened = Session::open(&log, SessionOptions::default()).unwrap();
    assert_eq!(reopened.size_stats().unwrap(), taken_turns, "reopened");
    drop(reopened);
    std::fs::remove_file(format!("{}.treelog", log.display())).unwrap();
    let rebuilt = Session::open(&log, SessionOptions::default()).unwrap();
    assert_eq!(rebuilt.size_stats().unwrap(), taken_turns, "rebuilt");
}
