//! The snippet of a hit: the line of its entry read back from the log (the index does not
//! store text), and the text around the query's words, on one line.

use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use tantivy::snippet::SnippetGenerator;

/// Characters of text around the matched words in a snippet.
pub(super) const SNIPPET_CHARS: usize = 160;

/// The snippet of `found_text`: the text around the query's words, on one line, with the
/// ranges of the words; its start when they are not in it.
pub(super) fn snippet_of(
    found_text: &str,
    snippets: &SnippetGenerator,
) -> (String, Vec<Range<usize>>) {
    let snippet = snippets.snippet(found_text);
    let (fragment, highlights) = if snippet.is_empty() {
        let end = found_text
            .char_indices()
            .nth(SNIPPET_CHARS)
            .map_or(found_text.len(), |(at, _)| at);
        (found_text[..end].to_owned(), Vec::new())
    } else {
        (
            snippet.fragment().to_owned(),
            snippet.highlighted().to_vec(),
        )
    };
    // One line: each control character becomes a space (same length, so ranges stay valid).
    let flat = fragment
        .chars()
        .map(|c| {
            if c.is_control() && c.is_ascii() {
                ' '
            } else {
                c
            }
        })
        .collect();
    (flat, highlights)
}

/// Bytes read first for a snippet's line: most entries are shorter, and a longer line is
/// read on in chunks twice as large each time.
const SNIPPET_READ_FIRST_BYTES: usize = 8 << 10;

/// The line starting at `offset` of `log`, without its `\n`.
pub(super) fn read_line(log: &Path, offset: u64) -> Option<String> {
    let file = std::fs::File::open(log).ok()?;
    let mut line = Vec::new();
    let mut chunk = vec![0; SNIPPET_READ_FIRST_BYTES];
    loop {
        let read = file.read_at(&mut chunk, offset + line.len() as u64).ok()?;
        if read == 0 {
            return None;
        }
        if let Some(end) = memchr::memchr(b'\n', &chunk[..read]) {
            line.extend_from_slice(&chunk[..end]);
            return String::from_utf8(line).ok();
        }
        line.extend_from_slice(&chunk[..read]);
        if line.len() > crate::limits::LINE_LEN_MAX {
            return None;
        }
        let grown = (chunk.len() * 2).min(1 << 20);
        chunk.resize(grown, 0);
    }
}
