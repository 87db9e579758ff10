//! A listing of `KEY.d/` checked into the segments of a log: each a `seg-{start:020}` object,
//! the first at byte 0, each starting where the one before ends, none empty
//! (format-spec/object-store.md §3). Anything else is an error naming the object. No I/O.

use super::address::{S3Address, segment_start};
use super::error::{ObjectStoreError, Result};

/// One segment object of a log: the bytes `start..start + len`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The object's key in the bucket.
    pub key: String,
    pub start: u64,
    pub len: u64,
    /// What the store lists for the object (its ETag and last modification, in ns), which the
    /// log's identity is made of.
    pub e_tag: Option<String>,
    pub modified_ns: i64,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// One object listed under `KEY.d/`.
#[derive(Clone, Debug)]
pub struct Listed {
    pub key: String,
    pub size: u64,
    pub e_tag: Option<String>,
    pub modified_ns: i64,
}

/// The segments that `listed` (the objects under `KEY.d/` whose keys sort after the segments
/// already known, in key order) adds to `known`, which ends at `known_end`. An error names the
/// first object that does not continue the log.
pub fn continue_segments(
    address: &S3Address,
    known_end: u64,
    listed: Vec<Listed>,
) -> Result<Vec<Segment>> {
    let folder = address.segments_folder();
    let mut end = known_end;
    let mut segments = Vec::with_capacity(listed.len());
    for object in listed {
        let layout = |reason: String| ObjectStoreError::Layout {
            object: address.object_url(&object.key),
            reason,
        };
        let name = object.key.strip_prefix(&folder).unwrap_or(&object.key);
        let Some(start) = segment_start(name) else {
            return Err(layout(format!(
                "not a segment of {} (a segment is named seg- and 20 digits, its start offset); \
                 another program wrote it into the log's folder",
                address.url()
            )));
        };
        if start > end {
            return Err(layout(format!(
                "missing segment: the log's bytes {end}..{start} have no object (expected {})",
                address.object_url(&address.segment_key(end))
            )));
        }
        if start < end {
            return Err(layout(format!(
                "overlapping segment: it starts at byte {start}, inside the bytes already held \
                 by the segments before it (which end at byte {end})"
            )));
        }
        if object.size == 0 {
            return Err(layout(
                "empty segment: a writer never stores one, so this object was damaged or written \
                 by another program"
                    .into(),
            ));
        }
        end = start + object.size;
        segments.push(Segment {
            key: object.key,
            start,
            len: object.size,
            e_tag: object.e_tag,
            modified_ns: object.modified_ns,
        });
    }
    Ok(segments)
}

/// The index of the segment holding byte `offset`, if any (`segments` contiguous from 0).
pub fn segment_at(segments: &[Segment], offset: u64) -> Option<usize> {
    let after = segments.partition_point(|segment| segment.start <= offset);
    let index = after.checked_sub(1)?;
    (offset < segments[index].end()).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(address: &S3Address, start: u64, size: u64) -> Listed {
        Listed {
            key: address.segment_key(start),
            size,
            e_tag: None,
            modified_ns: 0,
        }
    }

    #[test]
    fn contiguous_segments_and_what_breaks_them() {
        let address = S3Address::parse("s3://b/s.jsonl").unwrap().unwrap();
        let ok = continue_segments(
            &address,
            0,
            vec![listed(&address, 0, 5), listed(&address, 5, 3)],
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(segment_at(&ok, 0), Some(0));
        assert_eq!(segment_at(&ok, 5), Some(1));
        assert_eq!(segment_at(&ok, 7), Some(1));
        assert_eq!(segment_at(&ok, 8), None);
        let gap = continue_segments(&address, 0, vec![listed(&address, 1, 5)]).unwrap_err();
        assert!(
            gap.to_string()
                .contains("missing segment: the log's bytes 0..1"),
            "{gap}"
        );
        let overlap = continue_segments(
            &address,
            0,
            vec![listed(&address, 0, 5), listed(&address, 4, 3)],
        )
        .unwrap_err();
        assert!(
            overlap.to_string().contains("overlapping segment"),
            "{overlap}"
        );
        let foreign = Listed {
            key: "s.jsonl.d/notes.txt".into(),
            size: 1,
            e_tag: None,
            modified_ns: 0,
        };
        let foreign = continue_segments(&address, 0, vec![foreign]).unwrap_err();
        assert!(
            foreign
                .to_string()
                .starts_with("s3://b/s.jsonl.d/notes.txt: not a segment")
        );
        let empty = continue_segments(&address, 0, vec![listed(&address, 0, 0)]).unwrap_err();
        assert!(empty.to_string().contains("empty segment"), "{empty}");
    }
}
