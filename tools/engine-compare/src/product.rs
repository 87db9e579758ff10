//! The tantivy side: `treelog::search` itself, as `treelog reindex --search --force DIR` and
//! `treelog search QUERY DIR` run it, so that its figures are the product's.

use std::path::Path;

use treelog::search::{ParsedQuery, Quiet, SearchOptions, SortOrder};

use crate::{CompareError, Found};

pub fn build(dir: &Path) -> Result<(), CompareError> {
    treelog::search::reindex(dir, None, true, &Quiet)?;
    Ok(())
}

pub fn search(dir: &Path, parsed: &ParsedQuery, limit: usize) -> Result<Vec<Found>, CompareError> {
    let options = SearchOptions {
        filters: Default::default(),
        limit,
        sort: SortOrder::Score,
        index_dir: None,
        index_write: true,
    };
    let hits = treelog::search::search(dir, parsed, &options, &Quiet)?;
    Ok(hits
        .into_iter()
        .map(|hit| Found {
            // A hit's session is the directory joined with its key.
            key: hit
                .session
                .strip_prefix(dir)
                .map_or_else(|_| hit.session.clone(), Path::to_path_buf)
                .to_string_lossy()
                .into_owned(),
            line: hit.line,
            score: f64::from(hit.score),
            snippet: hit.snippet,
        })
        .collect())
}
