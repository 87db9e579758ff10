//! The original text of the entries that context edits remove or replace, searched on request
//! ([`super::SearchOptions::include_edited`]). The index never holds that text: its catalog
//! keeps only where each such entry is (`LogState::edited`: line and byte offset), so a search
//! reads those lines back from their logs, extracts their text as the index extracts it, and
//! matches it against the query with the index's analyzer and the query's own reading
//! ([`super::query::matches_text`]'s: words, phrases, prefixes and exclusions mean the same).
//!
//! Scores are BM25 with the index's statistics, as the engine scores a word or a phrase: for
//! each word or phrase clause, its occurrences in the original text against the text's length;
//! a prefix clause counts 1, as the engine's prefix query does. The originals are not in those
//! statistics (a word found only in them has the rarest word's weight), and the filters add
//! nothing, so an original's score is comparable with the index's hits, not equal to what the
//! same text indexed would score.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::Bm25Weight;
use tantivy::schema::Field;
use tantivy::snippet::SnippetGenerator;
use tantivy::{Searcher, Term};

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::branch::ActivePaths;
use super::extract::{Extracted, extract};
use super::query::{Clause, Filters, ParsedQuery};
use super::snippet::{read_line, snippet_of};
use super::store::{LogState, tokens};

/// An original text that matches, with where it is and how it shows.
pub(super) struct OriginalHit {
    /// The log's key in the index (hits of equal score are ordered by it).
    pub key: String,
    pub session: PathBuf,
    /// 1-based line of the entry in the log.
    pub line: u64,
    pub extracted: Extracted,
    pub timestamp_ms: Option<i64>,
    pub score: f32,
    pub snippet: String,
    pub highlights: Vec<Range<usize>>,
    pub active_path: bool,
    /// The agent whose session the log is.
    pub agent: &'static str,
}

/// What the originals of one search are matched and shown with.
pub(super) struct Matcher<'a> {
    pub searcher: &'a Searcher,
    pub text_field: Field,
    pub parsed: &'a ParsedQuery,
    pub filters: &'a Filters,
    pub snippets: &'a SnippetGenerator,
}

/// Every original text of the log `key` (at `session`, with its catalog `state`) that
/// matches, in file order. A line that can no longer be read, or no longer holds the entry's
/// text (the log changed since the refresh), is skipped.
pub(super) fn original_hits(
    key: &str,
    session: &Path,
    state: &LogState,
    matcher: &Matcher<'_>,
    active_paths: &mut ActivePaths,
) -> Vec<OriginalHit> {
    let mut found = Vec::new();
    for &[line, offset] in &state.edited {
        let Some(text) = read_line(session, offset) else {
            continue;
        };
        let Some(extracted) = extract(&text, state.legacy_v1) else {
            continue;
        };
        if !passes(matcher.filters, &extracted) {
            continue;
        }
        let Some(score) = score(matcher, &extracted.text) else {
            continue;
        };
        let (snippet, highlights) = snippet_of(&extracted.text, matcher.snippets);
        let active_path = active_paths.contains(session, &extracted.id, offset);
        let timestamp_ms = extracted
            .timestamp
            .as_deref()
            .and_then(crate::format::time::parse_iso_ms);
        found.push(OriginalHit {
            key: key.to_owned(),
            session: session.to_path_buf(),
            line,
            extracted,
            timestamp_ms,
            score,
            snippet,
            highlights,
            active_path,
            agent: active_paths.format(session).agent_name(),
        });
    }
    found
}

/// Whether the entry passes the filters, as the index's role, type and time fields do.
fn passes(filters: &Filters, extracted: &Extracted) -> bool {
    if !filters.roles.is_empty()
        && !extracted
            .role
            .as_ref()
            .is_some_and(|role| filters.roles.contains(role))
    {
        return false;
    }
    if filters
        .type_name
        .as_ref()
        .is_some_and(|type_name| *type_name != extracted.type_name)
    {
        return false;
    }
    if filters.since_ms.is_none() && filters.until_ms.is_none() {
        return true;
    }
    let Some(ms) = extracted
        .timestamp
        .as_deref()
        .and_then(crate::format::time::parse_iso_ms)
    else {
        return false;
    };
    filters.since_ms.is_none_or(|since| ms >= since)
        && filters.until_ms.is_none_or(|until| ms <= until)
}

/// The score of `text` for the query, `None` when it does not match.
fn score(matcher: &Matcher<'_>, text: &str) -> Option<f32> {
    let found = tokens(text);
    let fieldnorm_id =
        FieldNormReader::fieldnorm_to_id(u32::try_from(found.len()).unwrap_or(u32::MAX));
    let mut total = 0.0;
    for clause in &matcher.parsed.clauses {
        let count = occurrences(clause, &found);
        if clause.exclude {
            if count > 0 {
                return None;
            }
            continue;
        }
        if count == 0 {
            return None;
        }
        total += if clause.prefix {
            1.0
        } else {
            clause_score(matcher, clause, fieldnorm_id, count)
        };
    }
    Some(total)
}

/// BM25 of a word or phrase clause found `count` times; 1 when the index has no statistics
/// (an empty index).
fn clause_score(matcher: &Matcher<'_>, clause: &Clause, fieldnorm_id: u8, count: usize) -> f32 {
    let terms: Vec<Term> = clause
        .tokens
        .iter()
        .map(|token| Term::from_field_text(matcher.text_field, token))
        .collect();
    let score = Bm25Weight::for_terms(matcher.searcher, &terms)
        .map(|weight| weight.score(fieldnorm_id, u32::try_from(count).unwrap_or(u32::MAX)))
        .unwrap_or(1.0);
    if score.is_finite() { score } else { 1.0 }
}

/// How many times `clause` occurs in the tokens `found` (consecutive positions; the last
/// token a prefix when the clause is one), as [`super::query::matches_text`] reads it.
fn occurrences(clause: &Clause, found: &[(usize, String)]) -> usize {
    (0..found.len())
        .filter(|&start| {
            let position = found[start].0;
            clause.tokens.iter().enumerate().all(|(k, want)| {
                let Some((at, got)) = found.get(start + k) else {
                    return false;
                };
                let last = k + 1 == clause.tokens.len();
                *at == position + k
                    && if last && clause.prefix {
                        got.starts_with(want.as_str())
                    } else {
                        got == want
                    }
            })
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::super::query::{matches_text, parse};
    use super::*;

    /// A clause occurs in a text exactly when the query's reference reading finds it.
    #[test]
    fn occurrences_agree_with_the_reference_reading() {
        let text = "The build LOCK was held; build lock again, caching helps";
        let found = tokens(text);
        for (query, expected) in [
            ("build", 2),
            ("\"build lock\"", 2),
            ("\"lock build\"", 0),
            ("cach*", 1),
            ("cache*", 0),
            ("held", 1),
        ] {
            let parsed = parse(query).unwrap();
            let count = occurrences(&parsed.clauses[0], &found);
            assert_eq!(count, expected, "{query}");
            assert_eq!(count > 0, matches_text(&parsed, text), "{query}");
        }
    }
}
