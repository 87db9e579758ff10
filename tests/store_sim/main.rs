//! The object-store code (`treelog::object_store`) over an in-memory store, no server needed:
//! `lying` holds it against a store that lies (sizes, endless listings, silence); `sim` runs
//! the protocol's actors under seeded schedules and checks its invariants after every step.
//! Run one module with `cargo test -p treelog --features object-store --test store_sim lying::`.

mod lying;
mod memory;
mod memstore;
mod sim;

use std::path::Path;
use std::sync::Arc;

use treelog::object_store::{Remote, RequestBounds, S3Address, StoreConfig};

use memstore::MemStore;

/// The settings that name the in-memory store (its sidecars' cache keys); nothing connects.
fn config() -> StoreConfig {
    StoreConfig {
        endpoint: Some("memory://test".into()),
        access_key_id: None,
        secret_access_key: None,
        region: "us-east-1".into(),
        allow_http: false,
    }
}

/// A client of `store`, held to `bounds`.
fn remote(store: &Arc<MemStore>, bounds: RequestBounds) -> Arc<Remote> {
    Arc::new(
        Remote::over(&config(), "b", store.clone())
            .unwrap()
            .with_bounds(bounds),
    )
}

fn address(key: &str) -> S3Address {
    S3Address::parse(&format!("s3://b/{key}")).unwrap().unwrap()
}

/// A pi log of about `len` bytes: a header and messages, each a line of about 1 KiB.
fn log_bytes(len: usize) -> Vec<u8> {
    let mut log = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"01942117-de87-73f5-8d57-ac533bb5be51\",\
         \"timestamp\":\"2025-01-01T09:00:00.007Z\",\"cwd\":\"/p\"}\n",
    );
    let text = "x".repeat(900);
    let mut parent = "null".to_string();
    let mut index = 0u64;
    while log.len() < len {
        let id = format!("{index:08x}");
        log.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\
             \"2025-01-01T09:00:00.007Z\",\"message\":{{\"role\":\"user\",\"content\":\
             \"{text}\",\"timestamp\":1}}}}\n"
        ));
        parent = format!("\"{id}\"");
        index += 1;
    }
    log.into_bytes()
}

fn write_file(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}
