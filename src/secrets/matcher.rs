//! What `secrets` and `redact` look for (the rules, a literal text or a regex) and where in a
//! decoded string it is; plus the prefilter over raw log bytes that lets a scan skip the lines
//! that cannot hold a match. Pure: no I/O.

use std::ops::Range;

use regex::bytes::Regex as BytesRegex;

use super::rules::Rule;

/// The name a literal's finding carries in place of a rule id.
pub const LITERAL_RULE: &str = "literal";
/// The name a `--pattern` finding carries in place of a rule id.
pub const PATTERN_RULE: &str = "pattern";

/// A matcher could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatcherError {
    #[error("the literal text is empty")]
    EmptyLiteral,
    #[error("bad --pattern: {0}")]
    BadPattern(String),
    #[error("the pattern matches the empty text: it would match everywhere")]
    EmptyMatch,
}

/// One kind of thing to look for.
#[derive(Debug, Clone)]
enum Needle {
    Rule(Rule),
    Literal(String),
    Pattern(regex::Regex),
}

/// What to look for in the string values of a log, and the prefilter over its raw bytes.
#[derive(Debug, Clone)]
pub struct Matcher {
    needles: Vec<Needle>,
    /// Texts one of which every match contains in the raw bytes too; `None`: no such texts.
    keywords: Option<Vec<String>>,
    /// Matches every raw line that may hold a match: the needles' keywords, and `\u` (a string
    /// may spell any character as an escape). `None`: every line is read (a regex).
    prefilter: Option<BytesRegex>,
}

/// A match in a decoded string: its byte range and the rule (or `literal`, `pattern`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub range: Range<usize>,
    pub rule: String,
}

impl Matcher {
    /// The given rules (the built-in ones: [`super::rules::built_in`]).
    pub fn rules(rules: Vec<Rule>) -> Matcher {
        let keywords: Vec<String> = rules
            .iter()
            .flat_map(|rule| rule.keywords.iter().cloned())
            .collect();
        Matcher {
            prefilter: Some(prefilter(&keywords)),
            keywords: Some(keywords),
            needles: rules.into_iter().map(Needle::Rule).collect(),
        }
    }

    /// An exact text, case-sensitive.
    pub fn literal(text: &str) -> Result<Matcher, MatcherError> {
        if text.is_empty() {
            return Err(MatcherError::EmptyLiteral);
        }
        // A JSON writer may escape `"`, `\`, `/` and control characters, so only the longest
        // run of the text without them is sure to appear in the raw bytes as it is.
        let piece = text
            .split(|c: char| c == '"' || c == '\\' || c == '/' || c.is_control())
            .max_by_key(|piece| piece.len())
            .unwrap_or("");
        let keywords = (!piece.is_empty()).then(|| vec![piece.to_string()]);
        Ok(Matcher {
            needles: vec![Needle::Literal(text.to_string())],
            prefilter: keywords.as_deref().map(prefilter),
            keywords,
        })
    }

    /// A regular expression (Rust `regex` syntax) over each decoded string value.
    pub fn pattern(pattern: &str) -> Result<Matcher, MatcherError> {
        let regex =
            regex::Regex::new(pattern).map_err(|e| MatcherError::BadPattern(e.to_string()))?;
        if regex.is_match("") {
            return Err(MatcherError::EmptyMatch);
        }
        Ok(Matcher {
            needles: vec![Needle::Pattern(regex)],
            keywords: None,
            prefilter: None,
        })
    }

    /// Looks for what any of `matchers` looks for (an overlap goes to the one listed first).
    pub fn combine(matchers: Vec<Matcher>) -> Matcher {
        let mut keywords = Some(Vec::new());
        let mut needles = Vec::new();
        for matcher in matchers {
            keywords = keywords.zip(matcher.keywords).map(|(mut all, more)| {
                all.extend(more);
                all
            });
            needles.extend(matcher.needles);
        }
        Matcher {
            needles,
            prefilter: keywords.as_deref().map(prefilter),
            keywords,
        }
    }

    /// The first raw position at or after `from` in `bytes` where a line that may hold a
    /// match starts to show it; every position when there is no prefilter.
    pub fn next_candidate(&self, bytes: &[u8], from: usize) -> Option<usize> {
        match &self.prefilter {
            Some(prefilter) => prefilter.find_at(bytes, from).map(|found| found.start()),
            None => (from < bytes.len()).then_some(from),
        }
    }

    /// Whether the raw bytes of one JSON string (quotes included) may hold a match.
    pub fn may_match_raw(&self, raw: &[u8]) -> bool {
        self.prefilter
            .as_ref()
            .is_none_or(|prefilter| prefilter.is_match(raw))
    }

    /// The matches in a decoded string, in order, overlapping ones reduced to the first
    /// (earlier start; at equal starts, the rule listed first).
    pub fn find(&self, text: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        let mut ranges = Vec::new();
        for needle in &self.needles {
            ranges.clear();
            let rule = match needle {
                Needle::Rule(rule) => {
                    rule.find(text, &mut ranges);
                    rule.id.as_str()
                }
                Needle::Literal(literal) => {
                    ranges.extend(
                        text.match_indices(literal.as_str())
                            .map(|(at, found)| at..at + found.len()),
                    );
                    LITERAL_RULE
                }
                Needle::Pattern(regex) => {
                    ranges.extend(
                        regex
                            .find_iter(text)
                            .filter(|found| !found.is_empty())
                            .map(|found| found.range()),
                    );
                    PATTERN_RULE
                }
            };
            hits.extend(ranges.drain(..).map(|range| Hit {
                range,
                rule: rule.to_string(),
            }));
        }
        // Stable: equal starts keep the needles' order.
        hits.sort_by_key(|hit| hit.range.start);
        let mut kept: Vec<Hit> = Vec::with_capacity(hits.len());
        for hit in hits {
            if kept
                .last()
                .is_none_or(|last| hit.range.start >= last.range.end)
            {
                kept.push(hit);
            }
        }
        kept
    }
}

/// A regex matching any of `keywords` literally, or `\u`.
fn prefilter(keywords: &[String]) -> BytesRegex {
    let mut alternatives: Vec<String> = keywords.iter().map(|k| regex::escape(k)).collect();
    alternatives.push(regex::escape("\\u"));
    BytesRegex::new(&alternatives.join("|")).expect("escaped literals form a valid regex")
}

/// `text` masked for display: its first and last few characters around `…`, never more than
/// two fifths of it (`AKIA…7Q2X`); a text shorter than 8 characters shows none.
pub fn mask(text: &str) -> String {
    let count = text.chars().count();
    let shown = match count {
        0..8 => 0,
        8..12 => 1,
        12..20 => 2,
        _ => 4,
    };
    let head: String = text.chars().take(shown).collect();
    let tail: String = text.chars().skip(count - shown).collect();
    format!("{head}…{tail}")
}
