//! Regression (found in review): a flush that failed after the store had let go of its read
//! tables (here: a damaged page of `ids` met while merging new ids into it) left the handle
//! without them, so it answered "no such entry" for everything already committed. A failed
//! flush must leave the handle answering as before, from its old tables plus its overlay.

use std::io::Write;

use treelog::{Session, SessionOptions};

const IDS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("ids");
const HEADER: &str = r#"{"type":"session","version":3,"id":"01942117-de87-73f5-8d57-ac533bb5be51","timestamp":"2025-01-01T09:00:00.007Z","cwd":"/"}"#;

fn root_entry(id: u32) -> String {
    format!(
        r#"{{"type":"message","id":"{id:08x}","parentId":null,"timestamp":"2025-01-01T09:00:00.007Z","message":{{"role":"user","content":"x"}}}}"#
    )
}

#[test]
fn failed_flush_keeps_answering_committed_entries() {
    let dir = treelog_testkit::scratch_dir();
    let path = dir.path().join("s.jsonl");
    let mut log = format!("{HEADER}\n");
    let ids: Vec<u32> = (0..3000u32)
        .map(|n| n.wrapping_mul(2_654_435_761) >> 4)
        .collect();
    for id in &ids {
        log.push_str(&root_entry(*id));
        log.push('\n');
    }
    std::fs::write(&path, log).unwrap();
    drop(Session::open(&path, SessionOptions::default()).unwrap());
    // Cut the last bytes off the last page of `ids` (ids below 0x1000_0000 in five pages or
    // so): it fails its crc.
    treelog_testkit::tamper(&path, |txn| {
        let mut table = txn.open_table(IDS).unwrap();
        let (key, mut page) = {
            let (key, page) = redb::ReadableTable::last(&table).unwrap().unwrap();
            (key.value(), page.value().to_vec())
        };
        page.truncate(page.len() - 16);
        table.insert(key, page.as_slice()).unwrap();
    });

    let mut session = Session::open(&path, SessionOptions::default()).unwrap();
    let first = format!("{:08x}", ids[0]);
    assert!(session.entry(&first).unwrap().is_some());
    // Another writer appends a root whose id falls into the damaged page, above every id so
    // far; this handle catches up and flushes it into `ids` (one id: a narrow flush), which
    // meets the damaged page and fails.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "{}", root_entry(0x1000_0fff)).unwrap();
    drop(file);
    session.refresh().unwrap();
    let _ = session.sync();

    assert!(
        session.entry(&first).unwrap().is_some(),
        "a committed entry"
    );
    assert!(
        session.entry("10000fff").unwrap().is_some(),
        "the caught-up entry"
    );
    assert_eq!(
        session.path_ids(None).unwrap(),
        vec!["10000fff".to_string()]
    );
    // The flush failed: the index still ends before the caught-up line, which a fresh open
    // catches up (a quick open does not read the damaged page), answering the same.
    drop(session);
    let reopened = Session::open(&path, SessionOptions::default()).unwrap();
    assert!(
        matches!(
            reopened.index_state(),
            treelog::IndexState::CaughtUp { lines: 1, .. }
        ),
        "{:?}",
        reopened.index_state()
    );
    assert!(reopened.entry(&first).unwrap().is_some());
    assert!(reopened.entry("10000fff").unwrap().is_some());
}
