//! The projection as a plan ([`ProjectionPlan`]): pi 1.6's `buildSessionProjection` for a
//! caller that holds the entries as values already and hands out their own `message` objects.

use super::{IndexedLines, JsonText, PiCompat, Reads, assemble, push_array, push_settings};
use crate::error::Result;

/// pi 1.6's `buildSessionProjection` for a caller that already holds the entries as values
/// (the Node package keeps each entry it parsed): each context entry's sequence number, and
/// its messages only where they are not the entry's own `message` unchanged. Such a caller
/// hands back the very `message` value it holds, as pi does, so that pi's callers that compare
/// messages by identity find them; the other messages (summaries, custom messages, edited or
/// filled-in ones) are new values on every build in pi too.
#[derive(Clone, Debug)]
pub struct ProjectionPlan {
    pub entries: Vec<PlannedEntry>,
    pub thinking_level: JsonText,
    pub model: Option<JsonText>,
}

/// One context entry of a [`ProjectionPlan`].
#[derive(Clone, Debug)]
pub struct PlannedEntry {
    pub seq: u64,
    /// `None`: the entry contributes exactly its own `message`, as stored.
    pub messages: Option<Vec<JsonText>>,
}

impl ProjectionPlan {
    /// `{"entries":[SEQ | [SEQ,[MESSAGE,...]], ...],"thinkingLevel":...,"model":...}`.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"entries\":[");
        for (index, entry) in self.entries.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            match &entry.messages {
                None => out.push_str(&entry.seq.to_string()),
                Some(messages) => {
                    out.push('[');
                    out.push_str(&entry.seq.to_string());
                    out.push(',');
                    push_array(&mut out, messages);
                    out.push(']');
                }
            }
        }
        out.push(']');
        push_settings(&mut out, &self.thinking_level, self.model.as_ref());
        out
    }
}

/// pi 1.6's projection of `leaf_seq` as a [`ProjectionPlan`]: only the lines of entries whose
/// messages are not their own unchanged are read.
pub(crate) fn projection_plan(
    session: &impl IndexedLines,
    leaf_seq: u64,
) -> Result<ProjectionPlan> {
    let assembled = assemble(session, leaf_seq, PiCompat::Current, Reads::NotOwn)?;
    let mut start = 0;
    let entries = assembled
        .entries
        .iter()
        .map(|entry| {
            let messages = (!entry.own_message)
                .then(|| assembled.messages[start..entry.messages_end].to_vec());
            start = entry.messages_end;
            PlannedEntry {
                seq: entry.seq,
                messages,
            }
        })
        .collect();
    Ok(ProjectionPlan {
        entries,
        thinking_level: assembled.thinking_level,
        model: assembled.model,
    })
}
