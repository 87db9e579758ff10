//! The strings of one JSON line, in order, each with its raw byte range, whether it is a key,
//! and its JSON path (`message.content[2].text`). Pure; no recursion (a stack of containers,
//! bounded by the line). The line must be valid JSON (`format::json_scan::is_valid`): the
//! walk trusts its structure.

use std::borrow::Cow;

/// One container the walk is inside.
#[derive(Debug, Clone)]
enum Frame {
    Object {
        /// The key of the member being read, once read.
        key: Option<String>,
        expecting_key: bool,
    },
    Array {
        index: usize,
    },
}

/// Where a string stands: the containers around it.
#[derive(Debug, Default)]
pub struct Position {
    frames: Vec<Frame>,
}

impl Position {
    /// The path of the value being read, as `a.b[2].c` (a key that is not an identifier is
    /// written `["key"]`); empty at the top.
    pub fn path(&self) -> String {
        let mut path = String::new();
        for frame in &self.frames {
            match frame {
                Frame::Object { key: Some(key), .. } => {
                    let plain = !key.is_empty()
                        && key.bytes().all(|byte| {
                            byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$'
                        })
                        && !key.as_bytes()[0].is_ascii_digit();
                    if plain {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(key);
                    } else {
                        path.push('[');
                        crate::format::json_string::push_json_string(&mut path, key);
                        path.push(']');
                    }
                }
                Frame::Object { key: None, .. } => {}
                Frame::Array { index } => {
                    path.push('[');
                    path.push_str(&index.to_string());
                    path.push(']');
                }
            }
        }
        path
    }

    /// The key of the member being read in the innermost object, when the innermost container
    /// is an object (for an array's item: the key the array stands under).
    pub fn key(&self) -> Option<&str> {
        self.frames.iter().rev().find_map(|frame| match frame {
            Frame::Object { key, .. } => Some(key.as_deref()),
            Frame::Array { .. } => None,
        })?
    }
}

/// One string of the line.
#[derive(Debug)]
pub struct StringToken {
    /// The raw bytes' range in the line, quotes included.
    pub start: usize,
    pub end: usize,
    pub is_key: bool,
}

/// Calls `visit` with every string of `line` (valid JSON) in order; stops early when it
/// returns `false`.
pub fn strings(line: &[u8], mut visit: impl FnMut(&StringToken, &Position) -> bool) {
    let mut position = Position::default();
    let mut at = 0;
    while at < line.len() {
        match line[at] {
            b'{' => position.frames.push(Frame::Object {
                key: None,
                expecting_key: true,
            }),
            b'[' => position.frames.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                position.frames.pop();
            }
            b',' => match position.frames.last_mut() {
                Some(Frame::Array { index }) => *index += 1,
                Some(Frame::Object { expecting_key, .. }) => *expecting_key = true,
                None => {}
            },
            b':' => {
                if let Some(Frame::Object { expecting_key, .. }) = position.frames.last_mut() {
                    *expecting_key = false;
                }
            }
            b'"' => {
                let end = string_end(line, at);
                let is_key = matches!(
                    position.frames.last(),
                    Some(Frame::Object {
                        expecting_key: true,
                        ..
                    })
                );
                let token = StringToken {
                    start: at,
                    end,
                    is_key,
                };
                if is_key {
                    let name = decode(&line[at..end]).into_owned();
                    if let Some(Frame::Object { key, .. }) = position.frames.last_mut() {
                        *key = Some(name);
                    }
                }
                if !visit(&token, &position) {
                    return;
                }
                at = end;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
}

/// The end (after the closing quote) of the string opening at `start`.
fn string_end(line: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while let Some(found) = memchr::memchr2(b'"', b'\\', &line[at..]) {
        at += found;
        if line[at] == b'\\' {
            at += 2;
        } else {
            return at + 1;
        }
    }
    line.len()
}

/// The text of a raw JSON string (quotes included). A string whose escapes spell a lone
/// surrogate, which Rust text cannot hold, is given with its escapes as they are.
pub fn decode(raw: &[u8]) -> Cow<'_, str> {
    let inner = &raw[1..raw.len().saturating_sub(1).max(1)];
    if memchr::memchr(b'\\', inner).is_none() {
        return String::from_utf8_lossy(inner);
    }
    match serde_json::from_slice::<String>(raw) {
        Ok(text) => Cow::Owned(text),
        Err(_) => String::from_utf8_lossy(inner),
    }
}
