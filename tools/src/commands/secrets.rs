//! `treelog secrets`: the likely secrets in logs, masked, with where each is (the library's
//! `treelog::secrets` finds them; this prints).

use std::path::{Path, PathBuf};

use serde_json::json;
use treelog::secrets::{Finding, Matcher, scan_file};

use crate::exit::{CliError, print_error};
use crate::files::{Found, collect_logs, nothing_found};
use crate::out::Out;

/// List likely secrets in session logs: API keys, tokens, private keys, passwords in URLs.
///
/// Reads the logs themselves (never an index) and looks inside every JSON string value (and
/// key) of every line for the built-in credential shapes: cloud keys (AWS, Google), GitHub,
/// GitLab, Slack, OpenAI, Anthropic, Stripe and Hugging Face tokens, private key blocks, JSON
/// Web Tokens and URLs with a password (the rule file: format-spec/secret-rules.md). With
/// --literal or --pattern, looks for those instead (both may be repeated and combined; add
/// --rules to keep the built-in shapes too).
///
/// Each finding is printed masked (`AKIA…7Q2X`: a secret is never printed whole) as
/// `FILE:LINE  ENTRY_ID  JSON_PATH  RULE  MASKED`, where JSON_PATH is where the text is inside
/// the entry (`message.content[2].text`; `(not JSON)` for a line that is not JSON). `treelog
/// redact` replaces what this finds.
///
/// Exit codes: 0 something was found, 1 nothing was found, 2 a file could not be read or the
/// options are wrong.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Session logs (.jsonl) and directories to search for *.jsonl (local files: copy an s3:// or
    /// openclaw:// session first).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Look for this exact text (case-sensitive) instead of the built-in shapes.
    #[arg(long, value_name = "TEXT")]
    pub literal: Vec<String>,
    /// Look for this regular expression (Rust regex syntax, matched inside each string value)
    /// instead of the built-in shapes.
    #[arg(long, value_name = "REGEX")]
    pub pattern: Vec<String>,
    /// Look for the built-in shapes as well as --literal and --pattern.
    #[arg(long)]
    pub rules: bool,
    /// One JSON object per finding: {"path", "line", "id", "jsonPath", "inKey", "rule",
    /// "masked"} (`jsonPath` null for a line that is not JSON); a file that could not be read is
    /// {"path", "kind": "failed", "message"}.
    #[arg(long)]
    pub json: bool,
}

/// The matcher the options ask for.
pub fn matcher(literals: &[String], patterns: &[String], rules: bool) -> Result<Matcher, CliError> {
    let mut matchers = Vec::new();
    if rules || (literals.is_empty() && patterns.is_empty()) {
        matchers.push(Matcher::rules(treelog::secrets::rules::built_in()));
    }
    for literal in literals {
        matchers.push(
            Matcher::literal(literal).map_err(|e| CliError::Usage(format!("--literal: {e}")))?,
        );
    }
    for pattern in patterns {
        matchers.push(Matcher::pattern(pattern).map_err(|e| CliError::Usage(e.to_string()))?);
    }
    Ok(Matcher::combine(matchers))
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let matcher = matcher(&args.literal, &args.pattern, args.rules)?;
    for path in &args.paths {
        if let Some(text) = path.to_str()
            && (text.starts_with("s3://") || text.starts_with("openclaw://"))
        {
            return Err(CliError::input(
                text,
                "secrets reads local logs only, for now: copy the session first (`treelog pull` for s3://, `treelog openclaw export` for openclaw://)",
            ));
        }
    }
    let found: Vec<Found> = collect_logs(&args.paths);
    if found.is_empty() {
        crate::terminal::eprint_line(&nothing_found(&args.paths));
        return Err(CliError::NoMatch);
    }
    let (mut findings, mut failed) = (0u64, 0u64);
    for log in found {
        let result = log.and_then(|log| {
            let found = scan_file(&log.path, &matcher)?;
            Ok((log.path, found))
        });
        match result {
            Ok((path, found)) => {
                findings += found.len() as u64;
                for finding in &found {
                    print_finding(&path, finding, args.json, out)?;
                }
            }
            Err(error) => {
                failed += 1;
                if args.json {
                    let line = json!({"path": error.path().map(|path| path.display().to_string()),
                        "kind": "failed", "message": error.to_string()});
                    out.line(&line.to_string())?;
                } else {
                    print_error(&error);
                }
            }
        }
    }
    if failed > 0 {
        return Err(CliError::SomeFailed { count: failed });
    }
    if findings == 0 {
        return Err(CliError::NoMatch);
    }
    Ok(())
}

/// One finding, as a line of text or a JSON object.
pub fn print_finding(
    path: &Path,
    finding: &Finding,
    as_json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    if as_json {
        let line = json!({
            "path": path.display().to_string(),
            "line": finding.line,
            "id": finding.entry_id,
            "jsonPath": finding.json_path,
            "inKey": finding.in_key,
            "rule": finding.rule,
            "masked": finding.masked,
        });
        return out.line(&line.to_string());
    }
    out.line(&format!(
        "{}:{}  {}  {}{}  {}  {}",
        path.display(),
        finding.line,
        finding.entry_id.as_deref().unwrap_or("-"),
        finding.json_path.as_deref().unwrap_or("(not JSON)"),
        if finding.in_key { " (key)" } else { "" },
        finding.rule,
        finding.masked
    ))
}
