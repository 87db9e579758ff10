//! The tables of a sidecar index and their redb page statistics:
//! `cargo run -p treelog-dev --release --example redb_stats -- FILE` (a log, or its `.treelog` sidecar).
use redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "redb_stats",
    arguments: "FILE",
    about: "Prints each table of the sidecar index of FILE (a session log, or the sidecar itself,\n\
            FILE.treelog) with its entries, pages, stored, metadata and fragmented bytes and depth.\n\
            The sidecar is opened read-only.",
};

fn main() {
    let args = PROBE.args(1);
    let given = std::path::PathBuf::from(PROBE.required(&args, 0, "FILE (a log or its sidecar)"));
    // A log's sidecar is `<log>.treelog`: accept either, as `treelog` itself takes logs.
    let sidecar = if given.to_string_lossy().ends_with(treelog::SIDECAR_SUFFIX) {
        given
    } else {
        treelog::sidecar_path(&given)
    };
    if !sidecar.is_file() {
        PROBE.usage_error(format!(
            "{}: no such sidecar (open the log once, or run `treelog reindex LOG`, to create it)",
            sidecar.display()
        ));
    }
    let shown = sidecar.display().to_string();
    let db = PROBE.check(
        redb::Database::builder()
            .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
            .open_read_only(&sidecar),
        &format!("{shown}: not a readable sidecar index"),
    );
    let txn = PROBE.check(db.begin_read(), &format!("{shown}: read"));
    for table in PROBE.check(txn.list_tables(), &format!("{shown}: list the tables")) {
        let name = table.name().to_string();
        // Untyped: the statistics need no key or value types, so this probe stays right
        // whatever the tables of src/index/ store.
        let doing = format!("{shown}: table {name}");
        let table = PROBE.check(txn.open_untyped_table(table), &doing);
        let stats = PROBE.check(table.stats(), &doing);
        println!(
            "{name}: len {} leaf_pages {} branch_pages {} stored {} metadata {} fragmented {} depth {}",
            PROBE.check(table.len(), &doing),
            stats.leaf_pages(),
            stats.branch_pages(),
            stats.stored_bytes(),
            stats.metadata_bytes(),
            stats.fragmented_bytes(),
            stats.tree_height()
        );
    }
}
