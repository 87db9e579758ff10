//! The small tables: `children`, `labels`, `id-collisions` and `tallies` (format-spec/index.md,
//! "Tables" and "Checksums"). They hold only what the records cannot say (children that are
//! not on the line after their parent, the current labels, ids that share a hashed key, line
//! counts and bytes by tool, extension and unknown type or role), so they stay
//! small, and a handle reads each one whole, once per committed state, into memory.
//!
//! Reading them whole is what makes them checkable: every value is sealed under its key
//! (`format::seal`), so a damaged key or value fails, and the state records how many keys each
//! table holds, so a key lost to a damaged B-tree page (a search sent past it) shows as a count
//! that does not match. A point lookup in redb could not tell "absent" from "lost".
//!
//! This module owns the layouts and the checks; the store decides when to load and flush.

use std::collections::{BTreeMap, HashMap};

use redb::{ReadableTable, ReadableTableMetadata, Table, TableDefinition};

use crate::format::record::{LabelValue, StoredCounts};
use crate::format::seal::{seal, seal_of, unseal};

use super::fast_map::FastMap;

/// `(parent seq or SEQ_NONE for roots, child seq)` → the seal of the key.
pub(crate) const CHILDREN: TableDefinition<(u64, u64), u32> = TableDefinition::new("children");
/// Target id → label value, sealed.
pub(crate) const LABELS: TableDefinition<&str, &[u8]> = TableDefinition::new("labels");
/// Ids whose key another id holds in `ids` or `ids-recent` → their seq, sealed (almost always
/// empty).
pub(crate) const ID_COLLISIONS: TableDefinition<&str, &[u8]> =
    TableDefinition::new("id-collisions");

/// Tally key (`format::size_facts`: a group's prefix letter, `:`, the name; or `images`) → its
/// count and bytes, sealed.
pub(crate) const TALLIES: TableDefinition<&str, &[u8]> = TableDefinition::new("tallies");

/// A count of lines (or images) and their bytes.
pub(crate) type CountBytes = (u64, u64);

type SmallResult<T> = std::result::Result<T, String>;

fn child_key_bytes(parent: u64, child: u64) -> [u8; 16] {
    let mut key = [0; 16];
    key[..8].copy_from_slice(&parent.to_le_bytes());
    key[8..].copy_from_slice(&child.to_le_bytes());
    key
}

fn child_seal(parent: u64, child: u64) -> u32 {
    seal_of(b"children", &child_key_bytes(parent, child), &[])
}

/// Checks that a table read whole held the number of keys the state records.
fn check_count(table: &str, read: u64, expected: u64) -> SmallResult<()> {
    if read == expected {
        Ok(())
    } else {
        Err(format!(
            "the {table} table holds {read} keys where the index recorded {expected}"
        ))
    }
}

/// Keys must come in strictly increasing order: a damaged B-tree that visits a leaf twice, or
/// out of place, shows here.
fn check_order<K: PartialOrd + std::fmt::Debug>(
    table: &str,
    last: &mut Option<K>,
    key: K,
) -> SmallResult<()> {
    if last.as_ref().is_some_and(|last| *last >= key) {
        return Err(format!(
            "the {table} table's keys are out of order at {key:?}"
        ));
    }
    *last = Some(key);
    Ok(())
}

/// Every listed child by parent, in child (file) order, checked.
pub(crate) fn load_children(
    table: &impl ReadableTable<(u64, u64), u32>,
    expected: u64,
) -> SmallResult<FastMap<u64, Vec<u64>>> {
    let mut children: FastMap<u64, Vec<u64>> = FastMap::default();
    let mut read = 0u64;
    let mut last = None;
    for item in table.iter().map_err(|e| e.to_string())? {
        let (key, value) = item.map_err(|e| e.to_string())?;
        let (parent, child) = key.value();
        if value.value() != child_seal(parent, child) {
            return Err(format!(
                "children table: checksum mismatch for child {child} of {parent}"
            ));
        }
        if parent != crate::format::record::SEQ_NONE && child <= parent {
            return Err(format!(
                "children table: child {child} does not follow its parent {parent}"
            ));
        }
        check_order("children", &mut last, (parent, child))?;
        children.entry(parent).or_default().push(child);
        read += 1;
    }
    check_count("children", read, expected)?;
    Ok(children)
}

/// Reads a text-keyed sealed table whole: each value unsealed under its key and decoded by
/// `decode`, the keys in strictly increasing order and as many as the state records.
fn load_text_keyed<T, M: Default + Extend<(String, T)>>(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    name: &str,
    expected: u64,
    decode: impl Fn(&str, &[u8]) -> SmallResult<T>,
) -> SmallResult<M> {
    let mut loaded = M::default();
    let mut read = 0u64;
    let mut last: Option<String> = None;
    for item in table.iter().map_err(|e| e.to_string())? {
        let (key, value) = item.map_err(|e| e.to_string())?;
        let key = key.value();
        let body = unseal(name.as_bytes(), key.as_bytes(), value.value(), || {
            format!("{name} value of {key:?}")
        })
        .map_err(|error| error.0)?;
        let decoded = decode(key, body)?;
        check_order(name, &mut last, key.to_string())?;
        loaded.extend([(key.to_string(), decoded)]);
        read += 1;
    }
    check_count(name, read, expected)?;
    Ok(loaded)
}

/// Every label by target id, checked.
pub(crate) fn load_labels(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    expected: u64,
) -> SmallResult<BTreeMap<String, LabelValue>> {
    load_text_keyed(table, "labels", expected, |_, body| {
        LabelValue::decode(body).map_err(|error| error.0)
    })
}

/// Every id collision, checked.
pub(crate) fn load_id_collisions(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    expected: u64,
) -> SmallResult<HashMap<String, u64>> {
    load_text_keyed(table, "id-collisions", expected, |id, body| {
        let seq = body
            .try_into()
            .map_err(|_| format!("id collision of {id:?}: {} bytes", body.len()))?;
        Ok(u64::from_le_bytes(seq))
    })
}

/// Every tally by key, checked.
pub(crate) fn load_tallies(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    expected: u64,
) -> SmallResult<BTreeMap<String, CountBytes>> {
    load_text_keyed(table, "tallies", expected, decode_tally)
}

/// A tally's value: its count and bytes, 8 bytes each.
fn decode_tally(key: &str, body: &[u8]) -> SmallResult<CountBytes> {
    let value: [u8; 16] = body
        .try_into()
        .map_err(|_| format!("tally of {key:?}: {} bytes", body.len()))?;
    let [count, bytes] = [&value[..8], &value[8..]]
        .map(|half| u64::from_le_bytes(half.try_into().unwrap_or_default()));
    Ok((count, bytes))
}

/// What a flush files in the small tables, and the counts it leaves. `counts` are the
/// committed state's; each insert of a new key or removal of a held one moves them.
pub(crate) struct SmallWriter<'txn> {
    children: Table<'txn, (u64, u64), u32>,
    labels: Table<'txn, &'static str, &'static [u8]>,
    id_collisions: Table<'txn, &'static str, &'static [u8]>,
    tallies: Table<'txn, &'static str, &'static [u8]>,
    pub counts: StoredCounts,
}

impl<'txn> SmallWriter<'txn> {
    pub fn open(txn: &'txn redb::WriteTransaction, counts: StoredCounts) -> SmallResult<Self> {
        let open_error = |e: redb::TableError| e.to_string();
        let writer = SmallWriter {
            children: txn.open_table(CHILDREN).map_err(open_error)?,
            labels: txn.open_table(LABELS).map_err(open_error)?,
            id_collisions: txn.open_table(ID_COLLISIONS).map_err(open_error)?,
            tallies: txn.open_table(TALLIES).map_err(open_error)?,
            counts,
        };
        // The counts are checked against redb's own before anything is added, so that a
        // flush never seals a count that the table does not hold.
        let held =
            |len: std::result::Result<u64, redb::StorageError>| len.map_err(|e| e.to_string());
        check_count("children", held(writer.children.len())?, counts.children)?;
        check_count("labels", held(writer.labels.len())?, counts.labels)?;
        check_count(
            "id-collisions",
            held(writer.id_collisions.len())?,
            counts.id_collisions,
        )?;
        check_count("tallies", held(writer.tallies.len())?, counts.tallies)?;
        Ok(writer)
    }

    pub fn add_child(&mut self, parent: u64, child: u64) -> SmallResult<()> {
        let old = self
            .children
            .insert((parent, child), child_seal(parent, child))
            .map_err(|e| e.to_string())?;
        if old.is_none() {
            self.counts.children += 1;
        }
        Ok(())
    }

    /// Files the label of `target`, or clears it (`None`).
    pub fn set_label(&mut self, target: &str, value: Option<&LabelValue>) -> SmallResult<()> {
        match value {
            Some(value) => {
                let sealed = seal(b"labels", target.as_bytes(), value.encode());
                let old = self
                    .labels
                    .insert(target, sealed.as_slice())
                    .map_err(|e| e.to_string())?;
                if old.is_none() {
                    self.counts.labels += 1;
                }
            }
            None => {
                let old = self.labels.remove(target).map_err(|e| e.to_string())?;
                if old.is_some() {
                    self.counts.labels -= 1;
                }
            }
        }
        Ok(())
    }

    /// Adds `added` to the tally of `key`.
    pub fn add_tally(&mut self, key: &str, added: CountBytes) -> SmallResult<()> {
        let held = match self.tallies.get(key).map_err(|e| e.to_string())? {
            Some(value) => {
                let body = unseal(b"tallies", key.as_bytes(), value.value(), || {
                    format!("tallies value of {key:?}")
                })
                .map_err(|error| error.0)?;
                Some(decode_tally(key, body)?)
            }
            None => None,
        };
        let (count, bytes) = held.unwrap_or_default();
        let mut value = Vec::with_capacity(16);
        value.extend_from_slice(&(count + added.0).to_le_bytes());
        value.extend_from_slice(&(bytes + added.1).to_le_bytes());
        let sealed = seal(b"tallies", key.as_bytes(), value);
        self.tallies
            .insert(key, sealed.as_slice())
            .map_err(|e| e.to_string())?;
        if held.is_none() {
            self.counts.tallies += 1;
        }
        Ok(())
    }

    pub fn add_id_collision(&mut self, id: &str, seq: u64) -> SmallResult<()> {
        let sealed = seal(b"id-collisions", id.as_bytes(), seq.to_le_bytes().to_vec());
        let old = self
            .id_collisions
            .insert(id, sealed.as_slice())
            .map_err(|e| e.to_string())?;
        if old.is_none() {
            self.counts.id_collisions += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::ReadableDatabase;

    fn database() -> (tempfile::TempDir, redb::Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("small.redb")).unwrap();
        (dir, db)
    }

    /// What a flush files reads back whole; a count that does not match what the table holds
    /// (a key lost, or one too many) is an error, as is a value sealed under another key.
    #[test]
    fn tables_read_back_whole_and_checked() {
        let (_dir, db) = database();
        let txn = db.begin_write().unwrap();
        let counts = {
            let mut writer = SmallWriter::open(&txn, StoredCounts::default()).unwrap();
            writer.add_child(3, 9).unwrap();
            writer.add_child(3, 5).unwrap();
            writer.add_child(u64::MAX, 0).unwrap();
            writer.add_child(3, 5).unwrap();
            let label = LabelValue {
                label: "l".into(),
                timestamp: "t".into(),
            };
            writer.set_label("a", Some(&label)).unwrap();
            writer.set_label("b", Some(&label)).unwrap();
            writer.set_label("b", None).unwrap();
            writer.set_label("c", None).unwrap();
            writer.add_id_collision("x-long-id", 7).unwrap();
            writer.add_tally("t:bash", (1, 100)).unwrap();
            writer.add_tally("t:bash", (2, 50)).unwrap();
            writer.add_tally("images", (3, 9)).unwrap();
            writer.counts
        };
        txn.commit().unwrap();
        assert_eq!(
            counts,
            StoredCounts {
                children: 3,
                labels: 1,
                id_collisions: 1,
                tallies: 2,
            }
        );
        let read = db.begin_read().unwrap();
        let children = read.open_table(CHILDREN).unwrap();
        let loaded = load_children(&children, 3).unwrap();
        assert_eq!(loaded[&3], vec![5, 9]);
        assert_eq!(loaded[&u64::MAX], vec![0]);
        assert!(load_children(&children, 4).is_err(), "a key lost");
        assert!(load_children(&children, 2).is_err(), "a key too many");
        let labels = read.open_table(LABELS).unwrap();
        assert_eq!(load_labels(&labels, 1).unwrap().len(), 1);
        assert!(load_labels(&labels, 0).is_err());
        let collisions = read.open_table(ID_COLLISIONS).unwrap();
        assert_eq!(load_id_collisions(&collisions, 1).unwrap()["x-long-id"], 7);
        let tallies = read.open_table(TALLIES).unwrap();
        let loaded = load_tallies(&tallies, 2).unwrap();
        assert_eq!(loaded["t:bash"], (3, 150), "additions add up");
        assert_eq!(loaded["images"], (3, 9));
        assert!(load_tallies(&tallies, 3).is_err(), "a key lost");
        drop((children, labels, collisions, tallies, read));

        // A sealed value moved under another key fails its seal.
        let txn = db.begin_write().unwrap();
        {
            let mut children = txn.open_table(CHILDREN).unwrap();
            children.insert((3, 6), child_seal(3, 5)).unwrap();
            let mut labels = txn.open_table(LABELS).unwrap();
            let moved = labels.get("a").unwrap().unwrap().value().to_vec();
            labels.insert("z", moved.as_slice()).unwrap();
        }
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let error = load_children(&read.open_table(CHILDREN).unwrap(), 4).unwrap_err();
        assert!(error.contains("checksum"), "{error}");
        let error = load_labels(&read.open_table(LABELS).unwrap(), 2).unwrap_err();
        assert!(error.contains("checksum"), "{error}");
    }

    /// A flush refuses to add to a table whose key count is not the one the state recorded:
    /// sealing a new count over a lost key would hide the loss.
    #[test]
    fn a_flush_refuses_a_table_that_lost_keys() {
        let (_dir, db) = database();
        let txn = db.begin_write().unwrap();
        {
            let mut writer = SmallWriter::open(&txn, StoredCounts::default()).unwrap();
            writer.add_child(1, 4).unwrap();
        }
        txn.commit().unwrap();
        let txn = db.begin_write().unwrap();
        let counts = StoredCounts {
            children: 2,
            ..StoredCounts::default()
        };
        assert!(SmallWriter::open(&txn, counts).is_err());
    }
}
