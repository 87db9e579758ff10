//! `treelog-dev bench`: whole-process figures on generated (or given) transcripts, each measured
//! side by side in the same run against treelog's own full replay of the log (what pi and
//! OpenClaw do on every open), reported as times, ratios and peak memory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use treelog::{Durability, Session, SessionOptions};

use treelog_synth::{self as synth, GenOptions, Writer};

use crate::error::Error;
use crate::out::Out;

/// Measure cold opens, context assembly, path walks, reindexing, catch-up, appends and index
/// size, against a full replay of the log in the same run.
///
/// Without FILE, transcripts of each --entries size are generated in --dir (kept and reused:
/// seed 7, ~1 KB payloads, 1% branch points, a compaction every 2,000 entries). Cold opens run
/// in fresh processes (`treelog-dev bench-probe`); figures are medians of --runs runs. Peak memory
/// is the probe process's VmHWM. Reindexing is compared with two raw passes over the same bytes
/// (one thread each: newline scan, a parse of the indexed fields, blake3), treelog's classify
/// and serde_json reading three borrowed fields. Prints a Markdown table (or JSON lines with
/// --json). The sidecars measured are beside the transcripts (`<log>.treelog`), whatever
/// --index-dir and --no-index-write say: those apply to the other commands.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A transcript to measure instead of generated ones (it is not modified, except that
    /// its sidecar is rebuilt and its catch-up is measured on a copy).
    pub file: Option<PathBuf>,
    /// Sizes to generate, in entries (repeatable). Default: 1000, 10000, 100000, 1000000.
    #[arg(long, value_name = "N")]
    pub entries: Vec<u64>,
    /// Add a 10-million-entry transcript (about 10 GiB of disk).
    #[arg(long)]
    pub huge: bool,
    /// Runs per figure (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Where generated transcripts are kept.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// One JSON object per size instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One cold open in this fresh process, printing its timings as JSON (what `bench` runs, and
/// dev/pi-bench/compare.mjs beside pi's own open).
#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    pub file: PathBuf,
    /// Replay the whole log instead of using the index.
    #[arg(long)]
    pub replay: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), Error> {
    let runs = args.runs.max(1);
    let files: Vec<(PathBuf, Option<u64>)> = match &args.file {
        Some(file) => vec![(file.clone(), None)],
        None => {
            let dir = args
                .dir
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join("treelog-bench"));
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::io(&dir, "create the directory", e))?;
            let mut sizes = if args.entries.is_empty() {
                vec![1_000, 10_000, 100_000, 1_000_000]
            } else {
                args.entries.clone()
            };
            if args.huge {
                sizes.push(10_000_000);
            }
            let mut files = Vec::new();
            for size in sizes {
                files.push((generated(&dir, size)?, Some(size)));
            }
            files
        }
    };
    if !args.json {
        out.line(&format!(
            "machine: {} cores; runs per figure: {runs} (medians)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ))?;
        out.line("")?;
        out.line("| entries | log | index size | cold open: index / replay (ratio) | build_context: index / replay | peak RSS: index / replay | path ids | reindex (vs raw pass, same run; serde raw: serde_json reading three fields) | catch-up 1 MiB |")?;
        out.line("|---|---|---|---|---|---|---|---|---|")?;
        out.flush()?;
    }
    for (file, size) in files {
        let row = measure(&file, runs)?;
        if args.json {
            let mut row = row;
            row["entriesRequested"] = json!(size);
            out.line(&row.to_string())?;
        } else {
            out.line(&table_row(&row))?;
        }
        out.flush()?;
    }
    let appends = measure_appends(runs)?;
    if args.json {
        out.line(&appends.to_string())?;
    } else {
        let figure = |key: &str| {
            let range = |end: &str| appends[format!("{key}{end}")].as_f64().unwrap_or(0.0);
            format!(
                "{:.0}/s ({:.0}–{:.0})",
                appends[key].as_f64().unwrap_or(0.0),
                range("Min"),
                range("Max")
            )
        };
        out.line("")?;
        out.line(&format!(
            "appends with index maintenance, medians of {runs} runs (range): {} one at a time (Durability::None), {} in batches of 64, {} with an fsync per append (Durability::EveryAppend)",
            figure("appendsPerSecond"),
            figure("batchedAppendsPerSecond"),
            figure("syncedAppendsPerSecond"),
        ))?;
    }
    Ok(())
}

/// The generated transcript of `entries` entries in `dir`, written if missing.
fn generated(dir: &Path, entries: u64) -> Result<PathBuf, Error> {
    let path = dir.join(format!("bench-{entries}.jsonl"));
    if path.exists() {
        return Ok(path);
    }
    let options = GenOptions {
        entries,
        seed: 7,
        branch_rate: 0.01,
        compact_every: 2_000,
        payload_bytes: 1_024,
        edit_rate: 0.0,
        cwd: "/home/dev/project".into(),
        writer: Writer::Bulk,
        // The sidecar beside the log: what the bench measures and copies.
        sessions: SessionOptions::default(),
    };
    eprintln!(
        "treelog-dev bench: generating {} ({entries} entries)",
        path.display()
    );
    synth::generate(&path, &options, |_| {})?;
    Ok(path)
}

fn measure(file: &Path, runs: usize) -> Result<Value, Error> {
    let log_bytes = std::fs::metadata(file)
        .map_err(|e| Error::io(file, "look at the log", e))?
        .len();

    // Reindex from scratch, and a raw pass over the same bytes, interleaved in the same run.
    let mut reindex = Vec::new();
    let mut raw = Vec::new();
    let mut raw_serde = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let session = Session::open(
            file,
            SessionOptions {
                rebuild_index: true,
                ..SessionOptions::default()
            },
        )?;
        reindex.push(start.elapsed());
        drop(session);
        raw.push(raw_pass(file, RawParse::Classify)?);
        raw_serde.push(raw_pass(file, RawParse::SerdeThreeFields)?);
    }
    let sidecar = treelog::sidecar_path(file);
    let index_bytes = std::fs::metadata(&sidecar)
        .map_err(|e| Error::io(&sidecar, "look at the index", e))?
        .len();

    // Cold opens in fresh processes: index, then replay, alternating.
    let mut indexed = Vec::new();
    let mut replayed = Vec::new();
    for _ in 0..runs {
        indexed.push(probe(file, false)?);
        replayed.push(probe(file, true)?);
    }
    let field = |rows: &[Value], key: &str| {
        median_f64(
            rows.iter()
                .map(|row| row[key].as_f64().unwrap_or(f64::NAN))
                .collect(),
        )
    };

    // Catch-up after an external append of 1 MiB, on a copy for a given file.
    let catch_up = measure_catch_up(file, runs)?;

    let reindex_s = median(reindex).as_secs_f64();
    let raw_s = median(raw).as_secs_f64();
    let raw_serde_s = median(raw_serde).as_secs_f64();
    let megabytes = log_bytes as f64 / 1e6;
    let path_len = field(&indexed, "pathLen");
    Ok(json!({
        "file": file.display().to_string(),
        "entries": indexed.first().map_or(Value::Null, |row| row["entries"].clone()),
        "logBytes": log_bytes,
        "indexBytes": index_bytes,
        "indexPercent": 100.0 * index_bytes as f64 / log_bytes.max(1) as f64,
        "coldOpenIndexMs": field(&indexed, "openUs") / 1000.0,
        "coldOpenReplayMs": field(&replayed, "openUs") / 1000.0,
        "contextIndexMs": field(&indexed, "contextUs") / 1000.0,
        "contextReplayMs": field(&replayed, "contextUs") / 1000.0,
        "contextMessages": field(&indexed, "messages"),
        "peakRssIndexMiB": field(&indexed, "rssKb") / 1024.0,
        "peakRssReplayMiB": field(&replayed, "rssKb") / 1024.0,
        "pathLen": path_len,
        "pathNsPerHop": field(&indexed, "pathUs") * 1000.0 / path_len.max(1.0),
        "reindexMBps": megabytes / reindex_s,
        "rawPassMBps": megabytes / raw_s,
        "reindexVsRawPass": raw_s / reindex_s,
        "rawPassSerdeMBps": megabytes / raw_serde_s,
        "catchUp1MiBMs": catch_up.as_secs_f64() * 1000.0,
    }))
}

fn table_row(row: &Value) -> String {
    let number = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
    format!(
        "| {} | {:.1} MiB | {:.1}% | {:.2} / {:.1} ms ({:.0}x) | {:.2} / {:.2} ms ({:.0} msgs) | {:.0} / {:.0} MiB | {:.0} ns/hop ({:.0} hops) | {:.0} MB/s (raw {:.0} MB/s, {:.0}%; serde raw {:.0} MB/s) | {:.1} ms |",
        row["entries"],
        number("logBytes") / 1048576.0,
        number("indexPercent"),
        number("coldOpenIndexMs"),
        number("coldOpenReplayMs"),
        number("coldOpenReplayMs") / number("coldOpenIndexMs"),
        number("contextIndexMs"),
        number("contextReplayMs"),
        number("contextMessages"),
        number("peakRssIndexMiB"),
        number("peakRssReplayMiB"),
        number("pathNsPerHop"),
        number("pathLen"),
        number("reindexMBps"),
        number("rawPassMBps"),
        100.0 * number("reindexVsRawPass"),
        number("rawPassSerdeMBps"),
        number("catchUp1MiBMs"),
    )
}

/// How a raw pass reads a line's indexed fields.
#[derive(Clone, Copy)]
enum RawParse {
    /// treelog's own reading (`format::line::classify`): what a reindex runs.
    Classify,
    /// The reading the reindex target of 1 GB/s assumes: serde_json reading three
    /// borrowed fields, skipping (and so validating) the rest of the line.
    SerdeThreeFields,
}

/// What the engine cannot avoid when replaying: read every byte in large chunks, find the
/// lines, parse each line's indexed fields, hash the bytes. One thread.
fn raw_pass(file: &Path, parse: RawParse) -> Result<Duration, Error> {
    use std::io::Read;
    let start = Instant::now();
    let mut reader = std::fs::File::open(file).map_err(|e| Error::io(file, "open the log", e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    let mut hasher = blake3::Hasher::new();
    let mut lines = 0u64;
    loop {
        let read = reader
            .read(&mut buf)
            .map_err(|e| Error::io(file, "read the log", e))?;
        if read == 0 {
            break;
        }
        hasher.update(&buf[..read]);
        let mut start_of_line = 0;
        for newline in memchr::memchr_iter(b'\n', &buf[..read]) {
            let line: &[u8] = if carry.is_empty() {
                &buf[start_of_line..newline]
            } else {
                carry.extend_from_slice(&buf[start_of_line..newline]);
                &carry
            };
            let parsed = match parse {
                RawParse::Classify => {
                    let text = match treelog::format::utf8_str(line) {
                        Some(text) => std::borrow::Cow::Borrowed(text),
                        None => String::from_utf8_lossy(line),
                    };
                    !matches!(
                        treelog::format::line::classify(&text, false, lines == 0),
                        treelog::format::line::Line::Blank
                    )
                }
                RawParse::SerdeThreeFields => serde_json::from_slice::<
                    treelog::format::line::RawPassFields,
                >(line)
                .is_ok_and(|fields| {
                    std::hint::black_box(&fields.parent_id);
                    fields.kind.is_some() && fields.id.is_some()
                }),
            };
            lines += u64::from(parsed);
            carry.clear();
            start_of_line = newline + 1;
        }
        carry.extend_from_slice(&buf[start_of_line..read]);
    }
    std::hint::black_box((hasher.finalize(), lines));
    Ok(start.elapsed())
}

/// Runs `treelog-dev bench-probe` in a fresh process and returns what it printed.
fn probe(file: &Path, replay: bool) -> Result<Value, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("<treelog-dev>", "find the treelog-dev executable", e))?;
    let mut command = Command::new(exe);
    command.arg("bench-probe").arg(file);
    if replay {
        command.arg("--replay");
    }
    let output = command
        .output()
        .map_err(|e| Error::io(file, "run the benchmark process for", e))?;
    if !output.status.success() {
        return Err(Error::input(
            file.display().to_string(),
            format!(
                "bench-probe failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::input(file.display(), format!("bench-probe printed no JSON: {e}")))
}

/// One cold open, context build and path walk, timed inside this process.
pub fn run_probe(args: ProbeArgs, out: &mut Out) -> Result<(), Error> {
    let options = SessionOptions {
        use_index: !args.replay,
        ..SessionOptions::default()
    };
    let start = Instant::now();
    // A missing file is an error here, whereas the library would bind a new empty session.
    if !args.file.is_file() {
        return Err(Error::input(args.file.display(), "not a regular file"));
    }
    let mut session = Session::open(&args.file, options)?;
    let open = start.elapsed();
    let start = Instant::now();
    let context = session.build_context(None)?;
    let context_time = start.elapsed();
    // The memory figure is of open + build_context, before the path walk allocates its ids.
    let rss_kb = peak_rss_kb();
    let start = Instant::now();
    let path = session.path_id_list(None)?;
    let path_time = start.elapsed();
    let entries = session.stats()?.entry_count;
    out.line(
        &json!({
            "openUs": open.as_secs_f64() * 1e6,
            "contextUs": context_time.as_secs_f64() * 1e6,
            "messages": context.messages.len(),
            "pathUs": path_time.as_secs_f64() * 1e6,
            "pathLen": path.len(),
            "entries": entries,
            "rssKb": rss_kb,
        })
        .to_string(),
    )
}

/// Peak resident set size of this process (VmHWM), in KiB.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmHWM:")
                    .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// Time to open after another writer appended 1 MiB of entries (the index catches up).
fn measure_catch_up(file: &Path, runs: usize) -> Result<Duration, Error> {
    let dir = tempdir()?;
    let copy = dir.join("catch-up.jsonl");
    let mut times = Vec::new();
    for _ in 0..runs.min(3) {
        std::fs::copy(file, &copy).map_err(|e| Error::io(&copy, "copy the log to", e))?;
        std::fs::copy(treelog::sidecar_path(file), treelog::sidecar_path(&copy))
            .map_err(|e| Error::io(&copy, "copy the index beside", e))?;
        // The copy is a new inode: let one open accept the index (full check), then append.
        drop(Session::open(&copy, SessionOptions::default())?);
        let leaf = Session::open(&copy, SessionOptions::default())?.leaf_id()?;
        let mut lines = String::new();
        let mut parent = leaf;
        let mut counter = 0u64;
        while lines.len() < 1 << 20 {
            let id = format!("c{counter:07x}");
            let entry = json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-06-01T00:00:00.000Z","message":{"role":"user","content":"x".repeat(1000),"timestamp":1}});
            lines.push_str(&entry.to_string());
            lines.push('\n');
            parent = Some(id);
            counter += 1;
        }
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&copy)
            .map_err(|e| Error::io(&copy, "open the log", e))?;
        log.write_all(lines.as_bytes())
            .map_err(|e| Error::io(&copy, "append to the log", e))?;
        drop(log);
        let start = Instant::now();
        let session = Session::open(&copy, SessionOptions::default())?;
        times.push(start.elapsed());
        if !matches!(session.index_state(), treelog::IndexState::CaughtUp { .. }) {
            return Err(Error::input(
                copy.display(),
                format!("expected a catch-up, got {:?}", session.index_state()),
            ));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(median(times))
}

/// Appends per second in fresh logs, `runs` times each way: the median under each key, the
/// range under `{key}Min` / `{key}Max` (the machine's noise makes one run a poor figure).
fn measure_appends(runs: usize) -> Result<Value, Error> {
    let dir = tempdir()?;
    let message = format!(
        r#"{{"role":"user","content":"{}","timestamp":1}}"#,
        "x".repeat(1000)
    );
    let raw_message = serde_json::value::RawValue::from_string(message.clone())
        .map_err(|e| Error::input("<bench message>", e.to_string()))?;
    let rate =
        |run: usize, durability: Durability, count: usize, batch: usize| -> Result<f64, Error> {
            let path = dir.join(format!("append-{run}-{count}-{batch}.jsonl"));
            let options = SessionOptions {
                durability,
                ..SessionOptions::default()
            };
            // The log is created first, so that the timed handle keeps a sidecar index.
            let mut session = Session::open(&path, options.clone())?;
            session.append_message(&message)?;
            session.close()?;
            let mut session = Session::open(&path, options)?;
            let start = Instant::now();
            let mut done = 0;
            while done < count {
                // Each entry is a copy of one message validated before the clock started: the
                // caller's cost of building its JSON is not the append's.
                let entries: Vec<treelog::NewEntry> = (0..batch)
                    .map(|_| treelog::NewEntry::Message {
                        message: raw_message.clone(),
                    })
                    .collect();
                session.append_many(entries)?;
                done += batch;
            }
            session.close()?;
            let per_second = done as f64 / start.elapsed().as_secs_f64();
            std::fs::remove_file(&path).ok();
            std::fs::remove_file(treelog::sidecar_path(&path)).ok();
            Ok(per_second)
        };
    let mut result = json!({});
    for (key, durability, count, batch) in [
        ("appendsPerSecond", Durability::None, 50_000, 1),
        ("batchedAppendsPerSecond", Durability::None, 200_000, 64),
        ("syncedAppendsPerSecond", Durability::EveryAppend, 300, 1),
    ] {
        let rates = (0..runs.max(1))
            .map(|run| rate(run, durability, count, batch))
            .collect::<Result<Vec<f64>, Error>>()?;
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        result[key] = json!(median_f64(rates));
        result[format!("{key}Min")] = json!(min);
        result[format!("{key}Max")] = json!(max);
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(result)
}

fn tempdir() -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!(
        "treelog-bench-{}-{:x}",
        std::process::id(),
        treelog::format::ids::random_u64()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create the directory", e))?;
    Ok(dir)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
