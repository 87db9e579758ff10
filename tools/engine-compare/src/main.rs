//! `engine-compare`: SQLite FTS5 against treelog's tantivy search on the same documents.
//!
//! ```text
//! engine-compare build fts5|tantivy DIR          index DIR's logs from scratch
//! engine-compare search fts5|tantivy DIR QUERY   one query, whole process (KEY:LINE SCORE SNIPPET)
//! engine-compare bench DIR [OPTIONS]             both engines: builds, queries, catch-up
//! ```
//!
//! Exit codes: 0 done (a search with hits), 1 a search without hits, 2 bad usage or a failure.

mod bench;

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use engine_compare::{CompareError, Engine};

/// Hits a search prints, as `treelog search`'s default `--limit`.
const LIMIT_DEFAULT: usize = 20;

const USAGE: &str = "usage: engine-compare build fts5|tantivy DIR
       engine-compare search fts5|tantivy DIR QUERY
       engine-compare bench DIR [--runs N] [--rounds N] [--common WORD] [--rare WORD]
                                [--absent WORD] [--phrase \"A B\"] [--prefix STEM*]
                                [--exclude \"WORD -WORD\"] [--append-from KEY]
                                [--steps build,query,catch-up]";

/// Why the program stopped without doing its work.
#[derive(Debug)]
enum Failure {
    Usage(String),
    Compare(CompareError),
    Bench(String),
}

impl From<CompareError> for Failure {
    fn from(error: CompareError) -> Failure {
        Failure::Compare(error)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(failure) => {
            match failure {
                Failure::Usage(reason) => eprintln!("engine-compare: {reason}\n{USAGE}"),
                Failure::Compare(error) => eprintln!("engine-compare: {error}"),
                Failure::Bench(reason) => eprintln!("engine-compare: bench: {reason}"),
            }
            ExitCode::from(2)
        }
    }
}

fn engine_named(name: Option<&String>) -> Result<Engine, Failure> {
    let name = name.ok_or_else(|| Failure::Usage("name an engine: fts5 or tantivy".into()))?;
    Engine::from_name(name)
        .ok_or_else(|| Failure::Usage(format!("unknown engine `{name}`: fts5 or tantivy")))
}

fn run(args: &[String]) -> Result<ExitCode, Failure> {
    match args.first().map(String::as_str) {
        Some("build") => {
            let [_, engine, dir] = args else {
                return Err(Failure::Usage(
                    "build takes an engine and a directory".into(),
                ));
            };
            let engine = engine_named(Some(engine))?;
            let dir = Path::new(dir);
            let started = Instant::now();
            engine_compare::build(engine, dir)?;
            let seconds = started.elapsed().as_secs_f64();
            let log_bytes = bench::log_bytes(dir)?;
            let index_bytes = engine_compare::size_under(&engine.index_dir(dir))?;
            println!(
                "{}: {log_bytes} bytes of logs in {seconds:.2} s ({:.1} MB/s), index {index_bytes} bytes ({:.1}%)",
                engine.name(),
                log_bytes as f64 / 1e6 / seconds,
                index_bytes as f64 * 100.0 / log_bytes as f64,
            );
            Ok(ExitCode::SUCCESS)
        }
        Some("search") => {
            let [_, engine, dir, query] = args else {
                return Err(Failure::Usage(
                    "search takes an engine, a directory and a query".into(),
                ));
            };
            let engine = engine_named(Some(engine))?;
            let hits = engine_compare::search(engine, Path::new(dir), query, LIMIT_DEFAULT)?;
            for hit in &hits {
                println!(
                    "{}:{}  {:.3}  {}",
                    hit.key, hit.line, hit.score, hit.snippet
                );
            }
            Ok(if hits.is_empty() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Some("bench") => {
            let options = bench::Options::parse(&args[1..]).map_err(Failure::Usage)?;
            bench::run(&options)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(Failure::Usage(format!("unknown command `{other}`"))),
        None => Err(Failure::Usage("name a command".into())),
    }
}
