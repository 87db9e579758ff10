//! Fuzz target `context_edit`: the one reading of a `context_edit` line
//! (`treelog::format::pi_json`) against serde_json, on the lines both read.

use serde_json::Value;
use treelog::format::json_scan;
use treelog::format::pi_json::{self, Replacement};

/// `pi_json::context_edit` on arbitrary bytes (as lossy UTF-8): never panics, and wherever
/// serde_json reads the line as an object (serde_json's `Value` keeps the last of repeated
/// keys, as `JSON.parse` does), finds the same target and replacement. A line serde_json
/// refuses but `JSON.parse` reads (a lone surrogate escape, nesting deeper than 128, a number
/// beyond f64) is read too: an edit is found exactly when the line is valid JSON with the
/// two keys. Every string value decodes as serde_json decodes it where serde_json can.
pub fn context_edit(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let edit = pi_json::context_edit(&text);
    if edit.is_some() {
        assert!(
            json_scan::is_valid(&text),
            "an edit from invalid JSON: {text:?}"
        );
    }
    if let Some(raw) = edit.as_ref().and_then(|edit| match edit.replacement {
        Replacement::Content(content) => content,
        Replacement::Remove => None,
    }) {
        assert!(json_scan::is_valid(raw), "content: {raw:?}");
        if let Ok(expected) = serde_json::from_str::<String>(raw) {
            assert_eq!(
                pi_json::string_lossy(raw).as_deref(),
                Some(&*expected),
                "{raw:?}"
            );
        }
    }
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&text) else {
        return;
    };
    let expected = match (object.get("targetId"), object.get("replacement")) {
        (Some(Value::String(target)), Some(replacement)) => Some((target.clone(), replacement)),
        _ => None,
    };
    let got = edit
        .as_ref()
        .map(|edit| (edit.target.to_string(), edit.replacement));
    match (expected, got) {
        (None, None) => {}
        (Some((target, replacement)), Some((got_target, got_replacement))) => {
            assert_eq!(target, got_target, "target: {text:?}");
            match (replacement, got_replacement) {
                (Value::Null, Replacement::Remove) => {}
                (replacement, Replacement::Content(content)) if !replacement.is_null() => {
                    let expected = replacement
                        .as_object()
                        .and_then(|object| object.get("content"));
                    let content = content.map(|raw| serde_json::from_str::<Value>(raw).ok());
                    assert_eq!(
                        content,
                        expected.map(|value| Some(value.clone())),
                        "content: {text:?}"
                    );
                }
                (replacement, got) => panic!("replacement {replacement} read as {got:?}: {text:?}"),
            }
        }
        (expected, got) => panic!("expected {expected:?}, got {got:?}: {text:?}"),
    }
}
