//! What an entry adds to pi's usage totals: the sums pi's footer and its session statistics
//! take over every entry of the file (`FooterComponent.getSessionStats`: `addUsageToTotals`
//! of each `usage` entry, each assistant message's usage, each tool result's and each
//! compaction's or branch summary's usage when truthy), read from a line's raw fields, and the
//! running totals the index keeps of them, with the message counts of pi's session statistics
//! (`AgentSession.getSessionStats`: messages by role, an assistant's tool calls). Pure code.
//!
//! pi adds the values with JavaScript's `+`: exact sums need the very numbers `JSON.parse`
//! reads (a JSON number is read as the nearest double, as Rust's `f64` parse reads it) added
//! in file order. A usage whose fields are not all numbers (a string concatenates, a missing
//! field gives NaN, a missing usage throws) is not summed here: the totals are then marked
//! unreadable and a reader runs pi's own loop, which does whatever pi does with it.

use super::json_scan;

/// The fields of a usage object pi sums, in this order: `input`, `output`, `cacheRead`,
/// `cacheWrite` and `cost.total`, each as the bits of a double.
pub const USAGE_FIELDS: usize = 5;

/// One usage object whose summed fields are all JSON numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// The doubles' bits (so that the type is `Eq`), in the order of [`USAGE_FIELDS`].
    pub bits: [u64; USAGE_FIELDS],
}

impl Usage {
    pub fn value(&self, field: usize) -> f64 {
        f64::from_bits(self.bits[field])
    }
}

/// What one entry adds to the totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UsageOf {
    /// Nothing: not a kind pi sums, or a falsy optional usage.
    #[default]
    Nothing,
    /// A usage whose summed fields are numbers.
    Plain(Usage),
    /// pi sums something here that is not a usage of numbers (or reads a field of null).
    Unreadable,
}

/// The usage read from the raw JSON of a usage value: `Some` when it is an object whose
/// `input`, `output`, `cacheRead` and `cacheWrite` are numbers and whose `cost` is an object
/// whose `total` is a number (the last of repeated keys, as `JSON.parse` keeps).
pub fn plain_usage(raw: &str) -> Option<Usage> {
    let found =
        json_scan::scan(raw, &["input", "output", "cacheRead", "cacheWrite", "cost"]).ok()?;
    if !found.is_object {
        return None;
    }
    let [input, output, cache_read, cache_write, cost] = found.fields;
    let cost = json_scan::scan(cost?, &["total"]).ok()?;
    if !cost.is_object {
        return None;
    }
    let mut bits = [0; USAGE_FIELDS];
    for (slot, raw) in bits
        .iter_mut()
        .zip([input, output, cache_read, cache_write, cost.fields[0]])
    {
        *slot = number(raw?)?.to_bits();
    }
    Some(Usage { bits })
}

/// A JSON number's value as `JSON.parse` reads it; `None` for any other value.
fn number(raw: &str) -> Option<f64> {
    if !raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return None;
    }
    raw.parse::<f64>().ok()
}

/// Whether a JSON value is truthy in JavaScript (`null`, `false`, `0` and `""` are not).
pub fn truthy(raw: &str) -> bool {
    match raw.as_bytes().first() {
        Some(b'n' | b'f') => false,
        Some(b'"') => raw != "\"\"",
        _ => number(raw) != Some(0.0),
    }
}

/// What a usage value adds when pi sums it always (an assistant message's, a `usage` entry's).
pub fn required(raw: Option<&str>) -> UsageOf {
    raw.and_then(plain_usage)
        .map_or(UsageOf::Unreadable, UsageOf::Plain)
}

/// What a usage value adds when pi sums it only when truthy (a tool result's, a compaction's,
/// a branch summary's).
pub fn optional(raw: Option<&str>) -> UsageOf {
    match raw {
        Some(raw) if truthy(raw) => required(Some(raw)),
        _ => UsageOf::Nothing,
    }
}

/// The tool calls of an assistant message's raw `content`, as pi counts them
/// (`Array.isArray(content) && content.filter((c) => c.type === "toolCall").length`): the items
/// that are objects whose `type` is the string `toolCall`; 0 for a content that is not an
/// array; `None` when an item is null (pi reads its `type` and throws).
pub fn tool_calls(content: Option<&str>) -> Option<u64> {
    let Some(content) = content.filter(|raw| raw.starts_with('[')) else {
        return Some(0);
    };
    let items = json_scan::array_items(content).ok()?;
    let mut count = 0;
    for item in items {
        match item.as_bytes().first() {
            Some(b'n') => return None,
            Some(b'{') => {
                let found = json_scan::scan(item, &["type"]).ok()?;
                if found.fields[0]
                    .and_then(super::fields::json_text_str)
                    .as_deref()
                    == Some("toolCall")
                {
                    count += 1;
                }
            }
            _ => {}
        }
    }
    Some(count)
}

/// The message counts pi's session statistics take, by role: `user`, `assistant`, `toolResult`.
pub const COUNTED_ROLES: usize = 3;

/// The running totals over the entries of a log in file order, kept in the index's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// The sums, as doubles' bits, in the order of [`USAGE_FIELDS`].
    pub sums: [u64; USAGE_FIELDS],
    /// The last assistant message's `input`, `cacheRead` and `cacheWrite` (the footer's cache
    /// hit rate), as doubles' bits.
    pub last_prompt: [u64; 3],
    /// Whether an assistant message was summed (`last_prompt` is its).
    pub has_last: bool,
    /// Whether an entry pi sums held no usage of numbers: the sums are then not pi's.
    pub unreadable: bool,
    /// `message` entries whose message's role is `user`, `assistant`, `toolResult`.
    pub messages_by_role: [u64; COUNTED_ROLES],
    /// The assistant messages' tool calls ([`tool_calls`]).
    pub tool_calls: u64,
    /// Whether an assistant message's content held an item pi cannot read a `type` of.
    pub tool_calls_unreadable: bool,
}

impl UsageTotals {
    /// Adds one entry's usage, in file order; `assistant` when it is an assistant message's.
    pub fn add(&mut self, usage: UsageOf, assistant: bool) {
        match usage {
            UsageOf::Nothing => {}
            UsageOf::Unreadable => self.unreadable = true,
            UsageOf::Plain(usage) => {
                for (field, sum) in self.sums.iter_mut().enumerate() {
                    *sum = (f64::from_bits(*sum) + usage.value(field)).to_bits();
                }
                if assistant {
                    self.last_prompt = [usage.bits[0], usage.bits[2], usage.bits[3]];
                    self.has_last = true;
                }
            }
        }
    }

    /// Counts a `message` entry whose role has code `role` (`format::message::role_code`), and
    /// an assistant's tool calls (`None`: unreadable).
    pub fn count_message(&mut self, role: u8, tool_calls: Option<u64>) {
        if let Some(slot) = (role as usize)
            .checked_sub(1)
            .filter(|at| *at < COUNTED_ROLES)
        {
            self.messages_by_role[slot] += 1;
        }
        match tool_calls {
            Some(count) => self.tool_calls += count,
            None => self.tool_calls_unreadable = true,
        }
    }

    /// The sums as doubles, in the order of [`USAGE_FIELDS`].
    pub fn values(&self) -> [f64; USAGE_FIELDS] {
        self.sums.map(f64::from_bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A usage of numbers is read field by field, the last of repeated keys winning, and
    /// anything else is not a plain usage.
    #[test]
    fn plain_usage_reads_numbers_only() {
        let usage = plain_usage(
            r#"{"input":1,"output":2.5,"cacheRead":0,"cacheWrite":1e3,"cost":{"total":0.1,"total":0.25}}"#,
        )
        .expect("plain");
        assert_eq!(
            (0..USAGE_FIELDS)
                .map(|f| usage.value(f))
                .collect::<Vec<_>>(),
            vec![1.0, 2.5, 0.0, 1000.0, 0.25]
        );
        for raw in [
            r#"{"input":"1","output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0}}"#,
            r#"{"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0}}"#,
            r#"{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{}}"#,
            r#"{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cost":5}"#,
            r#"{"input":null,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0}}"#,
            "[1,2]",
            "7",
        ] {
            assert_eq!(plain_usage(raw), None, "{raw}");
        }
    }

    /// JavaScript's truthiness of JSON values decides whether an optional usage is summed.
    #[test]
    fn truthiness_is_javascripts() {
        for raw in ["null", "false", "0", "-0", "0.0", "0e5", "\"\""] {
            assert!(!truthy(raw), "{raw}");
        }
        for raw in ["true", "1", "\" \"", "{}", "[]", "\"0\""] {
            assert!(truthy(raw), "{raw}");
        }
        assert_eq!(optional(Some("null")), UsageOf::Nothing);
        assert_eq!(optional(None), UsageOf::Nothing);
        assert_eq!(optional(Some("\"x\"")), UsageOf::Unreadable);
        assert_eq!(required(None), UsageOf::Unreadable);
    }

    /// Tool calls are the object items typed `toolCall`; a null item is unreadable; a content
    /// that is not an array has none.
    #[test]
    fn tool_calls_count_as_pi_filters() {
        assert_eq!(
            tool_calls(Some(
                r#"[{"type":"text"},{"type":"toolCall","id":1},{"type":"tool\u0043all"},7,"toolCall",[],{"type":"toolCall","type":"x"}]"#
            )),
            Some(2)
        );
        assert_eq!(tool_calls(Some(r#"[{"type":"toolCall"},null]"#)), None);
        assert_eq!(tool_calls(Some(r#""toolCall""#)), Some(0));
        assert_eq!(tool_calls(None), Some(0));
        let mut totals = UsageTotals::default();
        totals.count_message(1, Some(0));
        totals.count_message(2, Some(3));
        totals.count_message(15, Some(0));
        totals.count_message(3, None);
        assert_eq!(totals.messages_by_role, [1, 1, 1]);
        assert_eq!(totals.tool_calls, 3);
        assert!(totals.tool_calls_unreadable);
    }

    /// The totals add in file order as JavaScript's `+` does, and keep the last assistant's
    /// prompt fields.
    #[test]
    fn totals_add_in_order() {
        let mut totals = UsageTotals::default();
        let usage = |input: f64, cost: f64| {
            UsageOf::Plain(Usage {
                bits: [input, 1.0, 2.0, 3.0, cost].map(f64::to_bits),
            })
        };
        totals.add(usage(5.0, 0.1), true);
        totals.add(usage(7.0, 0.2), false);
        totals.add(UsageOf::Nothing, true);
        assert_eq!(totals.values(), [12.0, 2.0, 4.0, 6.0, 0.1 + 0.2]);
        assert_eq!(totals.last_prompt.map(f64::from_bits), [5.0, 2.0, 3.0]);
        assert!(totals.has_last && !totals.unreadable);
        totals.add(UsageOf::Unreadable, false);
        assert!(totals.unreadable);
    }
}
