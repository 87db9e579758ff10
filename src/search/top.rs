//! The top documents of a search, in an order that depends only on the logs.
//!
//! tantivy orders documents of equal score (or equal time, for `--sort newest`) by where they
//! happen to sit in the index (segment, then document number), and that changes with every
//! catch-up, merge and rebuild. A `--limit` that falls inside a run of equal scores would then
//! keep different hits from one search to the next over the same logs. Here equal keys are
//! ordered by session (the log's path in the directory), then line, and the cut is made in
//! that order.
//!
//! Each segment is read once, keeping its best documents by (key, place) in [`SegmentBest`].
//! By score, the engine prunes as it does for a plain top-k (block-max WAND, the phrase
//! bound), with a threshold just under the worst kept score, so that documents tied with it
//! are still seen; a segment starts from the score the earlier segments' best reached. By
//! time nothing is scored, and the time comes from its column. Places come from the index's
//! columns: a segment's session ordinals sort as its session keys do, and a document that
//! ties with the worst kept is mostly dropped after reading its ordinal alone.

use std::cmp::{Ordering, Reverse};

use tantivy::columnar::{Column, StrColumn};
use tantivy::fastfield::AliveBitSet;
use tantivy::query::{EnableScoring, Query};
use tantivy::{DocAddress, DocId, Searcher, SegmentReader, TantivyError};

use super::store::{LINE_FIELD, SESSION_FIELD, TIMESTAMP_MS_FIELD};

/// The first `limit` (≥ 1) documents of `query` by score, highest first; equal scores in
/// (session, line) order.
pub(super) fn by_score(
    searcher: &Searcher,
    query: &dyn Query,
    limit: usize,
) -> tantivy::Result<Vec<(f32, DocAddress)>> {
    let limit = limit.min(document_count(searcher));
    let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
    let mut best: Vec<Ranked<Reverse<Score>>> = Vec::new();
    // The score of the limit-th best document so far: a later one scoring less is out.
    let mut floor = f32::MIN;
    for (segment_ord, reader) in searcher.segment_readers().iter().enumerate() {
        let mut segment = SegmentBest::new(reader, limit)?;
        let mut threshold = floor.next_down();
        weight.for_each_pruning(threshold, reader, &mut |doc, score| {
            if score >= floor && segment.alive(doc) && segment.offer(Reverse(Score(score)), doc) {
                // tantivy skips what scores at or below the threshold: ties with the worst
                // kept must still be seen.
                threshold = segment
                    .worst()
                    .map_or(threshold, |worst| worst.0.0.0.next_down());
            }
            threshold
        })?;
        best.extend(segment.ranked(segment_ord as u32)?);
        if let Some(last) = keep_best(&mut best, limit) {
            floor = last.key.0.0;
        }
    }
    keep_best(&mut best, limit);
    Ok(best
        .into_iter()
        .map(|ranked| (ranked.key.0.0, ranked.address))
        .collect())
}

/// The first `limit` (≥ 1) documents of `query` by time, newest first (undated last); equal
/// times in (session, line) order.
pub(super) fn by_newest(
    searcher: &Searcher,
    query: &dyn Query,
    limit: usize,
) -> tantivy::Result<Vec<DocAddress>> {
    let limit = limit.min(document_count(searcher));
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut best: Vec<Ranked<Reverse<Option<i64>>>> = Vec::new();
    for (segment_ord, reader) in searcher.segment_readers().iter().enumerate() {
        let times = reader.fast_fields().i64(TIMESTAMP_MS_FIELD)?;
        let mut segment = SegmentBest::new(reader, limit)?;
        weight.for_each_no_score(reader, &mut |docs| {
            for &doc in docs {
                if segment.alive(doc) {
                    segment.offer(Reverse(times.first(doc)), doc);
                }
            }
        })?;
        best.extend(segment.ranked(segment_ord as u32)?);
        keep_best(&mut best, limit);
    }
    keep_best(&mut best, limit);
    Ok(best.into_iter().map(|ranked| ranked.address).collect())
}

/// Sorts `best` and keeps its first `limit`; the last kept once there are `limit` of them.
fn keep_best<K: Ord>(best: &mut Vec<Ranked<K>>, limit: usize) -> Option<&Ranked<K>> {
    best.sort();
    best.truncate(limit);
    best.get(limit - 1)
}

/// No search returns more documents than the index holds: limits are cut to this (at least
/// 1), so that no buffer is ever sized by a limit (a `--limit` of 10^11 once made the engine
/// reserve room for that many hits and abort the process).
fn document_count(searcher: &Searcher) -> usize {
    usize::try_from(searcher.num_docs())
        .unwrap_or(usize::MAX)
        .max(1)
}

/// A score with a total order (`f32::total_cmp`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Score(f32);
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Score) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A document in the order of hits: `key` (less comes first), then session key and line.
struct Ranked<K> {
    key: K,
    session: String,
    line: u64,
    address: DocAddress,
}

impl<K: Ord> Ranked<K> {
    fn order(&self) -> (&K, &str, u64) {
        (&self.key, &self.session, self.line)
    }
}
impl<K: Ord> PartialEq for Ranked<K> {
    fn eq(&self, other: &Ranked<K>) -> bool {
        self.order() == other.order()
    }
}
impl<K: Ord> Eq for Ranked<K> {}
impl<K: Ord> PartialOrd for Ranked<K> {
    fn partial_cmp(&self, other: &Ranked<K>) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord> Ord for Ranked<K> {
    fn cmp(&self, other: &Ranked<K>) -> Ordering {
        self.order().cmp(&other.order())
    }
}

/// The best `limit` documents of one segment by (key, session ordinal, line), less first.
/// `kept` grows to twice `limit`, then is cut to its best `limit`, whose last is the worst:
/// a document ranked after it is dropped, reading as little of it as that takes.
struct SegmentBest<'a, K> {
    /// The segment's deleted documents, if any.
    alive: Option<&'a AliveBitSet>,
    sessions: StrColumn,
    lines: Column<u64>,
    limit: usize,
    kept: Vec<(K, u64, u64, DocId)>,
    worst: Option<(K, u64, u64)>,
}

impl<'a, K: Ord + Copy> SegmentBest<'a, K> {
    fn new(reader: &'a SegmentReader, limit: usize) -> tantivy::Result<SegmentBest<'a, K>> {
        let sessions = reader.fast_fields().str(SESSION_FIELD)?.ok_or_else(|| {
            TantivyError::SchemaError(format!("the index has no {SESSION_FIELD} column"))
        })?;
        Ok(SegmentBest {
            alive: reader.alive_bitset(),
            sessions,
            lines: reader.fast_fields().u64(LINE_FIELD)?,
            limit,
            kept: Vec::new(),
            worst: None,
        })
    }

    fn alive(&self, doc: DocId) -> bool {
        self.alive.is_none_or(|alive| alive.is_alive(doc))
    }

    /// The worst document kept once `limit` are: (key, ordinal, line).
    fn worst(&self) -> Option<(K, u64, u64)> {
        self.worst
    }

    /// Keeps `doc` (with `key`) unless it ranks after the worst kept; whether it was kept.
    fn offer(&mut self, key: K, doc: DocId) -> bool {
        let session = |doc| self.sessions.ords().first(doc).unwrap_or(0);
        let line = |doc| self.lines.first(doc).unwrap_or(0);
        if let Some(worst) = self.worst {
            match key.cmp(&worst.0) {
                Ordering::Greater => return false,
                Ordering::Equal => match session(doc).cmp(&worst.1) {
                    Ordering::Greater => return false,
                    Ordering::Equal if line(doc) > worst.2 => return false,
                    _ => {}
                },
                _ => {}
            }
        }
        let entry = (key, session(doc), line(doc), doc);
        self.kept.push(entry);
        if self.kept.len() >= self.limit.saturating_mul(2) {
            self.cut();
        }
        true
    }

    fn cut(&mut self) {
        if self.kept.len() > self.limit {
            self.kept.select_nth_unstable_by(self.limit - 1, |a, b| {
                (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2))
            });
            self.kept.truncate(self.limit);
            let last = self.kept[self.limit - 1];
            self.worst = Some((last.0, last.1, last.2));
        }
    }

    /// The documents kept, with their session keys read from the column's dictionary.
    fn ranked(mut self, segment_ord: u32) -> tantivy::Result<Vec<Ranked<K>>> {
        self.cut();
        let mut ranked = Vec::with_capacity(self.kept.len());
        for &(key, ordinal, line, doc) in &self.kept {
            let mut session = String::new();
            self.sessions.ord_to_str(ordinal, &mut session)?;
            ranked.push(Ranked {
                key,
                session,
                line,
                address: DocAddress::new(segment_ord, doc),
            });
        }
        Ok(ranked)
    }
}
