//! Regression tests: one module per bug found and fixed. Each line below names the bug its module
//! guards; the module's own comment says how it was found and what holds now.

// A log starting with a UTF-8 byte order mark got a header made up in memory.
mod bom;
// Search read a `context_edit` with serde_json, the context as JSON.parse: a removed message
// stayed searchable; a deleted or rewritten log's text stayed in the index's files.
#[cfg(feature = "search")]
mod context_edit_one_reading;
// A damaged or crafted sidecar duplicated a subtree or panicked while paging records.
mod damaged_sidecar_paging;
// A redb panic on a damaged index page escaped from a read after open.
mod damaged_sidecar_read;
// A line whose JSON object repeats a key was opaque instead of last-key-wins.
mod duplicate_keys;
// A line that failed to index part-way was counted as indexed all the same.
mod failed_apply_stops_indexing;
// A failed flush left the handle without its read tables: "no such entry" for everything.
mod failed_flush_keeps_tables;
// A failed index write escaped from the append after its entry was already in the log.
mod index_write_failure;
// Rebuild leftovers of killed processes stayed; repair replaced a symlinked log with a
// regular file at 0644.
mod leftovers_and_replaced_logs;
// A `NewEntry` whose raw JSON held a line break was written as two broken lines.
mod multiline_raw_entry;
// A FIFO given as a log blocked the open; a read-only file system could not be read.
mod odd_and_read_only_logs;
// Input pi reads one way and treelog read another (version 3.0, message without `message`).
mod pi_edge_reads;
// Dropping a session after a caught redb panic panicked on redb's poisoned lock.
mod poisoned_redb_drop;
// An index of the previous schema (7) must be rebuilt, never read.
mod previous_schema;
// A damaged record naming a huge line made a read allocate that much before any check.
mod record_bounds;
// A search cleared the folder a symlinked `.treelog-search` pointed to; its files were 0644.
#[cfg(feature = "search")]
mod search_folder_link;
// `Session::tree()` ordered children otherwise than pi 1.6.0's `getTree()`.
mod tree_order;
// A complete last line without its final `\n` was a torn tail, never an entry.
mod unterminated_last_line;
// A v1 compaction's `firstKeptEntryIndex` was ignored, dropping the kept entries.
mod v1_compaction;
// The v1 migration of `repair` refused a line holding an unpaired surrogate escape.
mod v1_migration_lone_surrogate;

// The object-store bugs are checked in `tests/store_sim/` (a binary of its own: the
// `object-store` feature): a store's listing trusted to size reads and to end (`lying.rs`), and
// the protocol's races (`sim/cases.rs`: a create re-using a deleted key, mixed bytes from a
// re-used key, an undo leaving a gap, a failed covering segment left for readers, an idle
// handle's gap, an append past the end the engine read, a 409 taken as "exists").
