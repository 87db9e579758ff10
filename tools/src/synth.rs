//! Synthetic transcripts shaped like pi's (tests/data/pi-sample-200.jsonl), written through
//! the library. Deterministic for a seed: every choice and every message `timestamp` comes
//! from a small PRNG; only the entry timestamps and ids come from the library (clock, random).
//!
//! Entries are queued as a chain from the leaf and handed over in one call whenever an id is
//! needed (a branch, a label, a compaction) or 256 are queued. Two writers produce the same
//! lines but for their ids: the session API hands ids out in runs (format-spec/log.md §3), the
//! bulk writer draws each at random, as pi does. [`Writer::Session`] appends each chain with the session API
//! (`Session::append_many`, `Session::branch`; `Durability::None`): one lock, one write and
//! one read-back per chain. [`Writer::Bulk`] encodes each line with the library's own encoder
//! (`NewEntry::encode`, `new_entry_id`), writes them through one buffer and then indexes the
//! file with one `Session::open`.

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use treelog::{Durability, NewEntry, Session, SessionOptions};

use crate::exit::CliError;

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenOptions {
    pub entries: u64,
    pub seed: u64,
    /// Chance, per entry, of branching back to an earlier entry on the current path.
    pub branch_rate: f64,
    /// A compaction every this many entries (0: never).
    pub compact_every: u64,
    /// Average payload bytes of a message entry.
    pub payload_bytes: usize,
    /// Chance, per turn, of a pi 1.6 `context_edit` of a recent entry on the path (a third
    /// remove it from the context, the rest replace its content) and of a `usage` entry.
    pub edit_rate: f64,
    pub cwd: String,
    pub writer: Writer,
}

/// How entries reach the log (the same lines either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// `Session::append_many` per chain of entries between branch points.
    Session,
    /// Lines encoded by the library and written in bulk, then indexed by one open.
    Bulk,
}

/// What was generated.
#[derive(Clone, Debug, Default)]
pub struct GenSummary {
    pub entries: u64,
    pub messages: u64,
    pub branches: u64,
    pub compactions: u64,
    pub labels: u64,
    pub context_edits: u64,
    pub log_bytes: u64,
    pub elapsed: Duration,
    /// Of `elapsed`, the time spent indexing after the lines were written (bulk writer).
    pub index_elapsed: Duration,
}

/// splitmix64 seeding a xorshift64* stream: tiny, fast and the same on every platform.
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng { state: z.max(1) }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    pub fn chance(&mut self, probability: f64) -> bool {
        let uniform = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        uniform < probability
    }

    /// A uniformly chosen item of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "the",
    "index",
    "append",
    "session",
    "leaf",
    "branch",
    "tree",
    "parent",
    "entry",
    "context",
    "model",
    "thinking",
    "level",
    "compaction",
    "summary",
    "label",
    "header",
    "cwd",
    "path",
    "json",
    "line",
    "parse",
    "write",
    "read",
    "fsync",
    "crash",
    "torn",
    "tail",
    "lock",
    "retry",
    "cache",
    "snapshot",
    "rebuild",
    "verify",
    "repair",
    "migrate",
    "version",
    "schema",
    "id",
    "uuid",
    "timestamp",
    "latency",
    "throughput",
    "p50",
    "p99",
    "memory",
    "rss",
    "heap",
    "buffer",
    "stream",
    "tokio",
    "serde",
    "redb",
    "rust",
    "crate",
    "function",
    "return",
    "error",
    "warning",
    "test",
    "benchmark",
    "check",
    "fix",
    "build",
    "we",
    "it",
    "should",
    "could",
    "is",
    "not",
    "and",
    "as",
    "at",
    "then",
    "because",
    "user",
    "assistant",
    "tool",
    "call",
    "result",
    "input",
    "output",
    "usage",
    "cost",
    "token",
    "request",
    "response",
    "directory",
    "file",
    "open",
    "close",
    "list",
    "resume",
    "fork",
    "value",
    "arguments",
    "expected",
    "me",
    "this",
    "let",
    "café",
    "日本語",
    "Ωmega",
    "naïve",
    "🚀",
];

const TOOLS: &[&str] = &["read", "write", "edit", "bash"];
const EXTENSIONS: &[&str] = &["rs", "ts", "md", "toml", "json"];
const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high"];
/// (provider, model, api)
const MODELS: &[(&str, &str, &str)] = &[
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
];
/// Ids of the current path kept for choosing branch points, compaction and label targets.
const PATH_TAIL_MAX: usize = 512;
/// Entries queued before they are appended in one call (bounds memory between branches).
const PENDING_MAX: usize = 256;

/// Appends `text` as a JSON string literal.
fn push_json_str(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let mut start = 0;
    for (position, byte) in text.bytes().enumerate() {
        let escaped = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\t' => "\\t",
            b'\r' => "\\r",
            0..=0x1f => "",
            _ => continue,
        };
        // `position` is at an ASCII byte, so both slices end on character boundaries.
        out.push_str(&text[start..position]);
        if escaped.is_empty() {
            out.push_str(&format!("\\u{byte:04x}"));
        } else {
            out.push_str(escaped);
        }
        start = position + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// Bytes of word soup generated once per run; message texts are slices of it, so building a
/// payload costs a copy, not a word-by-word walk. Small enough to stay in the CPU cache.
const CORPUS_LEN: usize = 512 * 1024;

/// Random words, already escaped as the inside of a JSON string literal (line breaks are
/// `\n`), with the byte range of every word so slices start and end on whole words.
struct Corpus {
    text: String,
    /// Start and end of each word in `text`, in order.
    words: Vec<(u32, u32)>,
}

impl Corpus {
    fn new(rng: &mut Rng) -> Corpus {
        let mut text = String::with_capacity(CORPUS_LEN + 64);
        let mut words = Vec::with_capacity(CORPUS_LEN / 5);
        while text.len() < CORPUS_LEN {
            if !text.is_empty() {
                text.push_str(if rng.below(12) == 0 { "\\n" } else { " " });
            }
            let start = text.len() as u32;
            let word: &&str = rng.pick(WORDS);
            text.push_str(word);
            if rng.below(10) == 0 {
                text.push('.');
            }
            words.push((start, text.len() as u32));
        }
        Corpus { text, words }
    }

    /// A run of whole words of about `low..=high` bytes (escaped), starting at a random word.
    fn slice(&self, rng: &mut Rng, low: usize, high: usize) -> &str {
        let target = rng.between(low as u64, high.max(low) as u64) as u32;
        let last = self.words.len() - 1;
        let first = rng.below(last as u64 / 2) as usize;
        let start = self.words[first].0;
        // The first word ending at or past `start + target`; every word takes at least one
        // byte, so it is within `target` words (a short, cache-friendly search).
        let window_end = (first + target as usize + 1).min(last);
        let end_index =
            self.words[first..window_end].partition_point(|(_, end)| *end < start + target) + first;
        &self.text[start as usize..self.words[end_index].1 as usize]
    }
}

/// Where the generator's entries go.
trait Sink {
    /// Appends `entries` as a chain from the leaf (each the child of the one before); the last
    /// becomes the leaf. Returns their ids.
    fn append_many(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>, CliError>;
    /// Moves the leaf to `id`.
    fn branch(&mut self, id: &str) -> Result<(), CliError>;
    /// Ends the writing; returns the time spent indexing afterwards.
    fn finish(self: Box<Self>) -> Result<Duration, CliError>;
}

impl Sink for Session {
    fn append_many(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>, CliError> {
        Ok(Session::append_many(self, entries)?)
    }

    fn branch(&mut self, id: &str) -> Result<(), CliError> {
        Ok(Session::branch(self, id)?)
    }

    fn finish(self: Box<Self>) -> Result<Duration, CliError> {
        self.close()?;
        Ok(Duration::ZERO)
    }
}

/// Lines encoded as `Session::append` encodes them, written through one buffer.
struct BulkSink<'a> {
    path: &'a Path,
    file: BufWriter<std::fs::File>,
    ids: HashSet<String>,
    leaf: Option<String>,
    line: Vec<u8>,
}

impl Sink for BulkSink<'_> {
    fn append_many(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>, CliError> {
        let mut ids = Vec::with_capacity(entries.len());
        let timestamp = treelog::format::time::format_iso_ms(now_ms());
        for entry in entries {
            let id = treelog::format::ids::new_entry_id(|candidate| self.ids.contains(candidate));
            let line = entry.encode(&id, self.leaf.as_deref(), &timestamp);
            self.line.clear();
            self.line.extend_from_slice(line.as_bytes());
            self.line.push(b'\n');
            self.file
                .write_all(&self.line)
                .map_err(|e| CliError::io(self.path, "write the log", e))?;
            self.ids.insert(id.clone());
            self.leaf = Some(id.clone());
            ids.push(id);
        }
        Ok(ids)
    }

    fn branch(&mut self, id: &str) -> Result<(), CliError> {
        self.leaf = Some(id.to_string());
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Duration, CliError> {
        let path = self.path;
        self.file
            .into_inner()
            .map_err(|e| CliError::io(path, "write the log", e.into_error()))?;
        // One open indexes the whole file.
        let started = Instant::now();
        let session = Session::open(path, SessionOptions::default())?;
        session.close()?;
        Ok(started.elapsed())
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// Raw JSON built by the generator (always valid, never multi-line).
fn raw(json: String) -> Result<Box<RawValue>, CliError> {
    RawValue::from_string(json)
        .map_err(|error| CliError::Usage(format!("generated invalid JSON: {error}")))
}

/// The generator's state between entries.
struct Generator<'a> {
    rng: Rng,
    corpus: Corpus,
    options: &'a GenOptions,
    sink: Box<dyn Sink + 'a>,
    /// The last ids of the current path, oldest first (entries still pending come after).
    path_tail: Vec<String>,
    /// Entries chained from the leaf, not yet handed to the sink (see [`Generator::flush`]).
    pending: Vec<NewEntry>,
    message_ms: i64,
    model: usize,
    tool_calls: u64,
    summary: GenSummary,
}

/// Writes a new transcript at `path` (which must not exist yet) with `options.entries`
/// entries, calling `progress` with the entries written so far now and then.
pub fn generate(
    path: &Path,
    options: &GenOptions,
    mut progress: impl FnMut(u64),
) -> Result<GenSummary, CliError> {
    if path.exists() {
        return Err(CliError::input(
            path.display().to_string(),
            "already exists; gen writes new files only",
        ));
    }
    let started = Instant::now();
    let file = write_header(path, &options.cwd)?;
    let sink: Box<dyn Sink> = match options.writer {
        Writer::Session => {
            drop(file);
            Box::new(Session::open(
                path,
                SessionOptions {
                    durability: Durability::None,
                    ..SessionOptions::default()
                },
            )?)
        }
        Writer::Bulk => Box::new(BulkSink {
            path,
            file: BufWriter::with_capacity(1024 * 1024, file),
            ids: HashSet::new(),
            leaf: None,
            line: Vec::new(),
        }),
    };
    let mut rng = Rng::new(options.seed);
    // Message timestamps start on a seed-derived day in 2025 and move forward.
    let message_ms = 1_735_722_000_000 + rng.below(365) as i64 * 86_400_000;
    let corpus = Corpus::new(&mut rng);
    let mut generator = Generator {
        model: rng.below(MODELS.len() as u64) as usize,
        corpus,
        rng,
        options,
        sink,
        path_tail: Vec::new(),
        pending: Vec::new(),
        message_ms,
        tool_calls: 0,
        summary: GenSummary::default(),
    };
    generator.run(&mut progress)?;
    let Generator {
        sink, mut summary, ..
    } = generator;
    summary.index_elapsed = sink.finish()?;
    summary.log_bytes = std::fs::metadata(path)
        .map_err(|e| CliError::io(path, "look at the log", e))?
        .len();
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Creates the log with a v3 header naming `cwd` (the library would take the process's cwd).
fn write_header(path: &Path, cwd: &str) -> Result<std::fs::File, CliError> {
    let now_ms = now_ms();
    let header = treelog::format::write::encode_header(
        &treelog::format::ids::new_session_id(now_ms),
        &treelog::format::time::format_iso_ms(now_ms),
        cwd,
        None,
    );
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| CliError::io(path, "create the log", e))?;
    file.write_all(format!("{header}\n").as_bytes())
        .map_err(|e| CliError::io(path, "write the log", e))?;
    Ok(file)
}

impl Generator<'_> {
    fn done(&self) -> bool {
        self.summary.entries >= self.options.entries
    }

    /// Queues `entry` as the next link of the chain from the leaf.
    fn push(&mut self, entry: NewEntry) {
        self.summary.entries += 1;
        self.pending.push(entry);
    }

    /// Hands the pending chain to the sink in one call (for a session: one lock, one write)
    /// and records the new ids on the path. Called before anything that needs an id.
    fn flush(&mut self) -> Result<(), CliError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let ids = self.sink.append_many(std::mem::take(&mut self.pending))?;
        for id in ids {
            if self.path_tail.len() == PATH_TAIL_MAX {
                self.path_tail.drain(..PATH_TAIL_MAX / 2);
            }
            self.path_tail.push(id);
        }
        Ok(())
    }

    /// Entries on the current path known to the generator (recorded or pending).
    fn path_len(&self) -> usize {
        self.path_tail.len() + self.pending.len()
    }

    fn run(&mut self, progress: &mut impl FnMut(u64)) -> Result<(), CliError> {
        let (provider, model, _) = MODELS[self.model];
        let setup = [0, 1, 2];
        for step in setup {
            if self.done() {
                return Ok(());
            }
            let entry = match step {
                0 => NewEntry::ModelChange {
                    provider: provider.into(),
                    model_id: model.into(),
                },
                1 => {
                    let level = *self.rng.pick(LEVELS);
                    NewEntry::ThinkingLevelChange {
                        thinking_level: level.into(),
                    }
                }
                _ => NewEntry::SessionInfo {
                    name: format!("synthetic session seed={}", self.options.seed),
                },
            };
            self.push(entry);
        }
        let mut next_compaction = self.options.compact_every;
        let mut reported = 0;
        while !self.done() {
            self.turn()?;
            if self.options.compact_every > 0
                && self.summary.entries >= next_compaction
                && !self.done()
            {
                self.compaction()?;
                next_compaction = self.summary.entries + self.options.compact_every;
            }
            if !self.done() {
                self.extras()?;
            }
            if !self.done() && self.rng.chance(self.options.edit_rate) {
                self.context_edit()?;
            }
            if self.pending.len() >= PENDING_MAX {
                self.flush()?;
            }
            if self.summary.entries - reported >= 4096 {
                reported = self.summary.entries;
                progress(reported);
            }
        }
        self.flush()?;
        progress(self.summary.entries);
        Ok(())
    }

    /// A user prompt, then assistant rounds with tool calls and results, then an answer.
    fn turn(&mut self) -> Result<(), CliError> {
        let user = self.user_message();
        self.message(user)?;
        let rounds = self.rng.between(0, 3);
        for _ in 0..rounds {
            if self.done() {
                return Ok(());
            }
            let calls = self.rng.between(1, 2) as usize;
            let (assistant, tool_calls) = self.assistant_message(calls);
            self.message(assistant)?;
            for (call_id, tool) in tool_calls {
                if self.done() {
                    return Ok(());
                }
                let result = self.tool_result(&call_id, tool);
                self.message(result)?;
            }
        }
        if !self.done() {
            let (answer, _) = self.assistant_message(0);
            self.message(answer)?;
        }
        Ok(())
    }

    fn message(&mut self, json: String) -> Result<(), CliError> {
        self.maybe_branch()?;
        if self.done() {
            return Ok(());
        }
        self.push(NewEntry::Message {
            message: raw(json)?,
        });
        self.summary.messages += 1;
        Ok(())
    }

    /// With the branch rate's chance, moves the leaf back to an earlier entry on the path,
    /// sometimes leaving a branch summary there.
    fn maybe_branch(&mut self) -> Result<(), CliError> {
        if self.path_len() < 4 || !self.rng.chance(self.options.branch_rate) {
            return Ok(());
        }
        self.flush()?;
        let back = self
            .rng
            .between(2, (self.path_tail.len() as u64 - 1).min(40)) as usize;
        let position = self.path_tail.len() - 1 - back;
        let target = self.path_tail[position].clone();
        self.path_tail.truncate(position + 1);
        self.summary.branches += 1;
        self.sink.branch(&target)?;
        if self.rng.chance(0.3) {
            // What `Session::branch_with_summary` appends after moving the leaf.
            let summary = format!("## Abandoned branch\n{}", self.words(40, 160));
            let details = r#"{"readFiles":["src/lib.rs"],"modifiedFiles":[]}"#;
            self.push(NewEntry::BranchSummary {
                from_id: target,
                summary,
                details: Some(raw(details.into())?),
                usage: None,
                from_hook: None,
            });
        }
        Ok(())
    }

    /// A compaction keeping the path from an entry some turns back.
    fn compaction(&mut self) -> Result<(), CliError> {
        self.flush()?;
        let back = self.rng.between(4, 30).min(self.path_tail.len() as u64 - 1) as usize;
        let first_kept = self.path_tail[self.path_tail.len() - 1 - back].clone();
        let summary = format!(
            "## Goal\n{}\n\n## Files\n- src/{}.rs",
            self.words(200, 600),
            self.rng.pick(WORDS)
        );
        let tokens = self.rng.between(20_000, 180_000).to_string();
        let details = r#"{"readFiles":["src/session.rs"],"modifiedFiles":["src/lib.rs"]}"#;
        self.push(NewEntry::Compaction {
            summary,
            first_kept_entry_id: Some(first_kept),
            tokens_before: raw(tokens)?,
            details: Some(raw(details.into())?),
            usage: None,
            from_hook: None,
            system_message: None,
        });
        self.summary.compactions += 1;
        Ok(())
    }

    /// A `context_edit` of one of the last entries on the path, and a `usage` entry (pi 1.6).
    fn context_edit(&mut self) -> Result<(), CliError> {
        self.flush()?;
        let back = self.rng.below(self.path_tail.len().min(20) as u64) as usize;
        let target = self.path_tail[self.path_tail.len() - 1 - back].clone();
        let replacement = if self.rng.below(3) == 0 {
            "null".to_string()
        } else {
            let mut replacement = String::from("{\"content\":[{\"type\":\"text\",\"text\":");
            self.push_words(&mut replacement, 5, 20);
            replacement.push_str("}]}");
            replacement
        };
        self.push(NewEntry::ContextEdit {
            target_id: target,
            replacement: raw(replacement)?,
        });
        if !self.done() {
            let (provider, model, _) = MODELS[self.model];
            self.push(NewEntry::Usage {
                kind: "context_edit".into(),
                provider: provider.into(),
                model: model.into(),
                usage: raw(
                    r#"{"input":120,"output":8,"cacheRead":0,"cacheWrite":0,"totalTokens":128}"#
                        .into(),
                )?,
                note: None,
            });
        }
        self.summary.context_edits += 1;
        Ok(())
    }

    /// Occasional model and thinking changes, labels, custom entries and renames.
    fn extras(&mut self) -> Result<(), CliError> {
        let roll = self.rng.below(1000);
        let entry = match roll {
            0..=19 => {
                self.model = self.rng.below(MODELS.len() as u64) as usize;
                let (provider, model, _) = MODELS[self.model];
                NewEntry::ModelChange {
                    provider: provider.into(),
                    model_id: model.into(),
                }
            }
            20..=39 => {
                let level = *self.rng.pick(LEVELS);
                NewEntry::ThinkingLevelChange {
                    thinking_level: level.into(),
                }
            }
            40..=79 => {
                self.flush()?;
                let back = self.rng.below(self.path_tail.len().min(20) as u64) as usize;
                let target = self.path_tail[self.path_tail.len() - 1 - back].clone();
                let label = format!("mark-{}", self.summary.labels + 1);
                self.summary.labels += 1;
                NewEntry::Label {
                    target_id: target,
                    label: Some(label),
                }
            }
            80..=139 => {
                let mut data = String::from("{\"counter\":");
                data.push_str(&self.summary.entries.to_string());
                data.push_str(",\"note\":");
                self.push_words(&mut data, 20, 60);
                data.push('}');
                NewEntry::Custom {
                    custom_type: "bench-ext/state".into(),
                    data: Some(raw(data)?),
                }
            }
            140..=144 => {
                let mut content = String::from("[{\"type\":\"text\",\"text\":");
                self.push_words(&mut content, 30, 90);
                content.push_str("}]");
                NewEntry::CustomMessage {
                    custom_type: "bench-ext/note".into(),
                    content: raw(content)?,
                    display: false,
                    details: Some(raw(r#"{"source":"gen"}"#.into())?),
                }
            }
            145..=146 => {
                let name = format!(
                    "synthetic session seed={} ({})",
                    self.options.seed,
                    self.rng.pick(WORDS)
                );
                NewEntry::SessionInfo { name }
            }
            _ => return Ok(()),
        };
        self.push(entry);
        Ok(())
    }

    /// Random words making about `low..=high` bytes, as plain text.
    fn words(&mut self, low: usize, high: usize) -> String {
        let escaped = self.corpus.slice(&mut self.rng, low, high);
        serde_json::from_str::<String>(&format!("\"{escaped}\"")).unwrap_or_default()
    }

    /// Appends random words making about `low..=high` bytes as a JSON string literal.
    fn push_words(&mut self, out: &mut String, low: usize, high: usize) {
        out.push('"');
        out.push_str(self.corpus.slice(&mut self.rng, low, high));
        out.push('"');
    }

    fn next_message_ms(&mut self) -> i64 {
        self.message_ms += self.rng.between(1_000, 60_000) as i64;
        self.message_ms
    }

    fn payload(&mut self, share_percent: usize) -> (usize, usize) {
        let mean = self.options.payload_bytes * share_percent / 100;
        (mean / 2, mean + mean / 2)
    }

    fn user_message(&mut self) -> String {
        let (low, high) = self.payload(40);
        let mut out = String::from("{\"role\":\"user\",\"content\":");
        if self.rng.below(2) == 0 {
            self.push_words(&mut out, low, high);
        } else {
            out.push_str("[{\"type\":\"text\",\"text\":");
            self.push_words(&mut out, low, high);
            out.push_str("}]");
        }
        out.push_str(",\"timestamp\":");
        out.push_str(&self.next_message_ms().to_string());
        out.push('}');
        out
    }

    /// An assistant message with `calls` tool calls; returns it and the (call id, tool) pairs.
    fn assistant_message(&mut self, calls: usize) -> (String, Vec<(String, &'static str)>) {
        let (provider, model, api) = MODELS[self.model];
        let (low, high) = self.payload(80);
        let mut out = String::from("{\"role\":\"assistant\",\"content\":[");
        let mut blocks = 0;
        if self.rng.below(3) > 0 {
            out.push_str("{\"type\":\"thinking\",\"thinking\":");
            self.push_words(&mut out, low / 3, high / 3);
            out.push_str(",\"thinkingSignature\":\"c2lnbmF0dXJl\"}");
            blocks += 1;
        }
        if calls == 0 || self.rng.below(2) == 0 {
            if blocks > 0 {
                out.push(',');
            }
            out.push_str("{\"type\":\"text\",\"text\":");
            self.push_words(&mut out, low, high);
            out.push('}');
            blocks += 1;
        }
        let mut tool_calls = Vec::with_capacity(calls);
        for _ in 0..calls {
            self.tool_calls += 1;
            let call_id = format!("toolu_{:012}", self.tool_calls);
            let tool = *self.rng.pick(TOOLS);
            let file = format!(
                "src/{}/{}_{}.{}",
                self.rng.pick(WORDS),
                self.rng.pick(WORDS),
                self.rng.pick(WORDS),
                self.rng.pick(EXTENSIONS)
            );
            if blocks > 0 {
                out.push(',');
            }
            out.push_str("{\"type\":\"toolCall\",\"id\":\"");
            out.push_str(&call_id);
            out.push_str("\",\"name\":\"");
            out.push_str(tool);
            out.push_str("\",\"arguments\":{");
            match tool {
                "bash" => {
                    out.push_str("\"command\":");
                    let command = format!("cargo test -p {}", self.rng.pick(WORDS));
                    push_json_str(&mut out, &command);
                }
                "write" | "edit" => {
                    out.push_str("\"path\":");
                    push_json_str(&mut out, &file);
                    out.push_str(",\"content\":");
                    self.push_words(&mut out, low / 4, high / 4);
                }
                _ => {
                    out.push_str("\"path\":");
                    push_json_str(&mut out, &file);
                }
            }
            out.push_str("}}");
            blocks += 1;
            tool_calls.push((call_id, tool));
        }
        let input = self.rng.between(100, 5_000);
        let output = self.rng.between(50, 3_000);
        let cache_read = self.rng.between(0, 150_000);
        let cost_input = input as f64 * 3e-6;
        let cost_output = output as f64 * 15e-6;
        let cost_cache = cache_read as f64 * 3e-7;
        out.push_str(&format!(
            "],\"api\":\"{api}\",\"provider\":\"{provider}\",\"model\":\"{model}\",\"usage\":{{\"input\":{input},\"output\":{output},\"cacheRead\":{cache_read},\"cacheWrite\":0,\"totalTokens\":{},\"cost\":{{\"input\":{cost_input:.6},\"output\":{cost_output:.6},\"cacheRead\":{cost_cache:.6},\"cacheWrite\":0,\"total\":{:.6}}}}},\"stopReason\":\"{}\",\"timestamp\":{}}}",
            input + output + cache_read,
            cost_input + cost_output + cost_cache,
            if calls > 0 { "toolUse" } else { "stop" },
            self.next_message_ms()
        ));
        (out, tool_calls)
    }

    fn tool_result(&mut self, call_id: &str, tool: &str) -> String {
        let (low, high) = self.payload(120);
        let target = self.rng.between(low as u64, high as u64) as usize;
        let mut out = String::with_capacity(target + 256);
        out.push_str("{\"role\":\"toolResult\",\"toolCallId\":\"");
        out.push_str(call_id);
        out.push_str("\",\"toolName\":\"");
        out.push_str(tool);
        out.push_str("\",\"content\":[{\"type\":\"text\",\"text\":\"");
        // Numbered lines, as a read tool shows a file: `   1\t...\n`, escaped.
        let text_start = out.len();
        let mut line_number = 1;
        while out.len() - text_start < target {
            let number = line_number.to_string();
            for _ in number.len()..4 {
                out.push(' ');
            }
            out.push_str(&number);
            out.push_str("\\t");
            out.push_str(self.corpus.slice(&mut self.rng, 10, 60));
            out.push_str("\\n");
            line_number += 1;
        }
        let is_error = self.rng.below(20) == 0;
        out.push_str("\"}],\"isError\":");
        out.push_str(if is_error { "true" } else { "false" });
        out.push_str(",\"timestamp\":");
        out.push_str(&self.next_message_ms().to_string());
        out.push('}');
        out
    }
}
