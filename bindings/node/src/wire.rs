//! The wire of the JS entry cache: entries by sequence number, in the columns the JS side
//! reads fastest. The JS side keeps each entry it parsed and asks only for what it lacks.

use napi::bindgen_prelude::{Int32Array, Uint8Array, Uint32Array};
use napi_derive::napi;
use treelog::Session;

use crate::errors::Result;
use crate::session::NativeSession;

/// Entries as the index knows them (`treelog::IndexedEntries`), in the columns the JS side
/// reads fastest: sequence numbers, role codes (`NOT_PLAIN`: the line must be read), every
/// entry's id joined by `\n`, where each plain entry's parentId is (`PARENT_NULL`,
/// `PARENT_LISTED`: the next of `parents`, else an index into this batch), the listed parent
/// ids, each after a `\n`, and the plain entries' timestamps.
#[napi(object)]
pub struct EntryBatch {
    /// For a path: how many entries of the path the caller holds stay.
    pub kept: u32,
    pub seqs: Uint32Array,
    pub roles: Uint8Array,
    pub ids: String,
    pub parent_at: Int32Array,
    pub parents: String,
    /// The plain entries' timestamps, each of `TIMESTAMP_LEN` characters.
    pub timestamps: String,
}

pub(crate) fn batch(
    session: &Session,
    kept: u64,
    entries: treelog::IndexedEntries,
) -> treelog::Result<EntryBatch> {
    Ok(EntryBatch {
        kept: seq32(session, kept)?,
        seqs: seqs32(session, entries.seqs)?,
        roles: Uint8Array::new(entries.roles),
        ids: entries.ids,
        parent_at: Int32Array::new(entries.parent_at),
        parents: entries.parents,
        timestamps: entries.timestamps,
    })
}

/// The codes of an [`EntryBatch`]: `[NOT_PLAIN, PARENT_NULL, PARENT_LISTED, TIMESTAMP_LEN]`.
#[napi]
pub fn entry_batch_codes() -> Vec<i32> {
    vec![
        i32::from(treelog::NOT_PLAIN),
        treelog::PARENT_NULL,
        treelog::PARENT_LISTED,
        treelog::TIMESTAMP_LEN as i32,
    ]
}

/// The message fields `messageHeadsJson` reads (`treelog::MESSAGE_HEAD_KEYS`).
#[napi]
pub fn message_head_keys() -> Vec<String> {
    treelog::MESSAGE_HEAD_KEYS
        .iter()
        .map(|key| key.to_string())
        .collect()
}

/// The role names of the role codes the index keeps (code `n` is `roles()[n - 1]`).
#[napi]
pub fn role_names() -> Vec<String> {
    treelog::format::line::ROLES
        .iter()
        .map(|role| role.to_string())
        .collect()
}

#[napi]
impl NativeSession {
    /// pi's `getChildren`, as sequence numbers in file order.
    #[napi]
    pub fn children_seqs(&mut self, id: String) -> Result<Uint32Array> {
        self.query(|session| {
            let mut children = session.children(&id)?;
            children.sort_by_key(|entry| entry.offset_bytes);
            let mut seqs = Vec::with_capacity(children.len());
            for child in &children {
                if let Some(seq) = session.entry_seq(&child.id)? {
                    seqs.push(seq);
                }
            }
            seqs32(session, seqs)
        })
    }

    /// The sequence numbers of the path to the handle's leaf from its nearest compaction on
    /// (`Session::path_since_compaction`); empty without a leaf.
    #[napi]
    pub fn path_since_compaction_seqs(&mut self) -> Result<Uint32Array> {
        self.query(|session| match session.leaf_seq() {
            None => Ok(Vec::new()),
            Some(leaf) => session
                .path_since_compaction(leaf)?
                .into_iter()
                .map(|seq| seq32(session, seq))
                .collect(),
        })
        .map(Uint32Array::from)
    }

    /// The sequence number of the handle's leaf, or null.
    #[napi]
    pub fn leaf_seq(&mut self) -> Result<Option<u32>> {
        self.query(|session| {
            session
                .leaf_seq()
                .map(|seq| seq32(session, seq))
                .transpose()
        })
    }

    /// The sequence number of the entry `id`, or null.
    #[napi]
    pub fn entry_seq(&mut self, id: String) -> Result<Option<u32>> {
        self.query(|session| {
            session
                .entry_seq(&id)?
                .map(|seq| seq32(session, seq))
                .transpose()
        })
    }

    /// The path to `leaf` (default: the handle's leaf) for a caller holding the path to
    /// `known_leaf_seq`: how many entries of the known path stay (`kept`), then the entries
    /// below them, root first. Null for an unknown `leaf`.
    #[napi]
    pub fn path_since(
        &mut self,
        leaf: Option<String>,
        known_leaf_seq: Option<u32>,
    ) -> Result<Option<EntryBatch>> {
        self.query(|session| {
            let leaf_seq = match &leaf {
                Some(id) => match session.entry_seq(id)? {
                    Some(seq) => Some(seq),
                    None => return Ok(None),
                },
                None => session.leaf_seq(),
            };
            let (kept, entries) = session.path_since(leaf_seq, known_leaf_seq.map(u64::from))?;
            batch(session, kept, entries).map(Some)
        })
    }

    /// The sequence numbers of the canonical entries from `from` on, in file order.
    #[napi]
    pub fn entry_seqs_from(&mut self, from: u32) -> Result<Uint32Array> {
        self.query(|session| seqs32(session, session.entry_seqs_from(u64::from(from))?))
    }

    /// The entries `seqs`, as the index knows them.
    #[napi]
    pub fn indexed_entries(&mut self, seqs: Uint32Array) -> Result<EntryBatch> {
        let seqs = seqs64(&seqs);
        self.query(|session| batch(session, 0, session.indexed_entries(&seqs)?))
    }

    /// For each of `seqs`, its message's head (`Session::message_heads`), or null: a JSON
    /// array.
    #[napi]
    pub fn message_heads_json(&mut self, seqs: Uint32Array) -> Result<String> {
        let seqs = seqs64(&seqs);
        self.query(|session| {
            let heads = session.message_heads(&seqs)?;
            let mut out = String::from("[");
            for (index, head) in heads.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(head.as_deref().unwrap_or("null"));
            }
            out.push(']');
            Ok(out)
        })
    }

    /// For each of `seqs`, its model origin (`Session::model_origins`), or 0xFFFFFFFF for none.
    #[napi]
    pub fn model_origins(&mut self, seqs: Uint32Array) -> Result<Uint32Array> {
        let seqs = seqs64(&seqs);
        self.query(|session| {
            let origins = session.model_origins(&seqs)?;
            seqs32(
                session,
                origins.into_iter().map(|origin| origin.unwrap_or(NO_SEQ)),
            )
        })
    }

    /// The lines of the entries `seqs` as one JSON array, in the order given: one
    /// `JSON.parse` of the whole batch costs less than one per line.
    #[napi]
    pub fn lines_json_array(&mut self, seqs: Uint32Array) -> Result<String> {
        let seqs = seqs64(&seqs);
        self.query(|session| session.lines_json_array(&seqs))
    }

    /// The lines of the entries `seqs`, as JSONL in the order given.
    #[napi]
    pub fn lines_jsonl(&mut self, seqs: Uint32Array) -> Result<String> {
        let seqs = seqs64(&seqs);
        self.query(|session| session.lines_jsonl(&seqs))
    }

    /// pi's `buildSessionProjection()` for the handle's leaf as a plan over the entries the
    /// JS side holds (`treelog::ProjectionPlan`).
    #[napi]
    pub fn projection_plan_json(&mut self) -> Result<String> {
        self.query(|session| Ok(session.projection_plan(None)?.to_json()))
    }

    /// pi's `buildContextEntries()` for the handle's leaf, as sequence numbers.
    #[napi]
    pub fn context_entry_seqs(&mut self) -> Result<Uint32Array> {
        self.query(|session| seqs32(session, session.context_entry_seqs(None)?))
    }
}

/// is refused rather than have two entries share a number.
/// "No entry" in a sequence number handed to JavaScript (`modelOrigins`): the caller then
/// takes the slower way, so a log whose line 2^32 - 1 has an origin loses nothing.
const NO_SEQ: u64 = u32::MAX as u64;

/// A sequence number as JS holds it (a `u32`): a log of more than 2^32 lines (at least 12 GiB)
/// is refused rather than have two entries share a number.
pub(crate) fn seq32(session: &Session, seq: u64) -> treelog::Result<u32> {
    u32::try_from(seq).map_err(|_| treelog::Error::InvalidInput {
        path: session.log_path().to_path_buf(),
        reason: "the Node package reads logs of at most 2^32 lines".into(),
    })
}

/// Sequence numbers from JavaScript, as the library takes them.
pub(crate) fn seqs64(seqs: &Uint32Array) -> Vec<u64> {
    seqs.iter().map(|&seq| u64::from(seq)).collect()
}

pub(crate) fn seqs32(
    session: &Session,
    seqs: impl IntoIterator<Item = u64>,
) -> treelog::Result<Uint32Array> {
    let seqs = seqs
        .into_iter()
        .map(|seq| seq32(session, seq))
        .collect::<treelog::Result<Vec<u32>>>()?;
    Ok(Uint32Array::new(seqs))
}
