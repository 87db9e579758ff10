//! `s3://BUCKET/KEY` addresses and the names of a log's segment objects. No I/O.

use super::error::{ObjectStoreError, Result};

/// The scheme of a log on an object store.
pub const SCHEME: &str = "s3://";

/// What the name of every segment object starts with, after `KEY.d/`.
pub const SEGMENT_PREFIX: &str = "seg-";

/// Digits of a segment's start offset in its name (zero-padded: names sort as offsets do).
const OFFSET_DIGITS: usize = 20;

/// A log on an object store: `s3://BUCKET/KEY`, whose segments are the objects `KEY.d/seg-*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct S3Address {
    pub bucket: String,
    /// The log's name in the bucket (`prefix/session.jsonl`): no object is stored under it.
    pub key: String,
}

impl S3Address {
    /// `None` when `text` is not an `s3://` address; an error when it is one but malformed.
    pub fn parse(text: &str) -> Option<Result<S3Address>> {
        let rest = text.strip_prefix(SCHEME)?;
        let invalid = |reason: &str| {
            Some(Err(ObjectStoreError::Address {
                address: text.to_string(),
                reason: reason.to_string(),
            }))
        };
        let Some((bucket, key)) = rest.split_once('/') else {
            return invalid("expected s3://BUCKET/KEY, with a key after the bucket");
        };
        if bucket.is_empty() || key.is_empty() {
            return invalid("expected s3://BUCKET/KEY: the bucket and the key must not be empty");
        }
        if key.ends_with('/') {
            return invalid(
                "the key names a folder: name the log, e.g. s3://BUCKET/sessions/one.jsonl",
            );
        }
        if key
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return invalid("the key has an empty, `.` or `..` part");
        }
        if key.chars().any(|c| c.is_control()) {
            return invalid("the key holds a control character");
        }
        Some(Ok(S3Address {
            bucket: bucket.to_string(),
            key: key.to_string(),
        }))
    }

    /// `s3://BUCKET/KEY`.
    pub fn url(&self) -> String {
        format!("{SCHEME}{}/{}", self.bucket, self.key)
    }

    /// The folder of the segments: `KEY.d/`.
    pub fn segments_folder(&self) -> String {
        format!("{}.d/", self.key)
    }

    /// The key of the segment starting at byte `start`: `KEY.d/seg-{start:020}`.
    pub fn segment_key(&self, start: u64) -> String {
        format!(
            "{}{SEGMENT_PREFIX}{start:0width$}",
            self.segments_folder(),
            width = OFFSET_DIGITS
        )
    }

    /// `s3://BUCKET/` + `key`, for messages naming an object.
    pub fn object_url(&self, key: &str) -> String {
        format!("{SCHEME}{}/{key}", self.bucket)
    }
}

/// The start offset a segment's file name (after `KEY.d/`) gives, or `None` when the name is
/// not one of a segment (exactly `seg-` and 20 decimal digits).
pub fn segment_start(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(SEGMENT_PREFIX)?;
    if digits.len() != OFFSET_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_segment_names() {
        let address = S3Address::parse("s3://b/p/s.jsonl").unwrap().unwrap();
        assert_eq!(address.bucket, "b");
        assert_eq!(address.key, "p/s.jsonl");
        assert_eq!(
            address.segment_key(42),
            "p/s.jsonl.d/seg-00000000000000000042"
        );
        assert_eq!(segment_start("seg-00000000000000000042"), Some(42));
        assert_eq!(segment_start("seg-42"), None);
        assert_eq!(segment_start("seg-0000000000000000004x"), None);
        assert!(S3Address::parse("/tmp/x.jsonl").is_none());
        for bad in [
            "s3://b",
            "s3:///k",
            "s3://b/",
            "s3://b/p/",
            "s3://b/a//c",
            "s3://b/../c",
        ] {
            assert!(S3Address::parse(bad).unwrap().is_err(), "{bad}");
        }
    }
}
