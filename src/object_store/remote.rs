//! The object store's client: the settings from the environment, an S3 client from the
//! `object_store` crate, and the small current-thread tokio runtime its calls run on, behind
//! blocking methods (the engine and the CLI are synchronous). Every error names the object and
//! what the store answered.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as ObjectPath;
use object_store::{
    ClientOptions, GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    RetryConfig,
};

use super::address::S3Address;
use super::error::{ListingFault, ObjectStoreError, Result};
use super::layout::{Listed, Segment};
use crate::limits;

/// Requests retried after a transient failure (a 5xx, a dropped connection) before an error.
const RETRIES_MAX: usize = 3;
/// The longest a request and its retries may take.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the store is and how to sign requests, from `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION` and `AWS_ALLOW_HTTP`, and nothing else: no instance
/// metadata, profile or web-identity lookup is ever made.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreConfig {
    /// `http://127.0.0.1:8333`; `None`: AWS S3 itself, in `region`.
    pub endpoint: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub region: String,
    pub allow_http: bool,
}

impl StoreConfig {
    /// The settings from the environment. Without an access key, requests are sent unsigned
    /// (a public bucket); a key without its secret is an error.
    pub fn from_env() -> Result<StoreConfig> {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let config = StoreConfig {
            endpoint: var("AWS_ENDPOINT_URL").map(|url| url.trim_end_matches('/').to_string()),
            access_key_id: var("AWS_ACCESS_KEY_ID"),
            secret_access_key: var("AWS_SECRET_ACCESS_KEY"),
            region: var("AWS_REGION")
                .or_else(|| var("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".to_string()),
            allow_http: var("AWS_ALLOW_HTTP")
                .is_some_and(|value| matches!(value.to_ascii_lowercase().as_str(), "1" | "true")),
        };
        if config.access_key_id.is_some() != config.secret_access_key.is_some() {
            return Err(ObjectStoreError::Config {
                reason: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together".into(),
            });
        }
        if let Some(endpoint) = &config.endpoint
            && endpoint.starts_with("http://")
            && !config.allow_http
        {
            return Err(ObjectStoreError::Config {
                reason: format!(
                    "AWS_ENDPOINT_URL is {endpoint}, plain http: set AWS_ALLOW_HTTP=true to allow it"
                ),
            });
        }
        Ok(config)
    }

    /// What tells apart the caches of two stores: the endpoint (or AWS and the region).
    pub fn store_name(&self) -> String {
        match &self.endpoint {
            Some(endpoint) => endpoint.clone(),
            None => format!("aws:{}", self.region),
        }
    }
}

/// The store and bucket of `address`, with the settings from the environment.
pub(super) fn connect(address: &S3Address) -> Result<Arc<Remote>> {
    let config = StoreConfig::from_env()?;
    Ok(Arc::new(Remote::connect(&config, &address.bucket)?))
}

/// The bounds every request to the store is held to (format-spec/object-store.md §8): a store
/// is not trusted to answer, to end a listing, or to hold what it listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestBounds {
    /// The longest one request (with the client's retries) may take.
    pub request_timeout: Duration,
    /// The longest a listing may take, all its pages together.
    pub listing_deadline: Duration,
    /// The most pages a listing may have.
    pub listing_pages_max: usize,
}

impl Default for RequestBounds {
    fn default() -> Self {
        RequestBounds {
            request_timeout: limits::STORE_REQUEST_TIMEOUT,
            listing_deadline: limits::LISTING_DEADLINE,
            listing_pages_max: limits::LISTING_PAGES_MAX,
        }
    }
}

/// What the object-store code reads the time from: this machine's clocks, or simulated ones.
pub trait Clock: Send + Sync {
    /// The wall clock: ns since the Unix epoch (compared with the store's Last-Modified).
    fn now_ns(&self) -> i64;
    /// A clock that never goes back, in ns since any fixed point (for ages and waits).
    fn monotonic_ns(&self) -> u64;
}

/// This machine's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn monotonic_ns(&self) -> u64 {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let start = START.get_or_init(std::time::Instant::now);
        u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn now_ns(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
            })
    }
}

/// An object store that lists in pages: what a [`Remote`] runs over (the S3 client, or a
/// store a test builds).
pub trait SegmentStore: ObjectStore + PaginatedListStore {}

impl<T: ObjectStore + PaginatedListStore> SegmentStore for T {}

/// A connection to one bucket, with the runtime its requests run on.
pub struct Remote {
    config: StoreConfig,
    bucket: String,
    store: Arc<dyn ObjectStore>,
    lister: Arc<dyn PaginatedListStore>,
    runtime: tokio::runtime::Runtime,
    bounds: RequestBounds,
    clock: Arc<dyn Clock>,
}

/// What a conditional create found.
pub enum Created {
    /// The object was written; its ETag, if the store gave one.
    Written { e_tag: Option<String> },
    /// An object already had that name: nothing was written.
    Exists,
}

/// One level of a folder on the store (see [`Remote::list_folder`]).
pub struct Folder {
    /// Full keys, each ending with `/`.
    pub folders: Vec<String>,
    /// Full keys of the objects directly in the folder.
    pub objects: Vec<String>,
}

/// What one read of a listed segment found.
pub enum Read {
    /// The bytes asked for, from the object listed (same size, same ETag).
    Bytes(Vec<u8>),
    /// No object has that key any more, or another object does (its ETag differs from the
    /// one listed): a compaction deleted it, or a writer re-used a freed key.
    Gone,
}

impl Remote {
    /// A client of `config`'s store for `bucket`. Nothing is sent yet.
    pub fn connect(config: &StoreConfig, bucket: &str) -> Result<Remote> {
        let bounds = RequestBounds::default();
        let client_options = ClientOptions::new()
            .with_allow_http(config.allow_http)
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_timeout(bounds.request_timeout);
        let retry = RetryConfig {
            max_retries: RETRIES_MAX,
            retry_timeout: RETRY_TIMEOUT,
            ..RetryConfig::default()
        };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(&config.region)
            .with_allow_http(config.allow_http)
            .with_client_options(client_options)
            .with_retry(retry);
        if let Some(endpoint) = &config.endpoint {
            // Path-style requests (`ENDPOINT/BUCKET/KEY`): what S3-compatible stores serve.
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false);
        }
        builder = match (&config.access_key_id, &config.secret_access_key) {
            (Some(key), Some(secret)) => builder
                .with_access_key_id(key)
                .with_secret_access_key(secret),
            _ => builder.with_skip_signature(true),
        };
        let store: AmazonS3 = builder.build().map_err(|error| ObjectStoreError::Config {
            reason: format!("bucket {bucket}: {error}"),
        })?;
        Remote::over(config, bucket, Arc::new(store))
    }

    /// A client of `store` for `bucket`, named by `config` (its sidecars' cache keys): what
    /// tests and simulations run the object-store code over.
    pub fn over<S: SegmentStore + 'static>(
        config: &StoreConfig,
        bucket: &str,
        store: Arc<S>,
    ) -> Result<Remote> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| ObjectStoreError::Config {
                reason: format!("cannot start the runtime for the store's client: {error}"),
            })?;
        Ok(Remote {
            config: config.clone(),
            bucket: bucket.to_string(),
            store: store.clone(),
            lister: store,
            runtime,
            bounds: RequestBounds::default(),
            clock: Arc::new(SystemClock),
        })
    }

    /// The same client, held to `bounds`.
    pub fn with_bounds(mut self, bounds: RequestBounds) -> Remote {
        self.bounds = bounds;
        self
    }

    /// The same client, reading the time from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Remote {
        self.clock = clock;
        self
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    pub fn bounds(&self) -> &RequestBounds {
        &self.bounds
    }

    /// The time now, in ns since the Unix epoch, by this client's clock.
    pub fn now_ns(&self) -> i64 {
        self.clock.now_ns()
    }

    /// This client's monotonic clock, in ns.
    pub fn monotonic_ns(&self) -> u64 {
        self.clock.monotonic_ns()
    }

    fn object(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    fn error(
        &self,
        key: &str,
        operation: &'static str,
        error: object_store::Error,
    ) -> ObjectStoreError {
        ObjectStoreError::Store {
            object: self.object(key),
            operation,
            answer: answer(&error),
        }
    }

    /// Runs one request, which must be answered within the request timeout.
    fn run<T>(
        &self,
        key: &str,
        operation: &'static str,
        request: impl Future<Output = object_store::Result<T>>,
    ) -> Result<object_store::Result<T>> {
        let after = self.bounds.request_timeout;
        self.runtime
            .block_on(async { tokio::time::timeout(after, request).await })
            .map_err(|_| ObjectStoreError::Timeout {
                object: self.object(key),
                operation,
                after,
            })
    }

    /// Runs one request as [`Remote::run`], any error of the store's an error.
    fn request<T>(
        &self,
        key: &str,
        operation: &'static str,
        request: impl Future<Output = object_store::Result<T>>,
    ) -> Result<T> {
        self.run(key, operation, request)?
            .map_err(|error| self.error(key, operation, error))
    }

    /// Every page of the listing of `prefix` (a folder, ending with `/`, or empty) after the
    /// key `offset`, `/`-delimited when `delimited`: at most the bounds' pages, within their
    /// deadline, each page's token new (a store that hands back a token it gave before would
    /// list forever).
    fn list_pages(
        &self,
        prefix: &str,
        offset: Option<&str>,
        delimited: bool,
    ) -> Result<(Vec<object_store::ObjectMeta>, Vec<ObjectPath>)> {
        let operation = if delimited {
            "list the folder"
        } else {
            "list the log's segments"
        };
        let fault = |fault: ListingFault| ObjectStoreError::Listing {
            object: self.object(prefix),
            fault,
        };
        let deadline = tokio::time::Instant::now() + self.bounds.listing_deadline;
        // Also by this client's clock (the one its ages are measured with): a listing read
        // over a longer time is no view of one moment.
        let started_ns = self.monotonic_ns();
        let deadline_ns =
            u64::try_from(self.bounds.listing_deadline.as_nanos()).unwrap_or(u64::MAX);
        let mut objects = Vec::new();
        let mut folders = Vec::new();
        let mut tokens = std::collections::HashSet::new();
        let mut options = PaginatedListOptions {
            offset: offset.map(str::to_string),
            delimiter: delimited.then_some(std::borrow::Cow::Borrowed("/")),
            ..PaginatedListOptions::default()
        };
        for _ in 0..self.bounds.listing_pages_max {
            let page = self.runtime.block_on(async {
                let page = self
                    .lister
                    .list_paginated((!prefix.is_empty()).then_some(prefix), options.clone());
                let timeout = self.bounds.request_timeout;
                tokio::time::timeout_at(deadline, tokio::time::timeout(timeout, page)).await
            });
            let page = match page {
                Err(_) => {
                    return Err(fault(ListingFault::Deadline {
                        after: self.bounds.listing_deadline,
                    }));
                }
                Ok(Err(_)) => {
                    return Err(ObjectStoreError::Timeout {
                        object: self.object(prefix),
                        operation,
                        after: self.bounds.request_timeout,
                    });
                }
                Ok(Ok(page)) => page.map_err(|error| self.error(prefix, operation, error))?,
            };
            objects.extend(page.result.objects);
            folders.extend(page.result.common_prefixes);
            if objects.len() + folders.len() > limits::LISTED_OBJECTS_MAX {
                return Err(fault(ListingFault::TooManyObjects {
                    max: limits::LISTED_OBJECTS_MAX,
                }));
            }
            match page.page_token {
                None => return Ok((objects, folders)),
                Some(token) => {
                    if !tokens.insert(token.clone()) {
                        return Err(fault(ListingFault::RepeatedToken { token }));
                    }
                    options.page_token = Some(token);
                }
            }
            if tokio::time::Instant::now() >= deadline
                || self.monotonic_ns().saturating_sub(started_ns) >= deadline_ns
            {
                return Err(fault(ListingFault::Deadline {
                    after: self.bounds.listing_deadline,
                }));
            }
        }
        Err(fault(ListingFault::TooManyPages {
            max: self.bounds.listing_pages_max,
        }))
    }

    /// The objects under `address`'s segment folder whose keys sort after `after` (all of them
    /// with `None`), in key order.
    pub fn list_segments(&self, address: &S3Address, after: Option<&str>) -> Result<Vec<Listed>> {
        let folder = address.segments_folder();
        let (listed, _) = self.list_pages(&folder, after, false)?;
        let mut listed: Vec<Listed> = listed
            .into_iter()
            .filter(|meta| after.is_none_or(|after| meta.location.as_ref() > after))
            .map(|meta| Listed {
                key: meta.location.to_string(),
                size: meta.size,
                e_tag: meta.e_tag,
                modified_ns: meta.last_modified.timestamp_nanos_opt().unwrap_or(i64::MAX),
            })
            .collect();
        // Listings come in key order from S3; sorted again so a store that does not keep that
        // order is read as the layout says.
        listed.sort_by(|a, b| a.key.cmp(&b.key));
        listed.dedup_by(|a, b| a.key == b.key);
        Ok(listed)
    }

    /// One level of the folder `prefix` (empty: the bucket's top), as a delimited listing
    /// (`/`) gives it: the keys of its subfolders, each ending with `/`, and its objects, both
    /// in key order. Every page of the listing is read.
    pub fn list_folder(&self, prefix: &str) -> Result<Folder> {
        let folder = if prefix.is_empty() || prefix.ends_with('/') {
            prefix.to_string()
        } else {
            format!("{prefix}/")
        };
        let (listed, listed_folders) = self.list_pages(&folder, None, true)?;
        let mut folders: Vec<String> = listed_folders
            .iter()
            .map(|folder| format!("{}/", folder.as_ref().trim_end_matches('/')))
            .collect();
        folders.sort();
        folders.dedup();
        let mut objects: Vec<String> = listed
            .iter()
            .map(|meta| meta.location.to_string())
            .collect();
        objects.sort();
        objects.dedup();
        Ok(Folder { folders, objects })
    }

    /// The bytes `range` of the listed segment `segment`, read only from the object listed:
    /// the request carries its ETag (`If-Match`), and the answer must name the size and ETag
    /// listed and hold exactly the bytes asked for (never more are kept). An object listed
    /// with a size it does not have is an error (the listing lied, or the object was
    /// replaced by one of another size).
    pub fn read_segment(
        &self,
        address: &S3Address,
        segment: &Segment,
        range: Range<u64>,
    ) -> Result<Read> {
        let operation = "read the segment";
        let wanted = range.end.saturating_sub(range.start);
        let options = GetOptions {
            range: Some(range.clone().into()),
            if_match: segment.e_tag.clone(),
            ..GetOptions::default()
        };
        let path = ObjectPath::from(segment.key.as_str());
        let read = self.run(&segment.key, operation, async {
            let result = self.store.get_opts(&path, options).await?;
            let meta = result.meta.clone();
            let mut bytes =
                Vec::with_capacity(wanted.min(limits::OBJECT_READ_CHUNK_BYTES) as usize);
            let mut stream = result.into_stream();
            while let Some(chunk) = stream.try_next().await? {
                if bytes.len() as u64 + chunk.len() as u64 > wanted {
                    // More than asked for: nothing beyond the range is kept.
                    bytes.extend_from_slice(&chunk[..(wanted as usize - bytes.len())]);
                    return Ok((meta, bytes, true));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok((meta, bytes, false))
        })?;
        let (meta, bytes, longer) = match read {
            Ok(read) => read,
            Err(
                object_store::Error::NotFound { .. } | object_store::Error::Precondition { .. },
            ) => return Ok(Read::Gone),
            Err(error) => return Err(self.error(&segment.key, operation, error)),
        };
        if let (Some(listed), Some(found)) = (&segment.e_tag, &meta.e_tag)
            && bare_e_tag(listed) != bare_e_tag(found)
        {
            return Ok(Read::Gone);
        }
        let layout = |reason: String| ObjectStoreError::Layout {
            object: address.object_url(&segment.key),
            reason,
        };
        if meta.size != segment.len {
            return Err(layout(format!(
                "the segment holds {} bytes but was listed with {}: the listing is wrong, or the \
                 object was replaced",
                meta.size, segment.len
            )));
        }
        if longer || bytes.len() as u64 != wanted {
            return Err(layout(format!(
                "the store answered {}{} bytes for the {wanted} bytes at {} asked: it was \
                 replaced or damaged",
                if longer { "more than " } else { "" },
                bytes.len(),
                range.start
            )));
        }
        Ok(Read::Bytes(bytes))
    }

    /// The bytes of the listed segment `segment`, in pieces of at most
    /// [`limits::OBJECT_READ_CHUNK_BYTES`], each handed to `each` in order (see
    /// [`Remote::read_segment`]); `Ok(false)` when the object is gone.
    pub fn each_chunk(
        &self,
        address: &S3Address,
        segment: &Segment,
        mut each: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<bool> {
        let mut at = 0;
        while at < segment.len {
            let end = segment
                .len
                .min(at.saturating_add(limits::OBJECT_READ_CHUNK_BYTES));
            match self.read_segment(address, segment, at..end)? {
                Read::Bytes(bytes) => each(&bytes)?,
                Read::Gone => return Ok(false),
            }
            at = end;
        }
        Ok(true)
    }

    /// Whether the object `key` holds exactly `bytes` (`false` when it is gone or holds other
    /// bytes; never more than `bytes.len() + 1` of its bytes are read).
    pub fn holds(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        let operation = "read the object";
        let path = ObjectPath::from(key);
        let len = bytes.len() as u64;
        let read = self.run(key, operation, async {
            let meta = self.store.head(&path).await?;
            if meta.size != len || len == 0 {
                return Ok(None);
            }
            let options = GetOptions {
                range: Some((0..len).into()),
                if_match: meta.e_tag.clone(),
                ..GetOptions::default()
            };
            let found = self.store.get_opts(&path, options).await?;
            if found.meta.size != len {
                return Ok(None);
            }
            let mut held =
                Vec::with_capacity(bytes.len().min(limits::OBJECT_READ_CHUNK_BYTES as usize));
            let mut stream = found.into_stream();
            while let Some(chunk) = stream.try_next().await? {
                if held.len() + chunk.len() > bytes.len() {
                    return Ok(None);
                }
                held.extend_from_slice(&chunk);
            }
            Ok(Some(held))
        })?;
        match read {
            Ok(held) => Ok(held.as_deref() == Some(bytes)),
            Err(
                object_store::Error::NotFound { .. } | object_store::Error::Precondition { .. },
            ) => Ok(false),
            Err(error) => Err(self.error(key, operation, error)),
        }
    }

    /// Whether an object `key` exists.
    pub fn exists(&self, key: &str) -> Result<bool> {
        let operation = "look at the object";
        match self.run(key, operation, self.store.head(&ObjectPath::from(key)))? {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(error) => Err(self.error(key, operation, error)),
        }
    }

    /// Creates the object `key` holding `bytes` unless one exists (`If-None-Match: *`).
    /// `Exists` is the store's refusal (412, or 409 when a concurrent create of the same key
    /// is under way): the caller reads the key to learn whose object it is.
    pub fn create(&self, key: &str, bytes: &[u8]) -> Result<Created> {
        let operation = "create the segment";
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let payload = PutPayload::from(bytes.to_vec());
        match self.run(
            key,
            operation,
            self.store
                .put_opts(&ObjectPath::from(key), payload, options),
        )? {
            Ok(result) => Ok(Created::Written {
                e_tag: result.e_tag,
            }),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(Created::Exists),
            Err(error) => Err(self.error(key, operation, error)),
        }
    }

    /// Deletes the object `key` (tests and `push` cleaning up nothing else).
    pub fn delete(&self, key: &str) -> Result<()> {
        self.request(
            key,
            "delete the object",
            self.store.delete(&ObjectPath::from(key)),
        )
    }

    /// Writes the object `key` unconditionally (tests that damage a log on purpose).
    pub fn overwrite(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.request(
            key,
            "write the object",
            self.store
                .put(&ObjectPath::from(key), PutPayload::from(bytes.to_vec())),
        )
        .map(|_| ())
    }
}

/// An ETag without its quotes and weak marker, as stores spell it in listings and headers.
fn bare_e_tag(e_tag: &str) -> &str {
    e_tag.trim_start_matches("W/").trim_matches('"')
}

/// The store's answer in one line: the error and its causes, without the crate's debug text.
fn answer(error: &object_store::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.replace('\n', " ")
}
