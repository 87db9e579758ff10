//! The top documents of a search, in an order that depends only on the logs.
//!
//! tantivy orders documents of equal score (or equal time, for `--sort newest`) by where they
//! happen to sit in the index (segment, then document number), and that changes with every
//! catch-up, merge and rebuild. A `--limit` that falls inside a run of equal scores would then
//! keep different hits from one search to the next over the same logs. Here equal keys are
//! ordered by session (the log's path in the directory), then line, and the cut is made in
//! that order.
//!
//! The engine is asked for one document more than the limit: when that one ranks strictly
//! after the last kept, every document tied with the last kept was collected, so the tie can
//! be broken exactly. Otherwise the request doubles until it can. Only the documents tied at
//! the cut cost more than a plain top-k, and the engine keeps its pruning (block-max WAND,
//! the phrase bound), which a compound sort key would turn off.

use std::cmp::Ordering;

use tantivy::collector::TopDocs;
use tantivy::query::Query;
use tantivy::schema::Value;
use tantivy::{DocAddress, Order, Searcher, TantivyDocument};

use super::store::{Fields, TIMESTAMP_MS_FIELD};

/// A document's place in the logs: (session key, line). Equal keys are ordered by it.
type Place = (String, u64);

/// The first `limit` documents of `query` by score, highest first; equal scores in
/// (session, line) order.
pub(super) fn by_score(
    searcher: &Searcher,
    query: &dyn Query,
    fields: Fields,
    limit: usize,
) -> tantivy::Result<Vec<(f32, DocAddress)>> {
    stable_top(
        searcher,
        fields,
        limit,
        |want| searcher.search(query, &TopDocs::with_limit(want).order_by_score()),
        |a: &f32, b: &f32| b.total_cmp(a),
    )
}

/// The first `limit` documents of `query` by time, newest first (undated last); equal times
/// in (session, line) order.
pub(super) fn by_newest(
    searcher: &Searcher,
    query: &dyn Query,
    fields: Fields,
    limit: usize,
) -> tantivy::Result<Vec<DocAddress>> {
    let top = stable_top(
        searcher,
        fields,
        limit,
        |want| {
            searcher.search(
                query,
                &TopDocs::with_limit(want)
                    .order_by_fast_field::<i64>(TIMESTAMP_MS_FIELD, Order::Desc),
            )
        },
        // `None` (no time) sorts below every time, so after them, as tantivy puts it.
        |a: &Option<i64>, b: &Option<i64>| b.cmp(a),
    )?;
    Ok(top.into_iter().map(|(_, address)| address).collect())
}

/// The first `limit` (≥ 1) documents by `key_order` (which key comes first), ties in
/// [`Place`] order. `collect(want)` returns the engine's first `want` documents by the same
/// order, ties in any order.
fn stable_top<K: Copy>(
    searcher: &Searcher,
    fields: Fields,
    limit: usize,
    collect: impl Fn(usize) -> tantivy::Result<Vec<(K, DocAddress)>>,
    key_order: impl Fn(&K, &K) -> Ordering,
) -> tantivy::Result<Vec<(K, DocAddress)>> {
    // No search returns more documents than the index holds; asking for more would only make
    // the engine allocate room for them (a `--limit` near 2^64 once aborted the process).
    let most = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
    let mut want = limit.saturating_add(1).min(most).max(1);
    let found = loop {
        let found = collect(want)?;
        let settled = found.len() <= limit
            || found.len() < want
            || key_order(&found[limit - 1].0, &found[want - 1].0) == Ordering::Less;
        if settled || want >= most {
            break found;
        }
        want = want.saturating_mul(2).min(most);
    };
    // Everything ranked strictly after the last one kept is out, whatever its place.
    let cut = found.get(limit - 1).map(|(key, _)| *key);
    let mut ranked = Vec::with_capacity(found.len());
    for (key, address) in found {
        if cut.is_some_and(|cut| key_order(&key, &cut) == Ordering::Greater) {
            break;
        }
        ranked.push((key, place(searcher, fields, address)?, address));
    }
    ranked.sort_by(|a, b| key_order(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
    ranked.truncate(limit);
    Ok(ranked
        .into_iter()
        .map(|(key, _, address)| (key, address))
        .collect())
}

/// Where the document at `address` is in the logs. A stored document without them (a damaged
/// index) sorts first; reading its hit reports the damage.
fn place(searcher: &Searcher, fields: Fields, address: DocAddress) -> tantivy::Result<Place> {
    let document: TantivyDocument = searcher.doc(address)?;
    let session = document
        .get_first(fields.session)
        .and_then(|value| value.as_str())
        .unwrap_or_default()
        .to_owned();
    let line = document
        .get_first(fields.line)
        .and_then(|value| value.as_u64())
        .unwrap_or_default();
    Ok((session, line))
}
