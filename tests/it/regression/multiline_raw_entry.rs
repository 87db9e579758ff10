//! Regression (found by tests/it/faults.rs once its scripts used `append_many`): a `NewEntry`
//! whose raw JSON payload held a line break between tokens (legal JSON, and `NewEntry` is
//! public) was written as it was, splitting the entry into two broken lines: the log kept two
//! opaque lines for good and the append failed with `LogChanged` ("the appended entry was not
//! found when the log was read back"). `append_message` flattened line breaks; `append` and
//! `append_many` did not. The encoder now turns them into spaces, as `single_line_raw` does.

use serde_json::value::RawValue;
use treelog::{NewEntry, Session, SessionOptions};

#[test]
fn raw_payload_with_line_breaks_stays_one_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("multiline.jsonl");
    let mut session = Session::open(&path, SessionOptions::default()).expect("open");
    let message = RawValue::from_string(
        "{\"role\":\"user\",\r\n\"content\":\"a\\nb\",\n\"timestamp\":1}".into(),
    )
    .expect("valid JSON");
    let ids = session
        .append_many(vec![
            NewEntry::Message {
                message: message.clone(),
            },
            NewEntry::Message { message },
        ])
        .expect("append_many");
    assert_eq!(ids.len(), 2);
    drop(session);

    let log = std::fs::read_to_string(&path).expect("read log");
    assert_eq!(
        log.lines().count(),
        3,
        "header and two entries, one line each:\n{log}"
    );
    let reopened = Session::open(&path, SessionOptions::default()).expect("reopen");
    assert_eq!(reopened.path_ids(None).expect("path"), ids);
    let stored = reopened.entry(&ids[0]).expect("lookup").expect("entry");
    let value: serde_json::Value =
        serde_json::from_str(stored.field("message").expect("message").get()).expect("JSON");
    assert_eq!(
        value,
        serde_json::json!({"role": "user", "content": "a\nb", "timestamp": 1})
    );
}
