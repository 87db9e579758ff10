//! Every answer of a session compared with the model's: leaf, path, context, tree, labels, name,
//! entries, opaque records, children, lookups, ancestors and counts.

use serde_json::Value;
use treelog::Session;

use super::Model;
use crate::TreeRow;

impl Model {
    /// Every answer of `session` (whose leaf should be `leaf`) equals the model's.
    pub fn check_session(&self, what: &str, session: &mut Session, leaf: Option<usize>) {
        let model = self;
        let ids = |indexes: Vec<usize>| -> Vec<String> {
            indexes
                .into_iter()
                .map(|index| model.entries[index].id.clone())
                .collect()
        };
        assert_eq!(session.leaf_id().unwrap(), model.id(leaf), "{what}: leaf");
        assert_eq!(
            session.log_leaf_id().unwrap(),
            model.id(model.log_leaf),
            "{what}: log leaf"
        );
        assert_eq!(
            session.path_ids(None).unwrap(),
            ids(model.path(leaf)),
            "{what}: path"
        );
        let context: Value =
            serde_json::from_str(&session.build_context(None).unwrap().to_json()).unwrap();
        assert_eq!(
            serde_json::to_string(&context).unwrap(),
            serde_json::to_string(&model.context(leaf)).unwrap(),
            "{what}: context"
        );
        let tree: Vec<TreeRow> = session
            .tree()
            .unwrap()
            .map(|node| {
                let node = node.unwrap();
                (
                    node.id,
                    node.parent_id,
                    node.depth,
                    node.label,
                    node.label_timestamp,
                )
            })
            .collect();
        assert_eq!(tree, model.tree(), "{what}: tree");
        let labels: Vec<(String, String, String)> = model
            .labels
            .iter()
            .map(|(target, (label, ts))| (target.clone(), label.clone(), ts.clone()))
            .collect();
        assert_eq!(session.labels().unwrap(), labels, "{what}: labels");
        assert_eq!(session.session_name().unwrap(), model.name, "{what}: name");
        let entries: Vec<_> = session
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let type_name = entry.type_name().into_owned();
                (
                    entry.id,
                    type_name,
                    entry.parent_id,
                    entry.tree_parent_id,
                    entry.depth,
                    entry.timestamp,
                    entry.offset_bytes,
                    entry.json,
                )
            })
            .collect();
        let expected: Vec<_> = model
            .entries
            .iter()
            .map(|entry| {
                (
                    entry.id.clone(),
                    entry.kind.clone(),
                    entry
                        .value
                        .get("parentId")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    model.id(entry.parent),
                    entry.depth,
                    entry.timestamp.clone(),
                    entry.offset as u64,
                    entry.line.clone(),
                )
            })
            .collect();
        assert_eq!(entries, expected, "{what}: entries");
        let opaque: Vec<u64> = session
            .opaque_records()
            .unwrap()
            .into_iter()
            .map(|record| record.offset_bytes)
            .collect();
        let expected_opaque: Vec<u64> = model.opaque_offsets.iter().map(|at| *at as u64).collect();
        assert_eq!(opaque, expected_opaque, "{what}: opaque records");
        for (index, entry) in model.entries.iter().enumerate() {
            let kids: Vec<String> = session
                .children(&entry.id)
                .unwrap()
                .into_iter()
                .map(|child| child.id)
                .collect();
            assert_eq!(
                kids,
                ids(model.sorted_children(Some(index))),
                "{what}: children of {}",
                entry.id
            );
            let got = session
                .entry(&entry.id)
                .unwrap()
                .map(|entry| entry.offset_bytes);
            assert_eq!(got, Some(entry.offset as u64), "{what}: entry {}", entry.id);
            if let Some(leaf) = leaf {
                let on_path = model.path(Some(leaf)).contains(&index);
                assert_eq!(
                    session
                        .is_ancestor(&entry.id, &model.entries[leaf].id)
                        .unwrap(),
                    on_path,
                    "{what}: is_ancestor({}, leaf)",
                    entry.id
                );
                let leaf_path = model.path(Some(leaf));
                let common = model
                    .path(Some(index))
                    .into_iter()
                    .zip(leaf_path)
                    .take_while(|(a, b)| a == b)
                    .last()
                    .map(|(a, _)| a);
                assert_eq!(
                    session
                        .common_ancestor(&entry.id, &model.entries[leaf].id)
                        .unwrap(),
                    model.id(common),
                    "{what}: common_ancestor({}, leaf)",
                    entry.id
                );
            }
        }
        assert!(session.entry("no-such-id").unwrap().is_none());
        let stats = session.stats().unwrap();
        assert_eq!(
            (stats.entry_count, stats.opaque_count),
            (
                model.entries.len() as u64,
                model.opaque_offsets.len() as u64
            ),
            "{what}: counts"
        );
    }
}
