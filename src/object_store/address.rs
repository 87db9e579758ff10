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

    /// The key of the covering segment holding the bytes `start..end`:
    /// `KEY.d/seg-{start:020}-{end:020}` (format-spec/object-store.md §6).
    pub fn covering_key(&self, start: u64, end: u64) -> String {
        format!(
            "{}{SEGMENT_PREFIX}{start:0width$}-{end:0width$}",
            self.segments_folder(),
            width = OFFSET_DIGITS
        )
    }

    /// `s3://BUCKET/` + `key`, for messages naming an object.
    pub fn object_url(&self, key: &str) -> String {
        format!("{SCHEME}{}/{key}", self.bucket)
    }
}

/// A folder of logs on an object store: `s3://BUCKET/PREFIX/` (or `s3://BUCKET`, the whole
/// bucket), holding logs `PREFIX/NAME.jsonl` as segment folders `PREFIX/NAME.jsonl.d/`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct S3Prefix {
    pub bucket: String,
    /// Empty (the whole bucket) or ending with `/`.
    pub prefix: String,
}

impl S3Prefix {
    /// `None` when `text` is not an `s3://` address; an error when it is one but malformed. A
    /// prefix without its trailing `/` names the same folder (`s3://b/p` is `s3://b/p/`).
    pub fn parse(text: &str) -> Option<Result<S3Prefix>> {
        let rest = text.strip_prefix(SCHEME)?;
        let invalid = |reason: &str| {
            Some(Err(ObjectStoreError::Address {
                address: text.to_string(),
                reason: reason.to_string(),
            }))
        };
        let (bucket, folder) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return invalid("expected s3://BUCKET/PREFIX/ or s3://BUCKET: the bucket is empty");
        }
        let folder = folder.strip_suffix('/').unwrap_or(folder);
        if (!folder.is_empty() || rest.ends_with("//"))
            && folder
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return invalid("the prefix has an empty, `.` or `..` part");
        }
        if folder.chars().any(|c| c.is_control()) {
            return invalid("the prefix holds a control character");
        }
        let prefix = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        Some(Ok(S3Prefix {
            bucket: bucket.to_string(),
            prefix,
        }))
    }

    /// `s3://BUCKET/PREFIX/` (`s3://BUCKET/` for the whole bucket).
    pub fn url(&self) -> String {
        format!("{SCHEME}{}/{}", self.bucket, self.prefix)
    }

    /// `s3://BUCKET/` + `key`, for messages naming an object or a folder.
    pub fn object_url(&self, key: &str) -> String {
        format!("{SCHEME}{}/{key}", self.bucket)
    }
}

/// What a segment's file name (after `KEY.d/`) says: its start offset, and for a covering
/// segment the offset where it ends; `None` when the name is not one of a segment (exactly
/// `seg-` and 20 decimal digits, optionally `-` and 20 more).
pub fn segment_name(name: &str) -> Option<(u64, Option<u64>)> {
    let rest = name.strip_prefix(SEGMENT_PREFIX)?;
    let offset = |digits: &str| {
        if digits.len() != OFFSET_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<u64>().ok()
    };
    match rest.split_once('-') {
        None => Some((offset(rest)?, None)),
        Some((start, end)) => Some((offset(start)?, Some(offset(end)?))),
    }
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
        assert_eq!(segment_name("seg-00000000000000000042"), Some((42, None)));
        assert_eq!(segment_name("seg-42"), None);
        assert_eq!(segment_name("seg-0000000000000000004x"), None);
        assert_eq!(
            address.covering_key(0, 42),
            "p/s.jsonl.d/seg-00000000000000000000-00000000000000000042"
        );
        assert_eq!(
            segment_name("seg-00000000000000000007-00000000000000000042"),
            Some((7, Some(42)))
        );
        assert_eq!(segment_name("seg-00000000000000000007"), Some((7, None)));
        assert_eq!(segment_name("seg-00000000000000000007-42"), None);
        assert_eq!(segment_name("seg-00000000000000000007-"), None);

        assert!(S3Address::parse("/tmp/x.jsonl").is_none());
        let whole = S3Prefix::parse("s3://b").unwrap().unwrap();
        assert_eq!((whole.bucket.as_str(), whole.prefix.as_str()), ("b", ""));
        assert_eq!(whole.url(), "s3://b/");
        assert_eq!(S3Prefix::parse("s3://b/").unwrap().unwrap(), whole);
        let folder = S3Prefix::parse("s3://b/p/q").unwrap().unwrap();
        assert_eq!(folder.prefix, "p/q/");
        assert_eq!(S3Prefix::parse("s3://b/p/q/").unwrap().unwrap(), folder);
        for bad in [
            "s3://",
            "s3:///p/",
            "s3://b//",
            "s3://b/p//q/",
            "s3://b/../",
        ] {
            assert!(S3Prefix::parse(bad).unwrap().is_err(), "{bad}");
        }
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
