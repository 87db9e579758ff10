//! Fuzz target `line_parser`: the line classifier against serde_json.

use treelog::format::json_scan;
use treelog::format::line::{Line, OpaqueReason, classify, classify_with_serde};

/// `classify` on arbitrary bytes (as lossy UTF-8) with each flag combination: never panics,
/// answers exactly as `classify_with_serde` (the serde_json reading that its one-pass scanner
/// replaced), and agrees with a plain `serde_json::Value` reading wherever that reading
/// succeeds. The scanner's verdict on the text is serde_json's own.
pub fn line_parser(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    assert_eq!(
        json_scan::is_valid(&text),
        serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(),
        "validity: {text:?}"
    );
    let value: Option<serde_json::Value> = serde_json::from_str(&text).ok();
    for legacy_v1 in [false, true] {
        for allow_header in [false, true] {
            let line = classify(&text, legacy_v1, allow_header);
            assert_eq!(
                line,
                classify_with_serde(&text, legacy_v1, allow_header),
                "classify({text:?}, {legacy_v1}, {allow_header})"
            );
            let blank = text
                .bytes()
                .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
            assert_eq!(matches!(line, Line::Blank), blank, "blank: {text:?}");
            if blank {
                continue;
            }
            // Text that is not JSON is never an entry or a header, whichever reading found
            // it (a key read as bytes once let a control byte through).
            if !json_scan::is_valid(&text) {
                assert!(
                    matches!(&line, Line::Opaque(opaque) if matches!(opaque.reason, OpaqueReason::InvalidJson(_))),
                    "invalid JSON read as {line:?}: {text:?}"
                );
            }
            let Some(value) = &value else {
                // serde_json refuses it (not JSON, nested past its recursion limit, or a lone
                // surrogate escape, which JSON.parse accepts): only "no panic" is checked.
                continue;
            };
            check_against_value(&text, value, &line, legacy_v1, allow_header);
        }
    }
}

/// What `JSON.parse` makes of the line decides what it is (as in pi and OpenClaw).
fn check_against_value(
    text: &str,
    value: &serde_json::Value,
    line: &Line<'_>,
    legacy_v1: bool,
    allow_header: bool,
) {
    let serde_json::Value::Object(object) = value else {
        assert!(
            matches!(line, Line::Opaque(opaque) if opaque.reason == OpaqueReason::NotAnObject),
            "{text:?} is JSON but not an object: {line:?}"
        );
        return;
    };
    let kind = object.get("type").and_then(|v| v.as_str());
    let id = object.get("id").and_then(|v| v.as_str());
    match (kind, line) {
        (None, Line::Opaque(opaque)) => {
            assert_eq!(opaque.reason, OpaqueReason::MissingType, "{text:?}")
        }
        (Some("session"), Line::Header(header)) => {
            assert!(allow_header, "{text:?}: a header where none is allowed");
            assert_eq!(Some(header.id.as_ref()), id, "{text:?}");
        }
        (Some("session"), Line::Opaque(opaque)) => {
            assert_eq!(opaque.reason, OpaqueReason::ExtraHeader, "{text:?}");
            assert!(
                !allow_header || id.is_none(),
                "{text:?}: a header was refused"
            );
        }
        (Some("leaf"), Line::Opaque(opaque)) => {
            assert_eq!(opaque.reason, OpaqueReason::LeafControl, "{text:?}")
        }
        (Some(kind), Line::Entry(entry)) => {
            assert_eq!(
                entry.kind,
                treelog::EntryKind::from_type_str(kind),
                "{text:?}"
            );
            assert_eq!(
                entry.id.as_deref(),
                id.filter(|id| !id.is_empty()),
                "{text:?}"
            );
            assert!(
                legacy_v1 || entry.id.is_some(),
                "{text:?}: an entry without id"
            );
        }
        (Some(kind), Line::Opaque(opaque)) => match &opaque.reason {
            OpaqueReason::MissingId => {
                assert!(!legacy_v1 && id.is_none_or(str::is_empty), "{text:?}")
            }
            other => panic!("{text:?}: a JSON object of type {kind:?} is opaque for {other}"),
        },
        (_, other) => panic!("{text:?}: JSON object of type {kind:?} classified as {other:?}"),
    }
}
