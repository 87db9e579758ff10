//! A listing of `KEY.d/` checked into the segments of a log (format-spec/object-store.md §3,
//! §6): plain segments `seg-{start:020}` and covering segments `seg-{start:020}-{end:020}`,
//! any two either disjoint or one inside the other; the outermost ones (the segments read)
//! start at byte 0, each where the one before ends; none is empty. Anything else is an error
//! naming the object. No I/O.

use super::address::{S3Address, segment_name};
use super::error::{ObjectStoreError, Result};

/// One segment object of a log: the bytes `start..start + len`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The object's key in the bucket.
    pub key: String,
    pub start: u64,
    pub len: u64,
    /// What the store lists for the object (its ETag and last modification, in ns).
    pub e_tag: Option<String>,
    pub modified_ns: i64,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.start + self.len
    }

    /// Whether the object is a covering segment (`seg-{start:020}-{end:020}`), written by a
    /// compaction.
    pub fn is_covering(&self) -> bool {
        let name = self.key.rsplit('/').next().unwrap_or(&self.key);
        matches!(segment_name(name), Some((_, Some(_))))
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

/// What a listing holds: the segments read, contiguous, and the objects inside them that are
/// not read (covered by a covering segment, and left until a compaction deletes them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub segments: Vec<Segment>,
    pub covered: Vec<Segment>,
}

/// The segments that `listed` adds to a log whose last known segment is `last` (`None`: the
/// listing is the whole folder, from byte 0). `listed` holds the objects whose keys sort after
/// `last`'s. `Ok(None)` when an object listed covers bytes before `last`'s end and after it (a
/// compaction covered known segments), or starts after the end reached (a gap, which a
/// covering segment sorted before `last` may fill): the folder is then listed again from the
/// start. An error names the first object that does not continue the log.
pub fn resolve(
    address: &S3Address,
    last: Option<&Segment>,
    listed: Vec<Listed>,
) -> Result<Option<Resolved>> {
    let known_end = last.map_or(0, Segment::end);
    let mut objects = listed
        .into_iter()
        .map(|object| checked_object(address, object))
        .collect::<Result<Vec<_>>>()?;
    // The outermost object at each start first (the longest; a covering segment before a plain
    // one of the same bytes), so that the objects inside it follow it.
    objects.sort_by(|a, b| {
        (a.start, std::cmp::Reverse(a.end()), !a.is_covering()).cmp(&(
            b.start,
            std::cmp::Reverse(b.end()),
            !b.is_covering(),
        ))
    });
    let mut end = known_end;
    let mut outer: Option<Segment> = last.cloned();
    // The objects inside `outer` that enclose the byte reached, innermost last.
    let mut inner: Vec<Segment> = Vec::new();
    let mut resolved = Resolved::default();
    for object in objects {
        let layout = |reason: String| ObjectStoreError::Layout {
            object: address.object_url(&object.key),
            reason,
        };
        if object.start > end {
            if last.is_some() {
                // A catch-up lists the keys after the last segment known: a covering segment
                // that starts before it (and replaced the segments between it and this one,
                // since deleted) sorts before it. Only a listing from the start tells a gap.
                return Ok(None);
            }
            return Err(layout(format!(
                "missing segment: the log's bytes {end}..{} have no object (expected {})",
                object.start,
                address.object_url(&address.segment_key(end))
            )));
        }
        if object.start == end {
            end = object.end();
            inner.clear();
            outer = Some(object.clone());
            resolved.segments.push(object);
            continue;
        }
        let before_known = last.is_some_and(|last| object.start <= last.start);
        if last.is_some()
            && object.start < known_end
            && (object.end() > known_end || object.is_covering() && before_known)
        {
            return Ok(None);
        }
        if object.end() > end {
            let reason = match &outer {
                Some(outer) => format!(
                    "overlapping segment: it holds the bytes {}..{}, which cross the end of {} \
                     (bytes {}..{}): a segment lies inside a covering segment or after it",
                    object.start,
                    object.end(),
                    address.object_url(&outer.key),
                    outer.start,
                    outer.end()
                ),
                None => format!(
                    "overlapping segment: it starts at byte {}, inside the bytes already held \
                     by the segments before it (which end at byte {end})",
                    object.start
                ),
            };
            return Err(layout(reason));
        }
        while inner.last().is_some_and(|o| o.end() <= object.start) {
            inner.pop();
        }
        if let Some(enclosing) = inner.last().or(outer.as_ref())
            && !enclosing.is_covering()
        {
            return Err(layout(format!(
                "overlapping segment: it holds the bytes {}..{}, inside those of {}, which is \
                 not a covering segment",
                object.start,
                object.end(),
                address.object_url(&enclosing.key)
            )));
        }
        if let Some(enclosing) = inner.last()
            && object.end() > enclosing.end()
        {
            return Err(layout(format!(
                "overlapping segment: it holds the bytes {}..{}, which cross the end of {} \
                 (bytes {}..{}); covered segments nest or follow each other",
                object.start,
                object.end(),
                address.object_url(&enclosing.key),
                enclosing.start,
                enclosing.end()
            )));
        }
        inner.push(object.clone());
        resolved.covered.push(object);
    }
    Ok(Some(resolved))
}

/// The segments of a whole listing of `KEY.d/` (see [`resolve`]).
pub fn resolve_folder(address: &S3Address, listed: Vec<Listed>) -> Result<Resolved> {
    // A listing from byte 0 has no known segment to list again from.
    Ok(resolve(address, None, listed)?.unwrap_or_default())
}

/// The objects directly inside `covering` (in none of the others inside it), in order, when
/// they tile its bytes exactly; `None` when some were deleted (or `covering` covers nothing
/// listed). `covered` is [`Resolved::covered`].
pub fn tiling<'a>(covering: &Segment, covered: &'a [Segment]) -> Option<Vec<&'a Segment>> {
    let mut end = covering.start;
    let mut tiles = Vec::new();
    for object in covered
        .iter()
        .filter(|o| o.start >= covering.start && o.end() <= covering.end())
    {
        if object.start == end {
            end = object.end();
            tiles.push(object);
        } else if object.start > end {
            return None;
        }
    }
    (end == covering.end() && !tiles.is_empty()).then_some(tiles)
}

/// `object` as a segment, if its name is one's and its size fits its name.
fn checked_object(address: &S3Address, object: Listed) -> Result<Segment> {
    let folder = address.segments_folder();
    let layout = |reason: String| ObjectStoreError::Layout {
        object: address.object_url(&object.key),
        reason,
    };
    let name = object.key.strip_prefix(&folder).unwrap_or(&object.key);
    let Some((start, named_end)) = segment_name(name) else {
        return Err(layout(format!(
            "not a segment of {} (a segment is named seg- and 20 digits, its start offset, or \
             seg-START-END for a covering segment); another program wrote it into the log's folder",
            address.url()
        )));
    };
    if object.size == 0 {
        return Err(layout(
            "empty segment: a writer never stores one, so this object was damaged or written \
             by another program"
                .into(),
        ));
    }
    if let Some(named_end) = named_end
        && named_end.checked_sub(start) != Some(object.size)
    {
        return Err(layout(format!(
            "covering segment of the bytes {start}..{named_end} holds {} bytes: it was damaged \
             or written by another program",
            object.size
        )));
    }
    if start.checked_add(object.size).is_none() {
        return Err(layout("the segment ends past the largest offset".into()));
    }
    Ok(Segment {
        key: object.key,
        start,
        len: object.size,
        e_tag: object.e_tag,
        modified_ns: object.modified_ns,
    })
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
        let ok = resolve(
            &address,
            None,
            vec![listed(&address, 0, 5), listed(&address, 5, 3)],
        )
        .unwrap()
        .unwrap()
        .segments;
        assert_eq!(ok.len(), 2);
        assert_eq!(segment_at(&ok, 0), Some(0));
        assert_eq!(segment_at(&ok, 5), Some(1));
        assert_eq!(segment_at(&ok, 7), Some(1));
        assert_eq!(segment_at(&ok, 8), None);
        let gap = resolve(&address, None, vec![listed(&address, 1, 5)]).unwrap_err();
        assert!(
            gap.to_string()
                .contains("missing segment: the log's bytes 0..1"),
            "{gap}"
        );
        let overlap = resolve(
            &address,
            None,
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
        let foreign = resolve(&address, None, vec![foreign]).unwrap_err();
        assert!(
            foreign
                .to_string()
                .starts_with("s3://b/s.jsonl.d/notes.txt: not a segment")
        );
        let empty = resolve(&address, None, vec![listed(&address, 0, 0)]).unwrap_err();
        assert!(empty.to_string().contains("empty segment"), "{empty}");
    }

    fn covering(address: &S3Address, start: u64, end: u64) -> Listed {
        Listed {
            key: address.covering_key(start, end),
            size: end - start,
            e_tag: None,
            modified_ns: 0,
        }
    }

    #[test]
    fn covering_segments_replace_the_segments_they_cover() {
        let address = S3Address::parse("s3://b/s.jsonl").unwrap().unwrap();
        let plain = || {
            vec![
                listed(&address, 0, 5),
                listed(&address, 5, 3),
                listed(&address, 8, 4),
                listed(&address, 12, 2),
            ]
        };
        // During the grace period: the covering segment is read, the covered ones are not.
        let mut all = plain();
        all.push(covering(&address, 0, 12));
        all.sort_by(|a, b| a.key.cmp(&b.key));
        let resolved = resolve_folder(&address, all).unwrap();
        let read: Vec<(u64, u64)> = resolved
            .segments
            .iter()
            .map(|s| (s.start, s.end()))
            .collect();
        assert_eq!(read, [(0, 12), (12, 14)]);
        assert!(resolved.segments[0].is_covering());
        assert_eq!(resolved.covered.len(), 3);
        // Partly deleted covered segments, a covering nested in another: the same log.
        let nested = vec![
            covering(&address, 0, 8),
            covering(&address, 0, 12),
            listed(&address, 8, 4),
            listed(&address, 12, 2),
        ];
        let resolved = resolve_folder(&address, nested).unwrap();
        assert_eq!(resolved.segments.len(), 2);
        assert_eq!(resolved.segments[0].key, address.covering_key(0, 12));
        // A covering segment that does not end where a segment ends crosses it.
        let mut crossing = plain();
        crossing.push(covering(&address, 0, 10));
        let error = resolve_folder(&address, crossing).unwrap_err().to_string();
        assert!(
            error.starts_with("s3://b/s.jsonl.d/seg-00000000000000000008: overlapping segment")
                && error.contains("seg-00000000000000000000-00000000000000000010 (bytes 0..10)"),
            "{error}"
        );
        // Two covering segments that cross each other, inside a third.
        let crossed = vec![
            covering(&address, 0, 12),
            covering(&address, 0, 8),
            covering(&address, 5, 12),
            listed(&address, 12, 2),
        ];
        let error = resolve_folder(&address, crossed).unwrap_err().to_string();
        assert!(error.contains("covered segments nest"), "{error}");
        // A covering segment whose size is not what its name says.
        let mut short = covering(&address, 0, 12);
        short.size = 11;
        let error = resolve_folder(&address, vec![short])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("covering segment of the bytes 0..12 holds 11 bytes"),
            "{error}"
        );
        // A catch-up after seg-8 that lists a covering segment starting there: list again.
        let known = resolve_folder(&address, plain()).unwrap().segments;
        let after_8 = vec![covering(&address, 8, 14), listed(&address, 12, 2)];
        assert_eq!(resolve(&address, Some(&known[2]), after_8).unwrap(), None);
        // A catch-up after a covering segment that lists the segments it covers: nothing new.
        let known = covering(&address, 0, 12);
        let last = resolve_folder(&address, vec![known]).unwrap().segments;
        let after = vec![
            listed(&address, 5, 3),
            listed(&address, 8, 4),
            listed(&address, 12, 2),
        ];
        let new = resolve(&address, last.last(), after).unwrap().unwrap();
        assert_eq!(new.segments.len(), 1);
        assert_eq!(new.covered.len(), 2);
        // A plain segment inside another plain one.
        let nested_plain = vec![listed(&address, 0, 5), listed(&address, 2, 1)];
        let error = resolve_folder(&address, nested_plain)
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a covering segment"), "{error}");
    }
}
