//! What pi's session listing (`buildSessionInfo` in pi's `session-manager.js`) reads from a
//! session file, found in one pass over its lines without building a value per line: the
//! header line, the number of `message` entries, the session name, the latest user or
//! assistant activity time, the first user text, and (only when asked) every user and
//! assistant text.
//!
//! pi parses every line with `JSON.parse`, and some shapes of a line make its loop throw (a
//! `message` entry without a message, a `session_info` whose name is not a string, a content
//! that is neither a string nor an array, ...), which drops the session from the listing; or
//! need JavaScript's own rules (`new Date(entry.timestamp)` for a message without a numeric
//! timestamp). Such a file is [`Summary::Irregular`]: the caller answers it with pi's own
//! algorithm. Everything this module does answer is exactly what pi's loop computes.
//!
//! [`SummaryBuilder`] is pure (it is fed lines); [`summarize_file`] reads a file into it.

use std::io::BufRead;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::js_text::js_trim;
use crate::format::json_scan;
use crate::format::line::json_text_str;

/// What a listing needs from one session file.
#[derive(Clone, Debug, PartialEq)]
pub enum Summary {
    /// The first value that is not skipped is not a `session` header: pi lists no session.
    NotASession,
    /// pi's loop would throw, or needs JavaScript's date parsing: answer with pi's algorithm.
    /// The reason is for tests and diagnostics.
    Irregular(&'static str),
    Session(SessionSummary),
}

/// The values pi's `buildSessionInfo` loop ends with, for a file it lists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionSummary {
    /// The header line, as written (the caller parses it: pi takes its fields as they are).
    pub header_json: String,
    /// `message` entries after the header.
    pub message_count: u64,
    /// The last `session_info`'s name, trimmed as JavaScript trims; `None` when cleared.
    pub name: Option<String>,
    /// The latest numeric `message.timestamp` of a user or assistant message (pi's
    /// `Math.max(last ?? 0, time)`), if any.
    pub last_activity_ms: Option<f64>,
    /// The text of the first user message that has text.
    pub first_user_text: Option<String>,
    /// Every non-empty user or assistant text joined by `" "` (`allMessagesText`), when asked.
    pub all_texts: Option<String>,
}

/// Whether to read to the end once the session is known to be listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Texts {
    /// The eager fields only (the texts are built when `allMessagesText` is read).
    Skip,
    Collect,
}

/// Fed a file's lines in order.
pub struct SummaryBuilder {
    texts: Texts,
    summary: Option<SessionSummary>,
    outcome: Option<Summary>,
}

impl SummaryBuilder {
    pub fn new(texts: Texts) -> SummaryBuilder {
        SummaryBuilder {
            texts,
            summary: None,
            outcome: None,
        }
    }

    /// A builder that goes on after lines that left it undecided with `state` (what
    /// [`SummaryBuilder::state`] gave): the same answer for the lines that follow as a builder
    /// fed every line.
    pub fn resumed(texts: Texts, state: SessionSummary) -> SummaryBuilder {
        SummaryBuilder {
            texts,
            summary: Some(state),
            outcome: None,
        }
    }

    /// What the lines so far left: the summary to resume from, while the answer is not
    /// decided and the header was read.
    pub fn state(&self) -> Option<SessionSummary> {
        self.outcome
            .is_none()
            .then(|| self.summary.clone())
            .flatten()
    }

    /// Whether the answer is known (no later line can change it).
    pub fn is_decided(&self) -> bool {
        self.outcome.is_some()
    }

    /// One `\n`-terminated line of the file, without its `\n` (a `\r` before it is part of
    /// the line break). Node's readline also ends a line at a lone `\r`, U+2028 and U+2029,
    /// so pi reads the pieces between them as lines of their own: so does this.
    pub fn line(&mut self, bytes: &[u8]) {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let mut start = 0;
        for at in memchr::memchr2_iter(b'\r', 0xE2, bytes) {
            if at < start {
                continue;
            }
            let break_len = match bytes[at] {
                b'\r' => 1,
                _ if matches!(bytes.get(at + 1..at + 3), Some([0x80, 0xA8 | 0xA9])) => 3,
                _ => continue,
            };
            self.piece(&bytes[start..at]);
            start = at + break_len;
        }
        self.piece(&bytes[start..]);
    }

    /// One line as readline gives it.
    fn piece(&mut self, bytes: &[u8]) {
        if self.outcome.is_some() {
            return;
        }
        if let Err(reason) = self.line_inner(bytes) {
            self.outcome = Some(reason);
        }
    }

    /// The answer after the last line.
    pub fn finish(self) -> Summary {
        if let Some(outcome) = self.outcome {
            return outcome;
        }
        match self.summary {
            Some(mut summary) => {
                if self.texts == Texts::Skip {
                    summary.all_texts = None;
                }
                Summary::Session(summary)
            }
            None => Summary::NotASession,
        }
    }

    fn line_inner(&mut self, bytes: &[u8]) -> std::result::Result<(), Summary> {
        let Some(text) = crate::format::utf8_str(bytes) else {
            return Err(Summary::Irregular("a line that is not UTF-8"));
        };
        if js_trim(text).is_empty() {
            return Ok(());
        }
        let Ok(found) = json_scan::scan(text, &["type", "name", "message"]) else {
            return Ok(()); // JSON.parse fails: the line is skipped.
        };
        if !found.is_object && is_falsy(text.trim_matches(JSON_WHITESPACE)) {
            return Ok(()); // `if (!entry) continue`
        }
        let [type_raw, name_raw, message_raw] = found.fields;
        let entry_type = type_raw.and_then(json_text_str);
        let Some(summary) = &mut self.summary else {
            if entry_type.as_deref() != Some("session") {
                return Err(Summary::NotASession);
            }
            self.summary = Some(SessionSummary {
                header_json: text.to_string(),
                all_texts: (self.texts == Texts::Collect).then(String::new),
                ..SessionSummary::default()
            });
            return Ok(());
        };
        match entry_type.as_deref() {
            Some("session_info") => {
                summary.name = match name_raw {
                    None | Some("null") => None,
                    Some(raw) => match json_text_str(raw) {
                        Some(name) => Some(js_trim(&name).to_string()).filter(|n| !n.is_empty()),
                        None => {
                            return Err(Summary::Irregular("a session name that is not a string"));
                        }
                    },
                };
                Ok(())
            }
            Some("message") => {
                summary.message_count += 1;
                let collect = self.texts == Texts::Collect;
                message(summary, message_raw, collect)
            }
            _ => Ok(()),
        }
    }
}

/// pi's handling of one `message` entry's message (`getMessageActivityTime`, then the text).
fn message(
    summary: &mut SessionSummary,
    raw: Option<&str>,
    collect: bool,
) -> std::result::Result<(), Summary> {
    let Some(raw) = raw.filter(|raw| *raw != "null") else {
        return Err(Summary::Irregular("a message entry without a message"));
    };
    let Ok(found) = json_scan::scan(raw, &["role", "content", "timestamp"]) else {
        return Err(Summary::Irregular("a message that does not scan"));
    };
    if !found.is_object {
        return Ok(()); // `message.role` of a non-object is not a string.
    }
    let [role_raw, content_raw, timestamp_raw] = found.fields;
    let role = match role_raw {
        Some(raw) if raw.starts_with('"') => match json_text_str(raw) {
            Some(role) => role,
            None => return Err(Summary::Irregular("a role pi compares as UTF-16")),
        },
        _ => return Ok(()),
    };
    let Some(content_raw) = content_raw else {
        return Ok(()); // no "content" key
    };
    let is_user = role == "user";
    if !is_user && role != "assistant" {
        return Ok(());
    }
    match timestamp_raw
        .filter(|raw| raw.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']))
    {
        Some(raw) => match raw.parse::<f64>() {
            Ok(time) if time.is_finite() => {
                summary.last_activity_ms = Some(summary.last_activity_ms.unwrap_or(0.0).max(time));
            }
            _ => return Err(Summary::Irregular("a message time beyond a double")),
        },
        None => return Err(Summary::Irregular("a message without a numeric timestamp")),
    }
    let wanted = collect || (is_user && summary.first_user_text.is_none());
    let text = content_text(content_raw, wanted)?;
    if text.is_empty() {
        return Ok(());
    }
    if let Some(all) = &mut summary.all_texts {
        // pi's `join(" ")` of non-empty texts.
        if !all.is_empty() {
            all.push(' ');
        }
        all.push_str(&text);
    }
    if is_user && summary.first_user_text.is_none() {
        summary.first_user_text = Some(text);
    }
    Ok(())
}

/// pi's `extractTextContent`: a string content is the text; an array's `text` blocks joined by
/// `" "` (a block whose text is absent or null joins as ""). `wanted`: build the text (else
/// only check that pi would not throw, and say whether it would be non-empty).
fn content_text(raw: &str, wanted: bool) -> std::result::Result<String, Summary> {
    if raw.starts_with('"') {
        return match json_text_str(raw) {
            Some(text) => Ok(if wanted {
                text.into_owned()
            } else {
                non_empty_marker(&text)
            }),
            None => Err(Summary::Irregular("a text pi holds as UTF-16")),
        };
    }
    if !raw.starts_with('[') {
        return Err(Summary::Irregular(
            "a content that is neither a string nor an array",
        ));
    }
    let mut parts: Vec<String> = Vec::new();
    let mut any_text = false;
    let Ok(blocks) = json_scan::array_items(raw) else {
        return Err(Summary::Irregular("a content array that does not scan"));
    };
    for block in blocks {
        if block == "null" {
            return Err(Summary::Irregular("a null content block"));
        }
        let Ok(found) = json_scan::scan(block, &["type", "text"]) else {
            return Err(Summary::Irregular("a content block that does not scan"));
        };
        if !found.is_object {
            continue;
        }
        let [type_raw, text_raw] = found.fields;
        if type_raw.and_then(json_text_str).as_deref() != Some("text") {
            continue;
        }
        let text = match text_raw {
            None | Some("null") => String::new(),
            Some(raw) => match json_text_str(raw) {
                Some(text) => text.into_owned(),
                None => {
                    return Err(Summary::Irregular(
                        "a text block whose text is not a string",
                    ));
                }
            },
        };
        any_text |= !text.is_empty();
        parts.push(text);
    }
    // Several blocks join with spaces: non-empty even when every text is empty.
    let non_empty = any_text || parts.len() > 1;
    Ok(if wanted {
        parts.join(" ")
    } else if non_empty {
        " ".into()
    } else {
        String::new()
    })
}

/// A stand-in with the emptiness of `text`, when the text itself is not wanted.
fn non_empty_marker(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        " ".into()
    }
}

const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// A JSON value JavaScript holds falsy: `null`, `false`, a zero, `""`.
fn is_falsy(raw: &str) -> bool {
    match raw {
        "null" | "false" | "\"\"" => true,
        _ => raw.parse::<f64>().is_ok_and(|number| number == 0.0),
    }
}

/// Reads `path` line by line into a [`SummaryBuilder`], stopping once the answer is known
/// (a file whose first value is not a header is not read further).
pub fn summarize_file(path: &Path, texts: Texts) -> Result<Summary> {
    let io = |operation: &'static str| {
        move |source| Error::Io {
            path: path.to_path_buf(),
            operation,
            source,
        }
    };
    let file = crate::fs_safe::open_regular(path, std::fs::OpenOptions::new().read(true))
        .map_err(io("open"))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut builder = SummaryBuilder::new(texts);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(io("read"))?;
        if read == 0 {
            break;
        }
        builder.line(line.strip_suffix(b"\n").unwrap_or(&line));
        if builder.is_decided() {
            break;
        }
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

    fn summarize(text: &str, texts: Texts) -> Summary {
        let mut builder = SummaryBuilder::new(texts);
        let mut lines: Vec<&str> = text.split('\n').collect();
        if text.ends_with('\n') {
            lines.pop();
        }
        for line in lines {
            builder.line(line.as_bytes());
        }
        builder.finish()
    }

    fn user(content: &str, time: &str) -> String {
        format!(
            r#"{{"type":"message","message":{{"role":"user","content":{content},"timestamp":{time}}}}}"#
        )
    }

    /// (what, log, message count, name, latest activity, first user text, all texts)
    type Case = (
        &'static str,
        String,
        u64,
        Option<&'static str>,
        Option<f64>,
        Option<&'static str>,
        &'static str,
    );

    /// Each log gives what pi's loop computes for it: (what, log, message count, name, latest
    /// activity, first user text, all texts).
    #[test]
    fn sessions_pi_lists() {
        let cases: Vec<Case> = vec![
            (
                "header only",
                format!("{HEADER}\n"),
                0,
                None,
                None,
                None,
                "",
            ),
            (
                "blank, invalid and falsy lines before the header are skipped",
                format!(
                    "\n \nnot json\n0\n-0.0\nnull\nfalse\n\"\"\n{HEADER}\n{}\n",
                    user("\"hi\"", "5")
                ),
                1,
                None,
                Some(5.0),
                Some("hi"),
                "hi",
            ),
            (
                "a raw U+2028 cuts a line in two, neither parses",
                format!(
                    "{HEADER}\n{}\n{}\n",
                    user("\"a\u{2028}b\"", "5"),
                    user("\"c\"", "7")
                ),
                1,
                None,
                Some(7.0),
                Some("c"),
                "c",
            ),
            (
                "a lone carriage return cuts a line; CRLF ends one",
                format!(
                    "{HEADER}\r\n{}\r{}\r\n",
                    user("\"a\"", "9"),
                    user("\"b\"", "3")
                ),
                2,
                None,
                Some(9.0),
                Some("a"),
                "a b",
            ),
            (
                "names are trimmed as JavaScript trims (U+FEFF too), blank clears",
                format!("{HEADER}\n{{\"type\":\"session_info\",\"name\":\"\u{feff} n \"}}\n"),
                0,
                Some("n"),
                None,
                None,
                "",
            ),
            (
                "text blocks join with spaces, two empty ones are a text",
                format!(
                    "{HEADER}\n{}\n",
                    user(
                        r#"[{"type":"text","text":""},{"type":"image"},{"type":"text"}]"#,
                        "1"
                    )
                ),
                1,
                None,
                Some(1.0),
                Some(" "),
                " ",
            ),
            (
                "tool results count as messages but give no text or time",
                format!(
                    "{HEADER}\n{{\"type\":\"message\",\"message\":{{\"role\":\"toolResult\",\"content\":\"x\"}}}}\n"
                ),
                1,
                None,
                None,
                None,
                "",
            ),
        ];
        for (what, log, count, name, last, first, all) in cases {
            let Summary::Session(summary) = summarize(&log, Texts::Collect) else {
                panic!("{what}: not listed");
            };
            assert_eq!(summary.message_count, count, "{what}");
            assert_eq!(summary.name.as_deref(), name, "{what}");
            assert_eq!(summary.last_activity_ms, last, "{what}");
            assert_eq!(summary.first_user_text.as_deref(), first, "{what}");
            assert_eq!(summary.all_texts.as_deref(), Some(all), "{what}");
            let Summary::Session(eager) = summarize(&log, Texts::Skip) else {
                panic!("{what}: not listed without texts");
            };
            assert_eq!(eager.all_texts, None, "{what}");
            assert_eq!(eager.first_user_text, summary.first_user_text, "{what}");
        }
    }

    /// Logs pi does not list, and logs its loop would throw on or read with JavaScript's dates.
    #[test]
    fn sessions_pi_does_not_list_or_reads_itself() {
        let cases = [
            (
                "an entry before the header",
                format!("{}\n{HEADER}\n", user("\"x\"", "1")),
                "not",
            ),
            ("a truthy non-object first", format!("1\n{HEADER}\n"), "not"),
            ("empty", String::new(), "not"),
            (
                "a name that is a number",
                format!("{HEADER}\n{{\"type\":\"session_info\",\"name\":5}}\n"),
                "irregular",
            ),
            (
                "a message entry without a message",
                format!("{HEADER}\n{{\"type\":\"message\"}}\n"),
                "irregular",
            ),
            (
                "no message time",
                format!(
                    "{HEADER}\n{{\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"x\"}}}}\n"
                ),
                "irregular",
            ),
            (
                "a content object",
                format!("{HEADER}\n{}\n", user("{}", "1")),
                "irregular",
            ),
            (
                "a null block",
                format!("{HEADER}\n{}\n", user("[null]", "1")),
                "irregular",
            ),
            (
                "a text that is a number",
                format!("{HEADER}\n{}\n", user(r#"[{"type":"text","text":5}]"#, "1")),
                "irregular",
            ),
        ];
        for (what, log, expected) in cases {
            let got = summarize(&log, Texts::Skip);
            match expected {
                "not" => assert_eq!(got, Summary::NotASession, "{what}"),
                _ => assert!(matches!(got, Summary::Irregular(_)), "{what}: {got:?}"),
            }
        }
    }
}
