use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition, TableHandle};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let db = redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open_read_only(&path)
        .unwrap();
    let txn = db.begin_read().unwrap();
    for t in txn.list_tables().unwrap() {
        let name = t.name().to_string();
        macro_rules! show { ($k:ty, $v:ty) => {{
            let def: TableDefinition<$k, $v> = TableDefinition::new(&name);
            let table = txn.open_table(def).unwrap();
            let s = table.stats().unwrap();
            println!("{name}: len {} leaf_pages {} branch_pages {} stored {} metadata {} fragmented {} depth {}", table.len().unwrap(), s.leaf_pages(), s.branch_pages(), s.stored_bytes(), s.metadata_bytes(), s.fragmented_bytes(), s.tree_height());
        }}}
        match name.as_str() {
            "records" | "blocks" | "ids" | "ids-recent" => show!(u64, &[u8]),
            "id-collisions" => show!(&str, u64),
            "children" => show!((u64, u64), ()),
            _ => show!(&str, &[u8]),
        }
    }
}
