//! `engine-compare bench DIR`: both engines over the same directory, each step in its own
//! process: a first full build under `/usr/bin/time` (wall, CPU, peak RSS), the index size,
//! whole-process query medians for six kinds of query, and the catch-up of one log after
//! 1 MiB appended. CPU time of a child is read with `getrusage(RUSAGE_CHILDREN)` around its
//! wait (microseconds, where `/usr/bin/time` prints hundredths). The engines alternate in
//! every round, so that a change in the machine's load falls on both.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use engine_compare::{CompareError, Engine, size_under};

use crate::Failure;

/// Bytes appended to a log before each catch-up search.
const APPEND_BYTES: usize = 1 << 20;
/// The steps of a bench, in order.
const STEPS: [&str; 3] = ["build", "query", "catch-up"];

pub struct Options {
    dir: PathBuf,
    /// Runs of each query and engine.
    runs: usize,
    /// Catch-up rounds (one append each).
    rounds: usize,
    /// `(what it is, the query)`, in the table's order.
    queries: Vec<(&'static str, String)>,
    /// The log whose first MiB of lines is appended (its key); the first log when unset.
    append_from: Option<String>,
    /// Steps run: `build`, `query`, `catch-up` (all by default; a catch-up needs indexes).
    steps: Vec<String>,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            dir: PathBuf::new(),
            runs: 21,
            rounds: 11,
            queries: vec![
                ("common word", "tokio".into()),
                // The generated corpus's text is drawn from ~100 words, each in most entries:
                // its rarest token is a number, a line number of long read outputs.
                ("rare word", "47".into()),
                ("absent word", "qqqzzz".into()),
                ("two-word phrase", "\"build lock\"".into()),
                ("prefix", "comp*".into()),
                ("exclusion", "lock -tokio".into()),
            ],
            append_from: None,
            steps: STEPS.iter().map(|step| step.to_string()).collect(),
        };
        let mut dir = None;
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let mut value = || {
                rest.next()
                    .cloned()
                    .ok_or_else(|| format!("{arg} needs a value"))
            };
            let query_slot = match arg.as_str() {
                "--common" => Some(0),
                "--rare" => Some(1),
                "--absent" => Some(2),
                "--phrase" => Some(3),
                "--prefix" => Some(4),
                "--exclude" => Some(5),
                _ => None,
            };
            if let Some(slot) = query_slot {
                options.queries[slot].1 = value()?;
                continue;
            }
            match arg.as_str() {
                "--runs" => options.runs = count(arg, &value()?)?,
                "--rounds" => options.rounds = count(arg, &value()?)?,
                "--append-from" => options.append_from = Some(value()?),
                "--steps" => {
                    options.steps = value()?.split(',').map(str::to_owned).collect();
                    if let Some(unknown) = options
                        .steps
                        .iter()
                        .find(|step| !STEPS.contains(&step.as_str()))
                    {
                        return Err(format!(
                            "unknown step `{unknown}`: build, query or catch-up"
                        ));
                    }
                }
                flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
                _ if dir.is_none() => dir = Some(PathBuf::from(arg)),
                _ => return Err(format!("unexpected argument `{arg}`")),
            }
        }
        options.dir = dir.ok_or("bench takes a directory")?;
        Ok(options)
    }
}

fn count(flag: &str, value: &str) -> Result<usize, String> {
    value
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{flag} takes a positive number, not `{value}`"))
}

/// Bytes of the logs under `dir`.
pub fn log_bytes(dir: &Path) -> Result<u64, CompareError> {
    let mut total = 0;
    for log in treelog::search::logs_under(dir)? {
        total += std::fs::metadata(&log.path)
            .map_err(|source| CompareError::Io {
                path: log.path.clone(),
                operation: "read metadata",
                source,
            })?
            .len();
    }
    Ok(total)
}

/// One finished child: wall and CPU milliseconds, its exit code and its stdout.
struct Timed {
    wall_ms: f64,
    cpu_ms: f64,
    code: Option<i32>,
    stdout: String,
}

fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let ms = |time: libc::timeval| time.tv_sec as f64 * 1e3 + time.tv_usec as f64 / 1e3;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

fn timed(command: &mut Command) -> Result<Timed, Failure> {
    let cpu_before = children_cpu_ms();
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|error| Failure::Bench(format!("cannot run {command:?}: {error}")))?;
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    if output.status.code().is_none_or(|code| code > 1) {
        return Err(Failure::Bench(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(Timed {
        wall_ms,
        cpu_ms: children_cpu_ms() - cpu_before,
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn this_program() -> Result<PathBuf, Failure> {
    std::env::current_exe().map_err(|error| Failure::Bench(format!("cannot find myself: {error}")))
}

pub fn run(options: &Options) -> Result<(), Failure> {
    let dir = &options.dir;
    let program = this_program()?;
    let logs = treelog::search::logs_under(dir).map_err(CompareError::from)?;
    let log_bytes = log_bytes(dir)?;
    println!(
        "{} logs, {log_bytes} bytes under {}; {} runs per query, {} catch-up rounds\n",
        logs.len(),
        dir.display(),
        options.runs,
        options.rounds
    );
    let step = |name: &str| options.steps.iter().any(|step| step == name);
    if step("build") {
        build_rows(&program, dir, log_bytes)?;
    }
    if step("query") {
        query_rows(options, &program)?;
    }
    if step("catch-up") {
        catch_up(options, &program, &logs)?;
    }
    Ok(())
}

fn build_rows(program: &Path, dir: &Path, log_bytes: u64) -> Result<(), Failure> {
    println!(
        "| engine | build wall | build CPU (user+sys) | MB/s wall | MB/s per CPU-second | index size | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|");
    for engine in Engine::ALL {
        build_row(program, engine, dir, log_bytes)?;
    }
    Ok(())
}

fn query_rows(options: &Options, program: &Path) -> Result<(), Failure> {
    let dir = &options.dir;
    println!("\n| query | engine | hits (of 20) | median wall | median CPU |");
    println!("|---|---|---|---|---|");
    for (what, query) in &options.queries {
        let mut samples: Vec<Vec<Timed>> = vec![Vec::new(), Vec::new()];
        for run in 0..options.runs {
            for slot in alternate(run) {
                let engine = Engine::ALL[slot];
                samples[slot].push(timed(
                    Command::new(program)
                        .arg("search")
                        .arg(engine.name())
                        .arg(dir)
                        .arg(query),
                )?);
            }
        }
        for (slot, runs) in samples.iter().enumerate() {
            let hits = runs[0].stdout.lines().count();
            let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) =
                runs.iter().map(|run| (run.wall_ms, run.cpu_ms)).unzip();
            println!(
                "| {what} `{query}` | {} | {hits}{} | {:.1} ms | {:.1} ms |",
                Engine::ALL[slot].name(),
                if runs[0].code == Some(1) {
                    " (exit 1)"
                } else {
                    ""
                },
                median(&mut wall),
                median(&mut cpu)
            );
        }
    }
    Ok(())
}

/// The order of the engines in a round: alternating, so that neither always runs first.
fn alternate(round: usize) -> [usize; 2] {
    if round.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    }
}

fn build_row(program: &Path, engine: Engine, dir: &Path, log_bytes: u64) -> Result<(), Failure> {
    let times = std::env::temp_dir().join(format!("engine-compare-{}.time", std::process::id()));
    timed(
        Command::new("/usr/bin/time")
            .args(["-f", "%e %U %S %M", "-o"])
            .arg(&times)
            .arg(program)
            .arg("build")
            .arg(engine.name())
            .arg(dir),
    )?;
    let text = std::fs::read_to_string(&times)
        .map_err(|error| Failure::Bench(format!("{}: {error}", times.display())))?;
    let _ = std::fs::remove_file(&times);
    let fields: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|field| field.parse().ok())
        .collect();
    let [wall_s, user_s, sys_s, rss_kb] = fields[..] else {
        return Err(Failure::Bench(format!(
            "cannot read /usr/bin/time's `{text}`"
        )));
    };
    let index_bytes = size_under(&engine.index_dir(dir))?;
    let megabytes = log_bytes as f64 / 1e6;
    println!(
        "| {} | {wall_s:.1} s | {:.1} s ({user_s:.1} + {sys_s:.1}) | {:.1} | {:.1} | {index_bytes} bytes = {:.1}% | {:.0} MiB |",
        engine.name(),
        user_s + sys_s,
        megabytes / wall_s,
        megabytes / (user_s + sys_s),
        index_bytes as f64 * 100.0 / log_bytes as f64,
        rss_kb / 1024.0
    );
    Ok(())
}

/// The first [`APPEND_BYTES`] (or a little more: whole lines) of the lines of `log` after
/// its header.
fn append_chunk(log: &Path) -> Result<Vec<u8>, Failure> {
    let text = std::fs::read(log)
        .map_err(|error| Failure::Bench(format!("{}: {error}", log.display())))?;
    let mut chunk = Vec::with_capacity(APPEND_BYTES + (64 << 10));
    for line in text.split_inclusive(|&byte| byte == b'\n').skip(1) {
        if chunk.len() >= APPEND_BYTES {
            break;
        }
        if line.ends_with(b"\n") {
            chunk.extend_from_slice(line);
        }
    }
    if chunk.len() < APPEND_BYTES {
        return Err(Failure::Bench(format!(
            "{} holds less than 1 MiB of lines to append",
            log.display()
        )));
    }
    Ok(chunk)
}

fn catch_up(
    options: &Options,
    program: &Path,
    logs: &[treelog::search::FoundLog],
) -> Result<(), Failure> {
    let source = match &options.append_from {
        Some(key) => logs
            .iter()
            .position(|log| &log.key == key)
            .ok_or_else(|| Failure::Bench(format!("no log {key} under the directory")))?,
        None => 0,
    };
    if logs.len() < 2 {
        return Err(Failure::Bench("the catch-up needs two logs".into()));
    }
    let chunk = append_chunk(&logs[source].path)?;
    // The absent word: the cheapest search, so that the catch-up's cost stands out from it.
    let query = &options.queries[2].1;
    let search = |engine: Engine| {
        timed(
            Command::new(program)
                .arg("search")
                .arg(engine.name())
                .arg(&options.dir)
                .arg(query),
        )
    };
    // [engine][fresh, caught up] -> (wall, cpu) samples.
    let mut samples = vec![[(Vec::new(), Vec::new()), (Vec::new(), Vec::new())]; 2];
    for round in 0..options.rounds {
        for slot in alternate(round) {
            let fresh = search(Engine::ALL[slot])?;
            samples[slot][0].0.push(fresh.wall_ms);
            samples[slot][0].1.push(fresh.cpu_ms);
        }
        // Another log each round, never the source: (source + 1 + 7 * round) mod n, skipping it.
        let mut target = (source + 1 + 7 * round) % logs.len();
        if target == source {
            target = (target + 1) % logs.len();
        }
        let path = &logs[target].path;
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(&chunk))
            .map_err(|error| Failure::Bench(format!("{}: append: {error}", path.display())))?;
        for slot in alternate(round) {
            let caught = search(Engine::ALL[slot])?;
            samples[slot][1].0.push(caught.wall_ms);
            samples[slot][1].1.push(caught.cpu_ms);
        }
    }
    println!(
        "\nCatch-up: `{query}` searched with nothing appended, then after {} bytes appended to another log, {} rounds:\n",
        chunk.len(),
        options.rounds
    );
    println!(
        "| engine | search, nothing appended (wall / CPU) | search after the append (wall / CPU) | catch-up (difference of medians, wall / CPU) |"
    );
    println!("|---|---|---|---|");
    for (slot, [fresh, caught]) in samples.iter_mut().enumerate() {
        let fresh_wall = median(&mut fresh.0);
        let fresh_cpu = median(&mut fresh.1);
        let caught_wall = median(&mut caught.0);
        let caught_cpu = median(&mut caught.1);
        println!(
            "| {} | {fresh_wall:.1} / {fresh_cpu:.1} ms | {caught_wall:.1} / {caught_cpu:.1} ms | {:.1} / {:.1} ms |",
            Engine::ALL[slot].name(),
            caught_wall - fresh_wall,
            caught_cpu - fresh_cpu
        );
    }
    Ok(())
}
