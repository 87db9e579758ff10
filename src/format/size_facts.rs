//! What a line says of its size beyond its record, as `treelog stats` groups it: the name it
//! is counted under (a tool result's `toolName`, an extension's `customType`, an unknown
//! entry type or message role) and the images inside its content. The index keeps these as
//! tallies (format-spec/index.md, "Tallies"), so that stats read no line. Pure.

use std::borrow::Cow;

use super::fields::json_text_str;
use super::json_scan;
use super::message::ROLES;

/// The name that stands for a missing (or non-string) tool name, extension or role.
pub const NONE_NAME: &str = "(none)";
/// The tool name of `bashExecution` messages (commands the user ran with `!`).
pub const BASH_EXECUTION_NAME: &str = "bashExecution";

/// The tally key of the image blocks in message contents (count, bytes of their data); the
/// key of a name is its group's prefix letter, `:` and the name.
pub const IMAGES_KEY: &str = "images";

/// What a name is the name of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NameGroup {
    /// A tool result's `toolName`, or [`BASH_EXECUTION_NAME`].
    Tool,
    /// A `custom` or `custom_message` entry's `customType`.
    Extension,
    /// The `type` of an entry of a type pi does not define.
    EntryType,
    /// The `role` of a message whose role is not one of [`ROLES`] (empty when not a string).
    Role,
}

impl NameGroup {
    /// The one-letter prefix of the group's tally keys.
    pub const fn prefix(self) -> char {
        match self {
            NameGroup::Tool => 't',
            NameGroup::Extension => 'x',
            NameGroup::EntryType => 'y',
            NameGroup::Role => 'r',
        }
    }

    pub fn from_prefix(prefix: char) -> Option<NameGroup> {
        [
            NameGroup::Tool,
            NameGroup::Extension,
            NameGroup::EntryType,
            NameGroup::Role,
        ]
        .into_iter()
        .find(|group| group.prefix() == prefix)
    }
}

/// The size facts of one entry line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SizeFacts<'a> {
    /// The name the line is counted under, if any (a line has at most one: a tool is named
    /// only for a known role).
    pub name: Option<(NameGroup, Cow<'a, str>)>,
    /// Image blocks in its content: how many, and the bytes of their data as stored.
    pub image_count: u64,
    pub image_bytes: u64,
}

impl<'a> SizeFacts<'a> {
    /// The facts of the entry line `line`, given the raw JSON of its `type` and `message`
    /// fields (the last of repeated keys, as `JSON.parse` keeps), its message role's code
    /// `role`, and whether its type is one pi does not define (`unknown_type`). The line is
    /// searched once for `"image"` before any content is parsed; a custom entry's
    /// `customType` and `content` are read from it here.
    pub fn of(
        line: &'a str,
        raw_type: Option<&'a str>,
        message: Option<&'a str>,
        role: u8,
        unknown_type: bool,
    ) -> SizeFacts<'a> {
        let text = |raw: Option<&'a str>| raw.and_then(json_text_str);
        let mut facts = SizeFacts::default();
        let mut content = None;
        let type_name = text(raw_type).unwrap_or_default();
        match type_name.as_ref() {
            _ if unknown_type => {
                if let Some(name) = text(raw_type) {
                    facts.name = Some((NameGroup::EntryType, name));
                }
            }
            "message" => {
                let known = ROLES.get(usize::from(role).wrapping_sub(1)).copied();
                let role_name = match known {
                    Some(role) => Some(Cow::Borrowed(role)),
                    None => message.and_then(|message| {
                        message_field(message, "role")
                            .map(|raw| text(Some(raw)).unwrap_or_default())
                    }),
                };
                match role_name.as_deref() {
                    Some("toolResult") => {
                        facts.name = Some((
                            NameGroup::Tool,
                            message
                                .and_then(|message| text(message_field(message, "toolName")))
                                .unwrap_or(Cow::Borrowed(NONE_NAME)),
                        ))
                    }
                    Some(BASH_EXECUTION_NAME) => {
                        facts.name = Some((NameGroup::Tool, Cow::Borrowed(BASH_EXECUTION_NAME)))
                    }
                    _ => {}
                }
                if known.is_none() {
                    facts.name = Some((
                        NameGroup::Role,
                        role_name.unwrap_or(Cow::Borrowed(NONE_NAME)),
                    ));
                }
                if has_image(line) {
                    content = message.and_then(|message| message_field(message, "content"));
                }
            }
            "custom" | "custom_message" => {
                let found = json_scan::scan(line, &["customType", "content"]).ok();
                let (custom_type, raw_content) =
                    found.map_or((None, None), |found| (found.fields[0], found.fields[1]));
                facts.name = Some((
                    NameGroup::Extension,
                    text(custom_type).unwrap_or(Cow::Borrowed(NONE_NAME)),
                ));
                if type_name.as_ref() == "custom_message" && has_image(line) {
                    content = raw_content;
                }
            }
            _ => {}
        }
        if let Some(content) = content {
            (facts.image_count, facts.image_bytes) = images_in(content);
        }
        facts
    }
}

fn has_image(line: &str) -> bool {
    memchr::memmem::find(line.as_bytes(), b"\"image\"").is_some()
}

/// A field of a raw message object, raw.
fn message_field<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    json_scan::scan(message, &[name]).ok()?.fields[0]
}

/// The image blocks of a raw content array: `{"type":"image","data":...}` objects, and their
/// data's length in bytes as stored (without its quotes).
fn images_in(content: &str) -> (u64, u64) {
    let Ok(blocks) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(content) else {
        return (0, 0);
    };
    let (mut count, mut bytes) = (0, 0);
    for block in blocks {
        let Ok(found) = json_scan::scan(block.get(), &["type", "data"]) else {
            continue;
        };
        if found.fields[0] == Some("\"image\"") {
            count += 1;
            bytes += found.fields[1].map_or(0, |data| data.len().saturating_sub(2) as u64);
        }
    }
    (count, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_of(line: &str) -> SizeFacts<'static> {
        let line: &'static str = Box::leak(line.to_string().into_boxed_str());
        match super::super::line::classify(line, false, false) {
            super::super::line::Line::Entry(entry) => entry.size_facts,
            other => panic!("not an entry: {other:?}"),
        }
    }

    /// Each kind of line is counted under the name stats group it by, and images are found in
    /// a message's and a custom message's content only.
    #[test]
    fn names_and_images_by_kind() {
        type Case<'a> = (&'a str, Option<(NameGroup, &'a str)>, (u64, u64));
        let cases: &[Case<'_>] = &[
            (
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":"toolResult","toolName":"read","content":[{"type":"image","data":"QUJD"},{"type":"text","text":"image"}]}}"#,
                Some((NameGroup::Tool, "read")),
                (1, 4),
            ),
            (
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":"toolResult","content":[]}}"#,
                Some((NameGroup::Tool, NONE_NAME)),
                (0, 0),
            ),
            (
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":"bashExecution","command":"ls"}}"#,
                Some((NameGroup::Tool, BASH_EXECUTION_NAME)),
                (0, 0),
            ),
            (
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":"weird","content":[{"type":"image","data":"AA"}]}}"#,
                Some((NameGroup::Role, "weird")),
                (1, 2),
            ),
            (
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":7}}"#,
                Some((NameGroup::Role, "")),
                (0, 0),
            ),
            (
                r#"{"type":"message","id":"a","parentId":null}"#,
                Some((NameGroup::Role, NONE_NAME)),
                (0, 0),
            ),
            (
                r#"{"type":"custom_message","id":"a","parentId":null,"customType":"ext","content":[{"type":"image","data":"ABCDEF"}]}"#,
                Some((NameGroup::Extension, "ext")),
                (1, 6),
            ),
            (
                r#"{"type":"custom","id":"a","parentId":null,"data":{"content":[{"type":"image","data":"AA"}]}}"#,
                Some((NameGroup::Extension, NONE_NAME)),
                (0, 0),
            ),
            (
                r#"{"type":"future_thing","id":"a","parentId":null}"#,
                Some((NameGroup::EntryType, "future_thing")),
                (0, 0),
            ),
            (
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"an image"}}"#,
                None,
                (0, 0),
            ),
        ];
        for (line, name, images) in cases {
            let facts = facts_of(line);
            let got = facts
                .name
                .as_ref()
                .map(|(group, name)| (*group, name.as_ref()));
            assert_eq!(got, *name, "{line}");
            assert_eq!((facts.image_count, facts.image_bytes), *images, "{line}");
        }
    }
}
