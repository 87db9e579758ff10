//! `treelog search`: the entries of many sessions that hold some words, through the search
//! index kept beside them (`DIR/.treelog-search/`, or in the `--index-dir`; rebuilt from the
//! logs when needed, in memory with `--no-index-write`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use indicatif::ProgressBar;
use treelog::search::{Branches, Filters, Hit, Progress, RebuildReason, SearchOptions, SortOrder};

use crate::exit::{CliError, print_error};
use crate::out::Out;
use crate::progress;

/// Logs read above which a search shows a progress bar (on a terminal).
const BAR_BYTES_MIN: u64 = 64 << 20;
/// The highlight of matched words on a terminal: bold red, as grep colours matches.
const HIGHLIGHT_ON: &str = "\x1b[1;31m";
const HIGHLIGHT_OFF: &str = "\x1b[0m";

/// Find the entries of sessions that hold some words.
///
/// QUERY: words must all appear (case-insensitive), "a phrase" needs its words in order,
/// -word excludes entries holding the word, word* matches words starting with it. Searched:
/// user and assistant text, thinking, tool calls and results, bash commands and output,
/// custom messages, summaries, session names and labels (never keys, ids or images).
///
/// Each PATH is a session file or a directory searched recursively for *.jsonl (default: the
/// current directory). The index lives in DIR/.treelog-search/, or with --index-dir D in
/// D/search-<hash of DIR's path>/ (for a file, its directory's); each search first brings it
/// up to date with the logs, and rebuilds it with a one-line notice when it is missing or
/// unusable. With --no-index-write nothing is written: a current index is read as it is, and
/// otherwise the logs are indexed in memory for this search (same hits, slower, with a notice).
///
/// A PATH may name OpenClaw sessions (read-only; see `treelog openclaw --help`): one session
/// `openclaw://[STATE_DIR#]AGENT/SESSION_ID`, every session of an agent
/// `openclaw://[STATE_DIR#]AGENT`, or every agent's `openclaw://STATE_DIR#` (`openclaw://` for
/// the default state directory). Its rows are searched as the same lines in a JSONL file (the
/// flags act as on such a file), hits name the session as `openclaw://...#AGENT/SESSION_ID:LINE`
/// written as the PATH writes it, and the copies of the rows and their index are kept in a
/// cache folder (`openclaw-<hash of the database's path>/` in --index-dir, else in
/// $XDG_CACHE_HOME/treelog or ~/.cache/treelog), checked against the rows on every search.
///
/// A PATH may name logs on an S3-compatible object store (the store named by the environment,
/// as for push and pull): one log `s3://BUCKET/KEY`, or every log below a prefix
/// `s3://BUCKET/PREFIX/` (or `s3://BUCKET`), at any depth, as a directory; a KEY that holds no
/// log but has logs below `KEY/` is that prefix. Each log is searched as a local copy of its
/// bytes, so the hits, lines, snippets and flags are those of the same files in a directory;
/// hits name the log as `s3://BUCKET/KEY:LINE`. The copies and their index are kept in a cache
/// folder per prefix (`s3-<hash of the store, bucket and prefix>/` in --index-dir, else in
/// $XDG_CACHE_HOME/treelog or ~/.cache/treelog); each search reads only the segments appended
/// since the last one, and compares a copy with the log byte for byte when the segments are not
/// those it was read from (after `treelog compact`).
///
/// Context edits are followed: a message taken out of the model's view (pi's `context_edit`
/// with `replacement: null`) is not in the index at all, and a replaced one is found and shown
/// by its replacement's text, marked `[edited]` (`"edited": true` in --json). Each hit says
/// whether it is on its session's active path (the path from the leaf the session opens at);
/// --branch active keeps only those. With --include-edited the original text of the entries
/// that edits removed or replaced is searched too, read back from the logs (the index never
/// holds it), and such hits are marked `[original]` (`"original": true` in --json).
///
/// Output: one hit per line,
/// `FILE:LINE  ROLE  TIMESTAMP  [AGENT] [edited] [original] [off-path] snippet`
/// (the markers only when they apply; AGENT for another agent's session than pi's).
///
/// Claude Code sessions (~/.claude/projects) and Codex rollouts (~/.codex/sessions) found
/// under a PATH are searched too, read-only (their messages, tool calls and results,
/// thinking, summaries and titles); each hit names its agent ("agent" in --json: pi, claude,
/// codex) and --agent keeps one agent's. Exit 0 when there is a hit, 1 when there is none, 2 on
/// bad usage or an unreadable PATH (an OpenClaw address: a missing state directory, database,
/// agent or session, or a row that does not decode, named after the address; an s3:// address:
/// no such log or bucket, or a segment that cannot be read, named with the store's answer).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The words to find (a query may start with -word).
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    /// Session files, directories to search for *.jsonl (default: the current directory),
    /// OpenClaw sessions: openclaw://[STATE_DIR#]AGENT[/SESSION_ID], openclaw://STATE_DIR#, or
    /// logs on an object store: s3://BUCKET/KEY, s3://BUCKET/PREFIX/.
    pub paths: Vec<PathBuf>,
    /// Only messages of this role (tool: tool results and bash executions).
    #[arg(long, value_enum)]
    pub role: Option<Role>,
    /// Only entries of this type (message, compaction, branch_summary, custom_message,
    /// session_info, label).
    #[arg(long = "type", value_name = "TYPE")]
    pub type_name: Option<String>,
    /// Only entries at or after this ISO time (a date alone is its midnight, UTC).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only entries at or before this ISO time (a date alone includes that whole day, UTC).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Hits shown at most.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: u64,
    /// Order of hits: best match first, or latest first; equal ones by session, then line.
    #[arg(long, value_enum, default_value_t = Sort::Score)]
    pub sort: Sort,
    /// Which branches' entries are hits: all (default), or only those on their session's
    /// active path (from the leaf the session opens at to the root).
    #[arg(long, value_enum, default_value_t = Branch::All)]
    pub branch: Branch,
    /// Also search the original text of entries a context edit removed or replaced (read
    /// from the logs; the index never holds it); such hits are marked [original].
    #[arg(long)]
    pub include_edited: bool,
    /// One JSON object per hit: {"session","line","id","type","role","timestamp","score",
    /// "snippet","edited","activePath","agent"}; `edited`: a context edit replaced the entry's text
    /// (the hit is the replacement's), `activePath`: the entry is on its session's active path.
    /// With --include-edited each object ends with `original`: the hit is the entry's original
    /// text, which a context edit removed or replaced.
    #[arg(long)]
    pub json: bool,
    /// Only the sessions of this agent: pi, claude (Claude Code), codex (Codex CLI) or
    /// openclaw (OpenClaw sessions named by openclaw:// addresses).
    #[arg(long, value_enum)]
    pub agent: Option<Agent>,
}

/// An agent whose sessions `--agent` keeps.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Pi,
    Claude,
    Codex,
    Openclaw,
}

impl Agent {
    /// Whether `hit` is from a session of this agent (an OpenClaw session's hit is named by
    /// its openclaw:// address; its lines are pi's).
    fn keeps(self, hit: &Hit) -> bool {
        let openclaw = hit
            .session
            .to_str()
            .is_some_and(|s| s.starts_with("openclaw://"));
        match self {
            Agent::Openclaw => openclaw,
            Agent::Pi => hit.agent == "pi" && !openclaw,
            Agent::Claude => hit.agent == "claude",
            Agent::Codex => hit.agent == "codex",
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    All,
    Active,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The role's name in the library's terms (`treelog::search::roles_named`).
    fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Score,
    Newest,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let query = treelog::search::parse(&args.query)?;
    let sidecars = crate::sidecars::options();
    let options = SearchOptions {
        filters: Filters {
            roles: args
                .role
                .and_then(|role| treelog::search::roles_named(role.name()))
                .unwrap_or_default(),
            type_name: args.type_name.clone(),
            since_ms: args
                .since
                .as_deref()
                .map(|text| time_ms(text, "--since", false))
                .transpose()?,
            until_ms: args
                .until
                .as_deref()
                .map(|text| time_ms(text, "--until", true))
                .transpose()?,
        },
        // With --agent every hit is read and the limit applies to the agent's.
        limit: match args.agent {
            Some(_) => usize::MAX,
            None => usize::try_from(args.limit).unwrap_or(usize::MAX),
        },
        sort: match args.sort {
            Sort::Score => SortOrder::Score,
            Sort::Newest => SortOrder::Newest,
        },
        index_dir: sidecars.index_dir,
        index_write: sidecars.index_write,
        branches: match args.branch {
            Branch::All => Branches::All,
            Branch::Active => Branches::Active,
        },
        include_edited: args.include_edited,
    };
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let notices = Notices::new(BAR_BYTES_MIN);
    let hits = treelog::search::search_paths(&paths, &query, &options, &notices);
    notices.finish();
    let mut hits = hits?;
    if let Some(agent) = args.agent {
        hits.retain(|hit| agent.keeps(hit));
        hits.truncate(usize::try_from(args.limit).unwrap_or(usize::MAX));
    }
    let highlight = !args.json && std::io::stdout().is_terminal();
    for hit in &hits {
        if args.json {
            out.line(&hit.to_json())?;
        } else if highlight {
            out.styled_line(&human_line(hit, true))?;
        } else {
            out.line(&human_line(hit, false))?;
        }
    }
    if hits.is_empty() {
        return Err(CliError::NoMatch);
    }
    Ok(())
}

/// An ISO time of `--since` / `--until`; a date alone ends at its last millisecond for
/// `--until`.
fn time_ms(text: &str, flag: &str, end_of_day: bool) -> Result<i64, CliError> {
    treelog::search::time_bound_ms(text, end_of_day).ok_or_else(|| {
        CliError::Usage(format!(
            "{flag} {text}: not an ISO time (e.g. 2025-01-31 or 2025-01-31T12:00:00Z)"
        ))
    })
}

/// `FILE:LINE  ROLE  TIMESTAMP  snippet`, matched words highlighted when `highlight` (on a
/// terminal: then every part from the logs is escaped here, the highlight's own sequences
/// kept).
fn human_line(hit: &Hit, highlight: bool) -> String {
    let shown = |text: &str| -> String {
        if highlight {
            crate::terminal::escape_controls(text).into_owned()
        } else {
            text.to_owned()
        }
    };
    let mut snippet = String::with_capacity(hit.snippet.len() + 16);
    let mut at = 0;
    for range in &hit.highlights {
        let Some(word) = hit.snippet.get(range.clone()) else {
            continue;
        };
        if range.start < at {
            continue;
        }
        snippet.push_str(&shown(&hit.snippet[at..range.start]));
        if highlight {
            snippet.push_str(HIGHLIGHT_ON);
            snippet.push_str(&shown(word));
            snippet.push_str(HIGHLIGHT_OFF);
        } else {
            snippet.push_str(word);
        }
        at = range.end;
    }
    snippet.push_str(&shown(&hit.snippet[at..]));
    format!(
        "{}:{}  {}  {}  {}{}{}{}{}",
        shown(&hit.session.display().to_string()),
        hit.line,
        shown(hit.role.as_deref().unwrap_or(&hit.type_name)),
        shown(hit.timestamp.as_deref().unwrap_or("-")),
        match hit.agent {
            "pi" => String::new(),
            agent => format!("[{agent}] "),
        },
        if hit.edited { "[edited] " } else { "" },
        if hit.original == Some(true) {
            "[original] "
        } else {
            ""
        },
        if hit.active_path { "" } else { "[off-path] " },
        snippet
    )
}

/// Tells the user what a search or reindex does to an index: one line on stderr per
/// rebuild, and a progress bar when many bytes are read (on a terminal only).
pub struct Notices {
    bar_bytes_min: u64,
    bar: Mutex<Option<ProgressBar>>,
}

impl Notices {
    pub fn new(bar_bytes_min: u64) -> Notices {
        Notices {
            bar_bytes_min,
            bar: Mutex::new(None),
        }
    }

    pub fn finish(&self) {
        if let Ok(mut bar) = self.bar.lock()
            && let Some(bar) = bar.take()
        {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Notices {
    fn rebuilding(&self, index_dir: &Path, reason: &RebuildReason) {
        let line = reason.notice(index_dir);
        match self.bar.lock().ok().as_deref() {
            Some(Some(bar)) => bar.suspend(|| print_error(&line)),
            _ => print_error(&line),
        }
    }

    fn planned(&self, bytes: u64) {
        if bytes >= self.bar_bytes_min
            && let Ok(mut bar) = self.bar.lock()
        {
            if let Some(old) = bar.take() {
                old.finish_and_clear();
            }
            *bar = Some(progress::bytes(bytes));
        }
    }

    fn indexed(&self, bytes: u64) {
        if let Ok(bar) = self.bar.lock()
            && let Some(bar) = bar.as_ref()
        {
            bar.inc(bytes);
        }
    }
}
