//! The object store's client: the settings from the environment, an S3 client from the
//! `object_store` crate, and the small current-thread tokio runtime its calls run on, behind
//! blocking methods (the engine and the CLI are synchronous). Every error names the object and
//! what the store answered.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{
    ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
};

use super::address::S3Address;
use super::error::{ObjectStoreError, Result};
use super::layout::Listed;

/// Requests retried after a transient failure (a 5xx, a dropped connection) before an error.
const RETRIES_MAX: usize = 3;
/// The longest a request and its retries may take.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

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

/// A connection to one bucket, with the runtime its requests run on.
pub struct Remote {
    config: StoreConfig,
    bucket: String,
    store: Arc<AmazonS3>,
    runtime: tokio::runtime::Runtime,
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

impl Remote {
    /// A client of `config`'s store for `bucket`. Nothing is sent yet.
    pub fn connect(config: &StoreConfig, bucket: &str) -> Result<Remote> {
        let client_options = ClientOptions::new()
            .with_allow_http(config.allow_http)
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_timeout(REQUEST_TIMEOUT);
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
        let store = builder.build().map_err(|error| ObjectStoreError::Config {
            reason: format!("bucket {bucket}: {error}"),
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| ObjectStoreError::Config {
                reason: format!("cannot start the runtime for the store's client: {error}"),
            })?;
        Ok(Remote {
            config: config.clone(),
            bucket: bucket.to_string(),
            store: Arc::new(store),
            runtime,
        })
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    fn error(
        &self,
        key: &str,
        operation: &'static str,
        error: object_store::Error,
    ) -> ObjectStoreError {
        ObjectStoreError::Store {
            object: format!("s3://{}/{key}", self.bucket),
            operation,
            answer: answer(&error),
        }
    }

    /// The objects under `address`'s segment folder whose keys sort after `after` (all of them
    /// with `None`), in key order.
    pub fn list_segments(&self, address: &S3Address, after: Option<&str>) -> Result<Vec<Listed>> {
        let folder = address.segments_folder();
        let prefix = ObjectPath::from(folder.trim_end_matches('/'));
        let stream = match after {
            Some(after) => self
                .store
                .list_with_offset(Some(&prefix), &ObjectPath::from(after)),
            None => self.store.list(Some(&prefix)),
        };
        let listed: Vec<object_store::ObjectMeta> = self
            .runtime
            .block_on(stream.try_collect())
            .map_err(|error| self.error(&folder, "list the log's segments", error))?;
        let mut listed: Vec<Listed> = listed
            .into_iter()
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
        Ok(listed)
    }

    /// One level of the folder `prefix` (empty: the bucket's top), as a delimited listing
    /// (`/`) gives it: the keys of its subfolders, each ending with `/`, and its objects, both
    /// in key order. Every page of the listing is read.
    pub fn list_folder(&self, prefix: &str) -> Result<Folder> {
        let path = ObjectPath::from(prefix.trim_end_matches('/'));
        let path = (!prefix.is_empty()).then_some(&path);
        let listed = self
            .runtime
            .block_on(self.store.list_with_delimiter(path))
            .map_err(|error| self.error(prefix, "list the folder", error))?;
        let mut folders: Vec<String> = listed
            .common_prefixes
            .iter()
            .map(|folder| format!("{folder}/"))
            .collect();
        folders.sort();
        let mut objects: Vec<String> = listed
            .objects
            .iter()
            .map(|meta| meta.location.to_string())
            .collect();
        objects.sort();
        Ok(Folder { folders, objects })
    }

    /// The bytes `range` of the object `key`.
    pub fn get_range(&self, key: &str, range: Range<u64>) -> Result<Vec<u8>> {
        let bytes = self
            .runtime
            .block_on(self.store.get_range(&ObjectPath::from(key), range))
            .map_err(|error| self.error(key, "read the segment", error))?;
        Ok(bytes.to_vec())
    }

    /// The bytes `range` of the object `key`, or `None` when no object has that key (a
    /// covered segment deleted by a compaction since it was listed).
    pub fn get_range_if_exists(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>> {
        match self
            .runtime
            .block_on(self.store.get_range(&ObjectPath::from(key), range))
        {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(self.error(key, "read the segment", error)),
        }
    }

    /// The whole object `key`.
    pub fn get(&self, key: &str) -> Result<Vec<u8>> {
        let bytes = self
            .runtime
            .block_on(async { self.store.get(&ObjectPath::from(key)).await?.bytes().await })
            .map_err(|error| self.error(key, "read the object", error))?;
        Ok(bytes.to_vec())
    }

    /// Whether an object `key` exists.
    pub fn exists(&self, key: &str) -> Result<bool> {
        match self
            .runtime
            .block_on(self.store.head(&ObjectPath::from(key)))
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(error) => Err(self.error(key, "look at the object", error)),
        }
    }

    /// Creates the object `key` holding `bytes` unless one exists (`If-None-Match: *`).
    pub fn create(&self, key: &str, bytes: &[u8]) -> Result<Created> {
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let payload = PutPayload::from(bytes.to_vec());
        match self.runtime.block_on(
            self.store
                .put_opts(&ObjectPath::from(key), payload, options),
        ) {
            Ok(result) => Ok(Created::Written {
                e_tag: result.e_tag,
            }),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(Created::Exists),
            Err(error) => Err(self.error(key, "create the segment", error)),
        }
    }

    /// Deletes the object `key` (tests and `push` cleaning up nothing else).
    pub fn delete(&self, key: &str) -> Result<()> {
        self.runtime
            .block_on(self.store.delete(&ObjectPath::from(key)))
            .map_err(|error| self.error(key, "delete the object", error))
    }

    /// Writes the object `key` unconditionally (tests that damage a log on purpose).
    pub fn overwrite(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.runtime
            .block_on(
                self.store
                    .put(&ObjectPath::from(key), PutPayload::from(bytes.to_vec())),
            )
            .map(|_| ())
            .map_err(|error| self.error(key, "write the object", error))
    }
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
