//! Synthetic transcripts shaped like pi's (tests/data/pi-sample-200.jsonl), written through
//! the library: the `treelog-synth` crate, shared by the CLI's `treelog demo` and the
//! developer tool's `treelog-dev gen` and `treelog-dev bench` (dev/).
//!
//! Deterministic for a seed: every choice and every message `timestamp` comes from a small
//! PRNG; only the entry timestamps and ids come from the library (clock, random).
//!
//! Entries are queued as a chain from the leaf and handed over in one call whenever an id is
//! needed (a branch, a label, a compaction) or 256 are queued. Two writers produce the same
//! lines but for their ids: the session API hands ids out in runs (format-spec/log.md §3), the
//! bulk writer draws each at random, as pi does. [`Writer::Session`] appends each chain with
//! the session API (`Session::append_many`, `Session::branch`; `Durability::None`): one lock,
//! one write and one read-back per chain. [`Writer::Bulk`] encodes each line with the
//! library's own encoder (`NewEntry::encode`, `new_entry_id`), writes them through one buffer
//! and then indexes the file with one `Session::open`.
//!
//! Files: this one holds the options, [`generate`] and the shape of the tree (turns,
//! branches, compactions, context edits, labels and the other entries); `messages.rs` the
//! message payloads; `words.rs` the seeded random stream, the word lists and the text corpus
//! they draw from; `sink.rs` where the entries go (the session API or the bulk writer);
//! `error.rs` what can go wrong.

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use treelog::{Durability, NewEntry, Session, SessionOptions};

mod error;
mod messages;
mod sink;
mod words;

pub use error::Error;

use sink::{BulkSink, Sink, now_ms};
use words::{Corpus, LEVELS, MODELS, Rng, WORDS};

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
    /// Where the log's sidecar is written and whether it may be (`treelog demo`: the run's
    /// `--index-dir` / `--no-index-write`; `treelog-dev gen` and `bench`: beside the log).
    pub sessions: SessionOptions,
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

/// Ids of the current path kept for choosing branch points, compaction and label targets.
const PATH_TAIL_MAX: usize = 512;
/// Entries queued before they are appended in one call (bounds memory between branches).
const PENDING_MAX: usize = 256;

/// Raw JSON built by the generator (always valid, never multi-line).
fn raw(json: String) -> Result<Box<RawValue>, Error> {
    RawValue::from_string(json).map_err(|error| Error::InvalidJson(error.to_string()))
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
) -> Result<GenSummary, Error> {
    if path.exists() {
        return Err(Error::Exists(path.to_path_buf()));
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
                    ..options.sessions.clone()
                },
            )?)
        }
        Writer::Bulk => Box::new(BulkSink {
            path,
            file: BufWriter::with_capacity(1024 * 1024, file),
            ids: HashSet::new(),
            leaf: None,
            line: Vec::new(),
            sessions: &options.sessions,
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
        .map_err(|e| Error::io(path, "look at the log", e))?
        .len();
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Creates the log with a v3 header naming `cwd` (the library would take the process's cwd).
fn write_header(path: &Path, cwd: &str) -> Result<std::fs::File, Error> {
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
        .map_err(|e| Error::io(path, "create the log", e))?;
    file.write_all(format!("{header}\n").as_bytes())
        .map_err(|e| Error::io(path, "write the log", e))?;
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
    fn flush(&mut self) -> Result<(), Error> {
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

    fn run(&mut self, progress: &mut impl FnMut(u64)) -> Result<(), Error> {
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
    fn turn(&mut self) -> Result<(), Error> {
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

    fn message(&mut self, json: String) -> Result<(), Error> {
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
    fn maybe_branch(&mut self) -> Result<(), Error> {
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
    fn compaction(&mut self) -> Result<(), Error> {
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
    fn context_edit(&mut self) -> Result<(), Error> {
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
    fn extras(&mut self) -> Result<(), Error> {
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
}
