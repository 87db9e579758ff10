//! The query syntax of `treelog search` (format-spec/search.md) and its translation into the
//! engine's query: words are ANDed, `"a phrase"` matches consecutive words, `-word` (or
//! `-"a phrase"`) excludes, `word*` is a prefix. Case-insensitive and Unicode-aware because
//! every word goes through the same analyzer as the indexed text ([`super::store::analyzer`]):
//! the tokenizer is tantivy's, never a hand-written one.

use std::ops::Bound;

use tantivy::Term;
use tantivy::query::{BooleanQuery, Occur, PhrasePrefixQuery, Query, RegexQuery, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};

use super::error::SearchError;
use super::phrase::TopPhraseQuery;
use super::store::{Fields, tokens};

/// Clauses in one query at most: a bound on the work one query can ask for.
pub const CLAUSES_MAX: usize = 64;

/// One clause of a parsed query: consecutive tokens (one for a plain word), the last of which
/// is a prefix when `prefix` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clause {
    pub tokens: Vec<String>,
    pub prefix: bool,
    pub exclude: bool,
}

/// A parsed query: at least one clause that is not excluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedQuery {
    pub clauses: Vec<Clause>,
}

/// Which entries a search may return besides the words they hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// Message roles accepted (`toolResult`, ...); empty accepts every entry.
    pub roles: Vec<String>,
    /// The entry `type` accepted, when set.
    pub type_name: Option<String>,
    /// Entries at or after this time (epoch ms).
    pub since_ms: Option<i64>,
    /// Entries at or before this time (epoch ms).
    pub until_ms: Option<i64>,
}

/// The roles a user's `role` filter accepts: `user`, `assistant`, or `tool` (tool results and
/// bash executions); `None` for any other word.
pub fn roles_named(role: &str) -> Option<Vec<String>> {
    let roles: &[&str] = match role {
        "user" => &["user"],
        "assistant" => &["assistant"],
        "tool" => &["toolResult", "bashExecution"],
        _ => return None,
    };
    Some(roles.iter().map(|role| (*role).to_owned()).collect())
}

/// The epoch ms of a `since` / `until` bound written as an ISO time. A date alone is its
/// midnight UTC, or with `end_of_day` (an `until`) its last millisecond, so that the bound
/// includes that whole day. `None` when `text` is not an ISO time.
pub fn time_bound_ms(text: &str, end_of_day: bool) -> Option<i64> {
    let ms = crate::format::time::parse_iso_ms(text)?;
    let date_only = text.len() == 10 && !text.contains('T');
    Some(if end_of_day && date_only {
        ms + 86_400_000 - 1
    } else {
        ms
    })
}

/// Parses the query text. A bad query is an error that says why in the user's words.
pub fn parse(text: &str) -> Result<ParsedQuery, SearchError> {
    let mut clauses = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let mut exclude = false;
        if let Some(after) = rest.strip_prefix('-')
            && !after.is_empty()
            && !after.starts_with(char::is_whitespace)
        {
            exclude = true;
            rest = after;
        }
        let (written, prefix, after) = if let Some(inside) = rest.strip_prefix('"') {
            let Some(end) = inside.find('"') else {
                return Err(bad(format!("the phrase {rest} has no closing quote")));
            };
            (&inside[..end], false, &inside[end + 1..])
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            let word = &rest[..end];
            let stem = word.trim_end_matches('*');
            (stem, stem.len() != word.len(), &rest[end..])
        };
        let found = tokens(written);
        if found.is_empty() {
            if !written.trim().is_empty() || !prefix {
                return Err(bad(format!(
                    "`{}` holds no letters or digits to search for",
                    written.trim()
                )));
            }
            return Err(bad("`*` needs letters or digits before it".into()));
        }
        clauses.push(Clause {
            tokens: found.into_iter().map(|(_, token)| token).collect(),
            prefix,
            exclude,
        });
        if clauses.len() > CLAUSES_MAX {
            return Err(bad(format!("more than {CLAUSES_MAX} words or phrases")));
        }
        rest = after.trim_start();
    }
    if clauses.is_empty() {
        return Err(bad("the query is empty".into()));
    }
    if clauses.iter().all(|clause| clause.exclude) {
        return Err(bad(
            "every word is excluded (-word): name at least one word to find".into(),
        ));
    }
    Ok(ParsedQuery { clauses })
}

fn bad(reason: String) -> SearchError {
    SearchError::BadQuery { reason }
}

/// The engine's query for `parsed` with `filters`.
pub fn to_engine(parsed: &ParsedQuery, filters: &Filters, fields: &Fields) -> Box<dyn Query> {
    let mut parts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for clause in &parsed.clauses {
        let occur = if clause.exclude {
            Occur::MustNot
        } else {
            Occur::Must
        };
        parts.push((occur, clause_query(clause, fields.text)));
    }
    if !filters.roles.is_empty() {
        let roles = filters
            .roles
            .iter()
            .map(|role| (Occur::Should, exact(fields.role, role)))
            .collect();
        parts.push((Occur::Must, Box::new(BooleanQuery::new(roles))));
    }
    if let Some(type_name) = &filters.type_name {
        parts.push((Occur::Must, exact(fields.type_name, type_name)));
    }
    if filters.since_ms.is_some() || filters.until_ms.is_some() {
        let bound = |value: Option<i64>| match value {
            Some(ms) => Bound::Included(Term::from_field_i64(fields.timestamp_ms, ms)),
            None => Bound::Unbounded,
        };
        parts.push((
            Occur::Must,
            Box::new(tantivy::query::RangeQuery::new(
                bound(filters.since_ms),
                bound(filters.until_ms),
            )),
        ));
    }
    // One required clause alone is run as itself: a lone term query then skips the blocks of
    // documents that cannot reach the top hits (block-max WAND), which the engine does not do
    // for a boolean query of one clause. Its scores are the same.
    if parts.len() == 1
        && parts[0].0 == Occur::Must
        && let Some((_, only)) = parts.pop()
    {
        return only;
    }
    Box::new(BooleanQuery::new(parts))
}

fn exact(field: Field, value: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
}

fn clause_query(clause: &Clause, field: Field) -> Box<dyn Query> {
    let terms: Vec<Term> = clause
        .tokens
        .iter()
        .map(|token| Term::from_field_text(field, token))
        .collect();
    match (terms.len(), clause.prefix) {
        (1, false) => Box::new(TermQuery::new(
            terms[0].clone(),
            IndexRecordOption::WithFreqs,
        )),
        (1, true) => {
            let pattern = format!("{}.*", regex_escape(&clause.tokens[0]));
            match RegexQuery::from_pattern(&pattern, field) {
                Ok(query) => Box::new(query),
                // The pattern is an escaped literal: it always compiles. Were it not, the
                // clause would match nothing rather than everything.
                Err(_) => Box::new(BooleanQuery::new(Vec::new())),
            }
        }
        (_, false) => Box::new(TopPhraseQuery::new(field, terms)),
        (_, true) => {
            let mut query = PhrasePrefixQuery::new(terms);
            // Every term with the prefix, as the brute-force reading of the same query finds.
            query.set_max_expansions(u32::MAX);
            Box::new(query)
        }
    }
}

/// Escapes the ASCII characters the regex syntax gives a meaning; a token holds letters and
/// digits (and the marks lower-casing may add), which are literals.
fn regex_escape(token: &str) -> String {
    let mut escaped = String::with_capacity(token.len());
    for c in token.chars() {
        if c.is_ascii() && !c.is_ascii_alphanumeric() {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Whether `text` matches `parsed`, read the slow way: tokenize it and look for every clause.
/// The tests' brute-force reference, and the meaning the engine's query must have.
pub fn matches_text(parsed: &ParsedQuery, text: &str) -> bool {
    let found = tokens(text);
    parsed.clauses.iter().all(|clause| {
        let hit = found.iter().enumerate().any(|(start, (position, _))| {
            clause.tokens.iter().enumerate().all(|(k, want)| {
                let Some((at, got)) = found.get(start + k) else {
                    return false;
                };
                let consecutive = *at == position + k;
                let last = k + 1 == clause.tokens.len();
                consecutive
                    && if last && clause.prefix {
                        got.starts_with(want.as_str())
                    } else {
                        got == want
                    }
            })
        });
        hit != clause.exclude
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clause(tokens: &[&str], prefix: bool, exclude: bool) -> Clause {
        Clause {
            tokens: tokens.iter().map(|token| token.to_string()).collect(),
            prefix,
            exclude,
        }
    }

    /// The query syntax parses into the clauses it means, lower-cased and split as the text is.
    #[test]
    fn parses_words_phrases_exclusions_and_prefixes() {
        let cases: &[(&str, Vec<Clause>)] = &[
            ("Tokio", vec![clause(&["tokio"], false, false)]),
            (
                "lock -Tokio",
                vec![
                    clause(&["lock"], false, false),
                    clause(&["tokio"], false, true),
                ],
            ),
            (
                "\"Build Lock\" cach*",
                vec![
                    clause(&["build", "lock"], false, false),
                    clause(&["cach"], true, false),
                ],
            ),
            (
                "-\"a b\" c",
                vec![
                    clause(&["a", "b"], false, true),
                    clause(&["c"], false, false),
                ],
            ),
            (
                "src/main.rs",
                vec![clause(&["src", "main", "rs"], false, false)],
            ),
            (
                "ÉTÉ straße",
                vec![
                    clause(&["été"], false, false),
                    clause(&["straße"], false, false),
                ],
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                parse(text).map(|parsed| parsed.clauses).ok().as_ref(),
                Some(expected),
                "{text}"
            );
        }
    }

    /// A query that cannot mean anything is refused with a reason, never run.
    /// A date alone bounds from its midnight, and an `until` date includes its whole day; a
    /// full time is taken as written; anything else is not a bound.
    #[test]
    fn time_bounds() {
        let midnight_ms = 1_738_281_600_000; // 2025-01-31T00:00:00Z
        for (text, end_of_day, expected) in [
            ("2025-01-31", false, Some(midnight_ms)),
            ("2025-01-31", true, Some(midnight_ms + 86_400_000 - 1)),
            (
                "2025-01-31T12:00:00Z",
                false,
                Some(midnight_ms + 43_200_000),
            ),
            ("2025-01-31T12:00:00Z", true, Some(midnight_ms + 43_200_000)),
            ("31/01/2025", false, None),
            ("yesterday", true, None),
        ] {
            assert_eq!(time_bound_ms(text, end_of_day), expected, "{text}");
        }
    }

    /// `tool` stands for both kinds of tool output; an unknown role is refused.
    #[test]
    fn role_names() {
        assert_eq!(roles_named("user"), Some(vec!["user".to_owned()]));
        assert_eq!(
            roles_named("tool"),
            Some(vec!["toolResult".to_owned(), "bashExecution".to_owned()])
        );
        assert_eq!(roles_named("toolResult"), None);
        assert_eq!(roles_named("User"), None);
    }

    #[test]
    fn refuses_bad_queries() {
        for text in ["", "   ", "-word", "\"open phrase", "!!!", "*"] {
            let error = parse(text).expect_err(text);
            assert!(
                matches!(error, SearchError::BadQuery { .. }),
                "{text}: {error}"
            );
        }
    }

    /// The reference reading: phrases need consecutive words, prefixes match word starts.
    #[test]
    fn brute_force_reading() {
        let text = "The build LOCK was held; caching helps";
        let cases = [
            ("build lock", true),
            ("\"build lock\"", true),
            ("\"lock build\"", false),
            ("cach*", true),
            ("cache*", false),
            ("build -held", false),
            ("build -hold", true),
        ];
        for (query, expected) in cases {
            assert_eq!(
                matches_text(&parse(query).unwrap(), text),
                expected,
                "{query}"
            );
        }
    }
}
