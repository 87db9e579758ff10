//! Secrets in transcripts: finding them and taking them back.
//!
//! # Brief overview
//! A [`Matcher`] says what to look for: the built-in credential shapes ([`rules::built_in`],
//! a rule file in the format of format-spec/secret-rules.md), an exact text
//! ([`Matcher::literal`]) or a regex ([`Matcher::pattern`]). [`scan_file`] finds its matches in
//! the string values of a log, each a [`Finding`] with its line, entry id and JSON path (the
//! text masked for display). [`redact_file`] replaces them in place, keeping every line valid
//! JSON and every other byte as it was, under the log's writer lock, and rebuilds the sidecar;
//! [`check`] reads files and folders for any byte still spelling a redacted text.
//!
//! Modules: `rules` (the rule file), `matcher` (what to look for, and the prefilter over raw
//! bytes), `walk` (the strings of a JSON line with their paths), `scan` (a log's findings),
//! `redact` (the rewrite), `check` (the last check), `error`.

pub mod check;
mod error;
mod matcher;
mod redact;
pub mod rules;
mod scan;
mod walk;

pub use error::SecretsError;
pub use matcher::{Hit, LITERAL_RULE, Matcher, MatcherError, PATTERN_RULE, mask};
pub use redact::{Redacted, redact_bytes, redact_file, redact_line};
pub use rules::{Rule, RuleError};
pub use scan::{Finding, scan_file, scan_line};
