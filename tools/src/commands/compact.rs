//! `treelog compact s3://BUCKET/KEY`: one compaction pass over a log on an object store
//! (format-spec/object-store.md §6): runs of small segments merged into covering segments, the
//! log's bytes unchanged, the covered segments deleted once their grace period is over.

use std::time::Duration;

use serde_json::json;
use treelog::object_store::{
    CompactOptions, Compacted, DEFAULT_GRACE, S3Address, S3Prefix, session_addresses,
};

use crate::commands::push_pull::{STORE_HELP, cli_error, parse_required};
use crate::exit::CliError;
use crate::out::Out;

/// Merge a log's small segments on an object store into larger ones, bytes unchanged.
///
/// Runs of consecutive segments under 1 MiB (and covering segments written before) are each
/// read, hashed with blake3 and written as one covering segment KEY.d/seg-START-END of at most
/// 8 MiB, with a conditional create, then read back and hashed again; the last segment is never
/// covered, so appends go on meanwhile. Readers read a covering segment instead of the segments
/// it covers as soon as it exists. The covered segments are deleted once the covering segment
/// is older than the grace period, after comparing their bytes with it again; until then they
/// stay, so that a reader that listed them before still reads them. Run it periodically (e.g.
/// hourly, from cron, over every log): each pass deletes what an earlier one left for later.
///
/// An address ending with `/` (s3://BUCKET/PREFIX/, or s3://BUCKET/ for the whole bucket)
/// compacts every log `list` finds there, one after the other, one line (or JSON object) each;
/// a log that fails is reported on stderr, the others are compacted, and the exit code is 2.
#[derive(clap::Args, Debug)]
#[command(after_help = STORE_HELP)]
pub struct Args {
    /// The log on the store: s3://BUCKET/KEY; or s3://BUCKET/PREFIX/, every log under it.
    pub address: String,
    /// Seconds a covering segment must be old before the segments it covers are deleted: at
    /// least 600 (a writer may create a segment on a listing up to 210 s old, a request may
    /// take 120 s, clocks may differ by 60 s), unless --at-rest.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_GRACE.as_secs())]
    pub grace: u64,
    /// The log is at rest: no writer appends to it and no other compaction runs meanwhile, so
    /// a shorter grace (0: delete at once) loses nothing. Without it, a grace under 600 s is
    /// refused.
    #[arg(long)]
    pub at_rest: bool,
    /// Print one JSON object (a line per log) instead of a line of text: log, len_bytes, segments_before and
    /// segments_after (the segments a reader reads), written (each covering segment: object,
    /// start, end, segments, blake3, created: false when another pass had written it), deleted,
    /// waiting (covered segments kept for their grace period), grace_seconds.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    let options = CompactOptions {
        grace: Duration::from_secs(args.grace),
        at_rest: args.at_rest,
    };
    if args.address.ends_with('/') {
        let Some(prefix) = S3Prefix::parse(&args.address) else {
            return Err(CliError::input(
                &args.address,
                "not an object-store address: expected s3://BUCKET/KEY or s3://BUCKET/PREFIX/",
            ));
        };
        let prefix = prefix.map_err(cli_error)?;
        let addresses = session_addresses(&prefix).map_err(cli_error)?;
        let mut failed = 0;
        for address in &addresses {
            match treelog::object_store::compact(address, &options) {
                Ok(compacted) => report(address, &compacted, &args, out)?,
                Err(error) => {
                    crate::exit::print_error(&cli_error(error));
                    failed += 1;
                }
            }
        }
        if failed > 0 {
            return Err(CliError::SomeFailed { count: failed });
        }
        return Ok(());
    }
    let address = parse_required(&args.address)?;
    let compacted = treelog::object_store::compact(&address, &options).map_err(cli_error)?;
    report(&address, &compacted, &args, out)
}

fn report(
    address: &S3Address,
    compacted: &Compacted,
    args: &Args,
    out: &mut Out,
) -> Result<(), CliError> {
    if args.json {
        let written: Vec<_> = compacted
            .written
            .iter()
            .map(|covering| {
                json!({
                    "object": covering.object,
                    "start": covering.start,
                    "end": covering.end,
                    "segments": covering.segments,
                    "blake3": covering.blake3,
                    "created": covering.created,
                })
            })
            .collect();
        let line = json!({
            "log": address.url(),
            "len_bytes": compacted.len_bytes,
            "segments_before": compacted.segments_before,
            "segments_after": compacted.segments_after,
            "written": written,
            "deleted": compacted.deleted,
            "waiting": compacted.waiting,
            "grace_seconds": args.grace,
        });
        return out.line(&line.to_string());
    }
    out.line(&summary(&address.url(), compacted, args.grace))
}

fn summary(log: &str, compacted: &Compacted, grace: u64) -> String {
    let created = compacted.written.iter().filter(|c| c.created).count();
    format!(
        "{log}: {} bytes in {} segment(s), {} before; {created} covering segment(s) written; \
         {} covered segment(s) deleted, {} kept until their grace period of {grace} s is over",
        compacted.len_bytes,
        compacted.segments_after,
        compacted.segments_before,
        compacted.deleted,
        compacted.waiting,
    )
}
