//! An in-memory object store for the object-store code, built on `object_store`'s `InMemory`:
//! it lists in pages as S3 does (`PaginatedListStore`, up to a page size, a continuation token
//! per page), and can be told to lie (claim sizes its objects do not have, hand back a
//! continuation token forever, answer slowly or never) so that the tests need no server.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::list::{PaginatedListOptions, PaginatedListResult, PaginatedListStore};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// How the store lies.
#[derive(Clone, Debug, Default)]
pub struct Lies {
    /// Listings give every object this size instead of its own.
    pub listed_size: Option<u64>,
    /// Listings never end: every page says more follows. `Some(true)`: always with the same
    /// token; `Some(false)`: with a new token each time, and no object.
    pub endless_listing: Option<bool>,
    /// Each listing page is answered after this long.
    pub page_delay: Option<Duration>,
    /// Reads are never answered.
    pub reads_hang: bool,
}

/// The store: `InMemory` behind S3's listing, with its lies.
#[derive(Default)]
pub struct MemStore {
    pub inner: InMemory,
    pub lies: Mutex<Lies>,
    /// Objects per listing page.
    pub page_size: usize,
    /// Listing pages asked for so far.
    pub pages_listed: AtomicUsize,
}

impl MemStore {
    pub fn new() -> MemStore {
        MemStore {
            page_size: 1000,
            ..MemStore::default()
        }
    }

    pub fn lie(&self, lies: Lies) {
        *self.lies.lock().unwrap() = lies;
    }

    fn lies(&self) -> Lies {
        self.lies.lock().unwrap().clone()
    }
}

impl fmt::Display for MemStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemStore")
    }
}

impl fmt::Debug for MemStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemStore")
    }
}

#[async_trait::async_trait]
impl ObjectStore for MemStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if self.lies().reads_hang {
            std::future::pending::<()>().await;
        }
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[async_trait::async_trait]
impl PaginatedListStore for MemStore {
    async fn list_paginated(
        &self,
        prefix: Option<&str>,
        opts: PaginatedListOptions,
    ) -> Result<PaginatedListResult> {
        let lies = self.lies();
        let page = self.pages_listed.fetch_add(1, Ordering::SeqCst);
        if let Some(delay) = lies.page_delay {
            tokio::time::sleep(delay).await;
        }
        let mut result = list_page(&self.inner, prefix, &opts, self.page_size).await?;
        match lies.endless_listing {
            Some(true) => result.page_token = Some("again".into()),
            Some(false) => {
                result.result.objects.clear();
                result.page_token = Some(format!("page-{page}"));
            }
            None => {}
        }
        if let Some(size) = lies.listed_size {
            for meta in &mut result.result.objects {
                meta.size = size;
            }
        }
        Ok(result)
    }
}

/// One page of an S3 listing of `store`: the keys that start with `prefix`, after
/// `opts.offset` and after the page token (the last key of the page before), in key order,
/// at most `page_size` of them (objects and folders together), folded at `/` when
/// delimited.
pub async fn list_page(
    store: &InMemory,
    prefix: Option<&str>,
    opts: &PaginatedListOptions,
    page_size: usize,
) -> Result<PaginatedListResult> {
    let prefix = prefix.unwrap_or("");
    let mut all: Vec<ObjectMeta> = store
        .list(None)
        .filter_map(|meta| async move { meta.ok() })
        .filter(|meta| std::future::ready(meta.location.as_ref().starts_with(prefix)))
        .collect()
        .await;
    all.sort_by(|a, b| a.location.cmp(&b.location));
    let after = opts.page_token.as_deref().or(opts.offset.as_deref());
    let mut objects = Vec::new();
    let mut folders: Vec<String> = Vec::new();
    let mut last = None;
    let page = |objects, folders: Vec<String>, page_token| PaginatedListResult {
        result: ListResult {
            common_prefixes: folders.iter().map(|f| Path::from(f.as_str())).collect(),
            objects,
            extensions: Default::default(),
        },
        page_token,
    };
    for meta in all {
        let key = meta.location.as_ref().to_string();
        let folder = opts
            .delimiter
            .as_ref()
            .and_then(|_| key[prefix.len()..].find('/'))
            .map(|slash| key[..prefix.len() + slash + 1].to_string());
        let name = folder.clone().unwrap_or_else(|| key.clone());
        if after.is_some_and(|after| {
            name.as_str() <= after || (after.ends_with('/') && key.starts_with(after))
        }) {
            continue;
        }
        if folder.is_some() && folders.last() == Some(&name) {
            continue;
        }
        if objects.len() + folders.len() == page_size {
            return Ok(page(objects, folders, last));
        }
        match folder {
            Some(folder) => folders.push(folder),
            None => objects.push(meta),
        }
        last = Some(name);
    }
    Ok(page(objects, folders, None))
}
