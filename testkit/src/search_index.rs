//! What a search index's files hold, read without the index's own reader: the check behind
//! every test that text removed from the logs (an edit, a redaction) has left the index too.

use std::collections::BTreeSet;
use std::path::Path;

/// Whether `word` is anywhere in the search index folder `index_dir`: in the bytes of any file
/// under it (what `grep -r word` finds), or in the term dictionary of any segment (whose
/// encoding need not hold a word's bytes in a row). Every segment file on disk must belong to a
/// segment the index lists, so that a replaced or deleted segment's files cannot hold it either.
pub fn index_holds(index_dir: &Path, word: &str) -> bool {
    let mut in_bytes = false;
    let mut stems = BTreeSet::new();
    let mut folders = vec![index_dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            in_bytes |= std::fs::read(&path)
                .unwrap()
                .windows(word.len())
                .any(|window| window == word.as_bytes());
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if let Some((stem, _)) = name.split_once('.')
                && stem.len() == 32
            {
                stems.insert(stem.to_owned());
            }
        }
    }
    let index = tantivy::Index::open_in_dir(index_dir).unwrap();
    let listed: BTreeSet<String> = index
        .searchable_segment_ids()
        .unwrap()
        .iter()
        .map(|id| id.uuid_string())
        .collect();
    assert!(
        stems.is_subset(&listed),
        "files of unlisted segments: {stems:?} vs {listed:?}"
    );
    index.tokenizers().register(
        "treelog_text",
        tantivy::tokenizer::SimpleTokenizer::default(),
    );
    let text = index.schema().get_field("text").unwrap();
    let reader = index.reader().unwrap();
    let in_terms = reader.searcher().segment_readers().iter().any(|segment| {
        segment
            .inverted_index(text)
            .unwrap()
            .get_term_info(&tantivy::Term::from_field_text(text, word))
            .unwrap()
            .is_some()
    });
    in_bytes || in_terms
}
