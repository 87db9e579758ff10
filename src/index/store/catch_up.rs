//! Catch-up: indexes the lines after the indexed prefix, read back from the log (on several
//! threads when long: `index/parallel.rs`) or handed over by the handle that just wrote them,
//! and the last line without its `\n` (format-spec/log.md §1), which lives in the overlay
//! only. It derives nothing itself (`index/apply.rs` does) and writes the index only through
//! the flush.

use super::{Store, Verify};
use crate::error::{Error, Result};
use crate::format::line::{FieldSpans, is_complete_last_line};
use crate::index::parallel::catch_up_parallel;
use crate::scan::{LineSink, ScannedLine, scan_lines};
use crate::storage::{FileIdentity, LogStorage, read_exact_at};

/// Reloads one catch-up makes before it gives up on a last line that keeps changing (each one
/// a writer gluing bytes onto a line that had no `\n`).
const RELOADS_MAX: u32 = 2;

/// Feeds scanned lines to the store; flushes at chunk ends when the overlay is big.
struct CatchUp<'a> {
    store: &'a mut Store,
    identity: FileIdentity,
}

impl LineSink for CatchUp<'_> {
    fn line(&mut self, line: ScannedLine<'_>) -> Result<()> {
        self.store
            .apply_line(line.offset_bytes, line.len_bytes, line.crc32, line.bytes)
    }

    fn consumed(&mut self, bytes: &[u8]) -> Result<()> {
        self.store.consumed(bytes, self.identity)
    }
}

impl Store {
    /// Indexes every line after the indexed prefix: the complete lines, flushing as the overlay
    /// grows, then the last line if it has no `\n` yet but is complete (format-spec/log.md §1).
    /// Returns the log's length as seen before the scan (lines appended during the scan may
    /// or may not be included; they are caught by the next call).
    pub fn catch_up(&mut self, storage: &dyn LogStorage) -> Result<u64> {
        let len_bytes = self.catch_up_lines(storage)?;
        self.index_unterminated_line(storage, len_bytes)?;
        Ok(len_bytes)
    }

    /// [`Store::catch_up`] but for a last line without its `\n`, which
    /// [`Store::index_unterminated_line`] reads; in between the overlay may be written (it is
    /// not written while it holds such a line).
    pub(crate) fn catch_up_lines(&mut self, storage: &dyn LogStorage) -> Result<u64> {
        self.check_applicable()?;
        let mut reloads = 0;
        while self.unterminated && !self.end_unterminated_line(storage)? {
            if reloads == RELOADS_MAX {
                return Err(Error::LogChanged {
                    path: storage.path().to_path_buf(),
                    offset_bytes: self.indexed_len_bytes,
                    reason: "the last line kept changing while it was read".into(),
                });
            }
            self.reload(storage)?;
            reloads += 1;
        }
        if self.state.header_version < crate::format::CURRENT_VERSION
            && self.legacy_session_id.is_empty()
            && self.indexed_len_bytes > 0
        {
            self.legacy_session_id = self.header_session_id(storage)?;
        }
        let start = self.indexed_len_bytes;
        let len_bytes = storage
            .len_bytes()
            .map_err(|e| Error::io(storage.path(), "look at the log", e))?;
        if len_bytes <= start {
            return Ok(len_bytes);
        }
        let identity = storage
            .identity()
            .map_err(|e| Error::io(storage.path(), "look at the log", e))?;
        if identity.len_bytes <= start {
            return Ok(identity.len_bytes);
        }
        let mut buf = std::mem::take(&mut self.scan_buf);
        let scanned = (|| {
            if identity.len_bytes - start >= self.parallel.min_bytes {
                if self.settled_legacy_v1().is_none() {
                    // The first line decides how the others are classified: read it alone.
                    let prefix_end = identity
                        .len_bytes
                        .min(start.saturating_add(self.parallel.chunk_len as u64));
                    scan_lines(
                        storage,
                        start,
                        prefix_end,
                        &mut CatchUp {
                            store: self,
                            identity,
                        },
                        &mut buf,
                    )?;
                }
                let tuning = self.parallel;
                catch_up_parallel(self, storage, identity.len_bytes, tuning, |store| {
                    store.flush_when_due(identity)
                })?;
            }
            // What is left: short catch-ups, the last partial line, lines too long to read in
            // one chunk, and everything when no thread could be started or the first
            // chunk held no non-blank line.
            scan_lines(
                storage,
                self.indexed_len_bytes,
                identity.len_bytes,
                &mut CatchUp {
                    store: self,
                    identity,
                },
                &mut buf,
            )
        })();
        self.scan_buf = buf;
        scanned.map(|_| identity.len_bytes)
    }

    /// While the last line indexed has no `\n`: reads the byte after it. Its `\n` ends it
    /// (then `true`, as when nothing follows yet); any other byte means a writer glued bytes
    /// onto it, so the line indexed is not the log's line (then `false`).
    fn end_unterminated_line(&mut self, storage: &dyn LogStorage) -> Result<bool> {
        let len_bytes = storage
            .len_bytes()
            .map_err(|e| Error::io(storage.path(), "look at the log", e))?;
        if len_bytes <= self.indexed_len_bytes {
            return Ok(true);
        }
        let mut next = [0];
        read_exact_at(storage, self.indexed_len_bytes, &mut next)
            .map_err(|e| Error::io(storage.path(), "read the log", e))?;
        if next != *b"\n" {
            return Ok(false);
        }
        self.hasher.update(&next);
        self.indexed_len_bytes += 1;
        self.unterminated = false;
        Ok(true)
    }

    /// Drops what this store derived from a last line that changed after it was indexed
    /// without its `\n`: reopens the index as a fresh open would (the committed index never
    /// holds such a line, so only what the overlay held is read again, from the log), or, with
    /// no sidecar, replays the log.
    fn reload(&mut self, storage: &dyn LogStorage) -> Result<()> {
        let tuning = self.parallel;
        let progress = self.progress.clone();
        // This store stays as it was if the reload fails (its next catch-up tries again).
        let store = match self.sidecar_path.clone() {
            Some(sidecar) if self.read_only => {
                Store::open_read_only(storage, &sidecar, Verify::Quick, &progress)?.0
            }
            Some(sidecar) => Store::open(storage, &sidecar, Verify::Quick, false, &progress)?.0,
            None => {
                let mut store = Store::in_memory(storage.path()).with_progress(&progress);
                store.parallel = tuning;
                store.catch_up(storage)?;
                store
            }
        };
        *self = store;
        self.parallel = tuning;
        self.reloaded = true;
        Ok(())
    }

    /// Whether a catch-up reloaded this store since the last call (see `reloaded`).
    pub(crate) fn take_reloaded(&mut self) -> bool {
        std::mem::take(&mut self.reloaded)
    }

    /// Indexes the bytes `[indexed_len_bytes, len_bytes)`, what follows the complete lines a
    /// catch-up read, as the log's last line when they are one without its `\n`
    /// ([`is_complete_last_line`]); otherwise they are a torn tail, left for a later catch-up.
    pub(crate) fn index_unterminated_line(
        &mut self,
        storage: &dyn LogStorage,
        len_bytes: u64,
    ) -> Result<()> {
        let start = self.indexed_len_bytes;
        if self.unterminated
            || len_bytes <= start
            || len_bytes - start > crate::limits::LINE_LEN_MAX as u64
        {
            return Ok(());
        }
        self.check_applicable()?;
        let mut bytes = vec![0; (len_bytes - start) as usize];
        read_exact_at(storage, start, &mut bytes)
            .map_err(|e| Error::io(storage.path(), "read the log", e))?;
        if !is_complete_last_line(&bytes) {
            return Ok(());
        }
        self.apply_unterminated_line(start, &bytes)?;
        self.hasher.update(&bytes);
        Ok(())
    }

    /// Indexes lines this handle has just written, from memory instead of reading them back.
    /// The caller guarantees that the log held exactly `indexed_len_bytes` before its write
    /// and exactly that plus `text` after it (no other writer's bytes around them), and that
    /// `text` is whole lines, each ending in `\n`; after a last line indexed without its `\n`
    /// (`unterminated`), `text` starts with that `\n`. `entries` are the field spans of the
    /// lines from `entries_start_bytes` on, as `NewEntry::encode_into` wrote them: those lines
    /// are indexed without a scan (`classify_written`), any before them (a header) are
    /// classified.
    pub fn apply_written(
        &mut self,
        text: &str,
        entries_start_bytes: usize,
        entries: &[FieldSpans],
    ) -> Result<()> {
        self.check_applicable()?;
        let start = self.indexed_len_bytes;
        let bytes = text.as_bytes();
        debug_assert!(bytes.ends_with(b"\n"), "appends end with a newline");
        let mut entries = entries.iter();
        let mut line_start = 0;
        let mut line_ends = memchr::memchr_iter(b'\n', bytes);
        if self.unterminated {
            // The text starts with the `\n` that ends the last line, indexed without it.
            debug_assert_eq!(
                bytes.first(),
                Some(&b'\n'),
                "an unterminated line is ended first"
            );
            line_ends.next();
            self.indexed_len_bytes += 1;
            self.unterminated = false;
            line_start = 1;
        }
        for line_end in line_ends {
            let line = &text[line_start..line_end];
            let offset_bytes = start + line_start as u64;
            let len_bytes = line.len() as u64;
            let crc32 = crc32fast::hash(line.as_bytes());
            let spans = (line_start >= entries_start_bytes)
                .then(|| entries.next())
                .flatten();
            let fits = line.len() <= crate::limits::LINE_LEN_MAX;
            match (spans, self.settled_legacy_v1()) {
                (Some(spans), Some(legacy_v1)) if fits => {
                    let classified = crate::format::line::classify_written(line, spans, legacy_v1);
                    debug_assert_eq!(
                        classified,
                        crate::format::line::classify(line, legacy_v1, false),
                        "classify_written answers as classify"
                    );
                    self.apply_classified_ahead(offset_bytes, len_bytes, crc32, classified)?;
                }
                _ => {
                    let kept = fits.then_some(line.as_bytes());
                    self.apply_line(offset_bytes, len_bytes, crc32, kept)?;
                }
            }
            line_start = line_end + 1;
        }
        self.hasher.update(&bytes[..line_start]);
        Ok(())
    }

    /// Hashes the bytes of lines just indexed, and writes the overlay out if it is big enough
    /// (only at a line end, where the hashes and the records describe the same prefix).
    fn consumed(&mut self, bytes: &[u8], identity: FileIdentity) -> Result<()> {
        self.hasher.update(bytes);
        self.flush_when_due(identity)
    }
}
