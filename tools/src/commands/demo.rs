//! `treelog demo`: a guided tour on the bundled pi transcript and a generated one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use treelog::{Session, SessionOptions};

use crate::commands::info::index_state_json;
use crate::commands::tree::{self, Drawing};
use crate::exit::CliError;
use crate::out::Out;
use crate::progress;
use crate::synth::{self, GenOptions, Writer};

/// A transcript pi 0.73.1 wrote itself (200 entries, branches, labels, compactions).
const SAMPLE: &str = include_str!("../../../tests/data/pi-sample-200.jsonl");

/// Runs of each timed operation; the median is shown.
const TIMING_RUNS: usize = 5;

/// Show what treelog does, on the bundled pi transcript and a generated one.
///
/// Copies a transcript pi wrote (bundled in the binary) into a scratch directory, generates a
/// larger one next to it, indexes both, draws the sample's tree and summarises its context,
/// then times opening with the index against a full replay of the log (what pi does on every
/// open) and building the context each way (medians of 5 runs).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Entries in the generated transcript.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub entries: u64,
    /// Work in DIR and keep the files (default: a scratch directory, deleted afterwards).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let (dir, scratch) = match args.dir {
        Some(dir) => (dir, false),
        None => (
            std::env::temp_dir().join(format!("treelog-demo-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).map_err(|e| CliError::io(&dir, "create directory", e))?;
    let result = tour(&dir, args.entries, out);
    if scratch {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn tour(dir: &Path, entries: u64, out: &mut Out) -> Result<(), CliError> {
    let sample = dir.join("pi-sample-200.jsonl");
    std::fs::write(&sample, SAMPLE).map_err(|e| CliError::io(&sample, "write", e))?;
    let generated = dir.join(format!("generated-{entries}.jsonl"));
    if !generated.exists() {
        let bar = progress::items(entries, "entries");
        let summary = synth::generate(
            &generated,
            &GenOptions {
                entries,
                seed: 7,
                branch_rate: 0.01,
                compact_every: 2_000,
                payload_bytes: 1024,
                edit_rate: 0.0,
                cwd: "/home/dev/project".into(),
                writer: Writer::Session,
            },
            |done| bar.set_position(done),
        )?;
        bar.finish_and_clear();
        out.line(&format!(
            "generated {} entries ({}) in {:.2} s",
            summary.entries,
            progress::human_bytes(summary.log_bytes),
            summary.elapsed.as_secs_f64()
        ))?;
    }

    out.line(&format!("\n== 1. Indexing ({})", dir.display()))?;
    for path in [&sample, &generated] {
        let started = Instant::now();
        let session = Session::open(path, SessionOptions::default())?;
        let elapsed = started.elapsed();
        let state = index_state_json(session.index_state());
        session.close()?;
        let note = if path == &generated && state["state"] == "fresh" {
            " (gen indexed it while writing)"
        } else {
            ""
        };
        out.line(&format!(
            "{}: opened in {}, index {}{note}",
            file_name(path),
            format_duration(elapsed),
            state["state"].as_str().unwrap_or("?"),
        ))?;
    }

    out.line("\n== 2. The sample's tree (`treelog tree --max-depth 2`)")?;
    let session = Session::open(&sample, SessionOptions::default())?;
    tree::draw(
        &session,
        &Drawing {
            max_depth: Some(2),
            fold: true,
        },
        out,
    )?;

    out.line("\n== 3. The sample's context (`treelog context`)")?;
    let context: Value = serde_json::from_str(&session.build_context(None)?.to_json())
        .map_err(|error| CliError::input(sample.display().to_string(), error.to_string()))?;
    let mut roles: BTreeMap<String, u64> = BTreeMap::new();
    let messages = context["messages"].as_array().cloned().unwrap_or_default();
    for message in &messages {
        let role = message["role"].as_str().unwrap_or("?").to_string();
        *roles.entry(role).or_default() += 1;
    }
    let roles: Vec<String> = roles
        .iter()
        .map(|(role, count)| format!("{role} {count}"))
        .collect();
    out.line(&format!(
        "messages:       {} ({})",
        messages.len(),
        roles.join(", ")
    ))?;
    out.line(&format!(
        "model:          {}/{}",
        context["model"]["provider"].as_str().unwrap_or("-"),
        context["model"]["modelId"].as_str().unwrap_or("-")
    ))?;
    out.line(&format!(
        "thinking level: {}",
        context["thinkingLevel"].as_str().unwrap_or("-")
    ))?;
    drop(session);

    out.line(&format!(
        "\n== 4. Timings (median of {TIMING_RUNS}; the replay is what pi does on every open)"
    ))?;
    out.line(&format!(
        "{:<34} {:>14} {:>14} {:>9}",
        "", "with index", "full replay", "speed-up"
    ))?;
    for path in [&sample, &generated] {
        let bytes = std::fs::metadata(path)
            .map_err(|e| CliError::io(path, "stat", e))?
            .len();
        out.line(&format!(
            "{} ({})",
            file_name(path),
            progress::human_bytes(bytes)
        ))?;
        let indexed = SessionOptions::default();
        let replay = SessionOptions {
            use_index: false,
            ..SessionOptions::default()
        };
        let open_indexed = median(|| Session::open(path, indexed.clone()).map(drop))?;
        let open_replay = median(|| Session::open(path, replay.clone()).map(drop))?;
        row(out, "  open", open_indexed, open_replay)?;
        let with_index = Session::open(path, indexed)?;
        let without = Session::open(path, replay)?;
        let context_indexed = median(|| with_index.build_context(None).map(drop))?;
        let context_replay = median(|| without.build_context(None).map(drop))?;
        row(out, "  build_context", context_indexed, context_replay)?;
        row(
            out,
            "  open + build_context",
            open_indexed + context_indexed,
            open_replay + context_replay,
        )?;
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The median time of [`TIMING_RUNS`] runs of `operation`.
fn median(mut operation: impl FnMut() -> treelog::Result<()>) -> Result<Duration, CliError> {
    let mut times = Vec::with_capacity(TIMING_RUNS);
    for _ in 0..TIMING_RUNS {
        let started = Instant::now();
        operation()?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[TIMING_RUNS / 2])
}

fn row(out: &mut Out, what: &str, indexed: Duration, replay: Duration) -> Result<(), CliError> {
    let ratio = replay.as_secs_f64() / indexed.as_secs_f64().max(1e-9);
    out.line(&format!(
        "{what:<34} {:>14} {:>14} {:>8.0}x",
        format_duration(indexed),
        format_duration(replay),
        ratio
    ))
}

fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.0} µs", seconds * 1e6)
    }
}
