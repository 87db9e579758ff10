//! The one spelling of each index state, shared by every command: a human word for text
//! output (`caught up`) and a JSON word for `--json` (`caughtUp`), so that `info`, `verify`,
//! `reindex` and `list` never disagree.

use serde_json::{Value, json};
use treelog::IndexState;

/// The state's name in `--json` output.
pub fn json_name(state: &IndexState) -> &'static str {
    match state {
        IndexState::Fresh => "fresh",
        IndexState::CaughtUp { .. } => "caughtUp",
        IndexState::Rebuilt { .. } => "rebuilt",
        IndexState::Unindexed { .. } => "unindexed",
    }
}

/// The state's name in text output.
pub fn human_name(state: &IndexState) -> &'static str {
    match state {
        IndexState::Fresh => "fresh",
        IndexState::CaughtUp { .. } => "caught up",
        IndexState::Rebuilt { .. } => "rebuilt",
        IndexState::Unindexed { .. } => "unindexed",
    }
}

/// Why the index was rebuilt or is not used; `None` for the states that need no reason.
pub fn reason(state: &IndexState) -> Option<&str> {
    match state {
        IndexState::Fresh | IndexState::CaughtUp { .. } => None,
        IndexState::Rebuilt { reason, .. } | IndexState::Unindexed { reason, .. } => {
            Some(reason.as_str())
        }
    }
}

/// The state in text with what it found: `caught up (120 bytes, 2 lines read after the
/// indexed prefix)`, `rebuilt: REASON`.
pub fn human_detail(state: &IndexState) -> String {
    match state {
        IndexState::Fresh => "fresh (covered the whole log)".into(),
        IndexState::CaughtUp { bytes, lines } => {
            format!("caught up ({bytes} bytes, {lines} lines read after the indexed prefix)")
        }
        IndexState::Rebuilt { reason, .. } | IndexState::Unindexed { reason, .. } => {
            format!("{}: {reason}", human_name(state))
        }
    }
}

/// The `{"state","reason","bytes","lines"}` object of `info --json` and `list --json`.
pub fn to_json(state: &IndexState) -> Value {
    let (bytes, lines) = match state {
        IndexState::CaughtUp { bytes, lines } => (Some(*bytes), Some(*lines)),
        _ => (None, None),
    };
    json!({"state": json_name(state), "reason": reason(state), "bytes": bytes, "lines": lines})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state has one human and one JSON spelling (the ones `--help` lists), and the two
    /// differ only in that the human one is words where the JSON one is camelCase.
    #[test]
    fn spellings_agree() {
        let states = [
            IndexState::Fresh,
            IndexState::CaughtUp { bytes: 1, lines: 1 },
            IndexState::Rebuilt {
                reason: "r".into(),
                damaged: false,
            },
            IndexState::Unindexed {
                reason: "r".into(),
                damaged: false,
            },
        ];
        let listed = ["fresh", "caughtUp", "rebuilt", "unindexed"];
        for (state, listed) in states.iter().zip(listed) {
            assert_eq!(json_name(state), listed);
            let camel: String = human_name(state)
                .split(' ')
                .enumerate()
                .map(|(index, word)| {
                    if index == 0 {
                        word.to_string()
                    } else {
                        word[..1].to_uppercase() + &word[1..]
                    }
                })
                .collect();
            assert_eq!(camel, json_name(state));
            assert!(human_detail(state).starts_with(human_name(state)));
        }
    }
}
