//! Replays every committed fuzz input (fuzz/corpus/<target>/*) through the same checks the
//! fuzz targets run (`treelog_testkit::fuzz`), without libFuzzer, so that `cargo test` keeps
//! every input the fuzzers found interesting, and every crash they found, fixed.

use treelog_testkit::fuzz;

#[test]
fn line_parser_corpus() {
    fuzz::replay_corpus("line_parser", fuzz::line_parser);
}

#[test]
fn index_pages_corpus() {
    fuzz::replay_corpus("index_pages", fuzz::index_pages);
}

#[test]
fn open_log_corpus() {
    fuzz::replay_corpus("open_log", fuzz::open_log);
}

#[test]
fn operations_corpus() {
    fuzz::replay_corpus("operations", fuzz::operations);
}

#[test]
fn context_edit_corpus() {
    fuzz::replay_corpus("context_edit", fuzz::context_edit);
}
