//! A store that lies is not trusted: sizes and counts from its listings are checked against
//! what is read and never reserve memory, a listing that does not end is an error (a page
//! bound, a deadline, a repeated continuation token), a request it never answers times out,
//! and push, pull and verify stream a log through bounded memory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use treelog::SessionOptions;
use treelog::object_store::{
    ListingFault, ObjectStoreError, RequestBounds, SegmentStorage, open_session_on, pull_on,
    push_on, verify_on,
};

use super::memory::peak_during;
use super::memstore::{Lies, MemStore};
use super::{address, log_bytes, remote, write_file};

/// A store holding a pushed log of `len` bytes at `s3://b/s.jsonl`.
fn store_with_log(len: usize) -> (Arc<MemStore>, tempfile::TempDir, Vec<u8>) {
    let store = Arc::new(MemStore::new());
    let dir = tempfile::tempdir().unwrap();
    let log = log_bytes(len);
    let file = dir.path().join("s.jsonl");
    write_file(&file, &log);
    push_on(
        remote(&store, RequestBounds::default()),
        &file,
        &address("s.jsonl"),
    )
    .unwrap();
    (store, dir, log)
}

fn options(dir: &tempfile::TempDir) -> SessionOptions {
    SessionOptions {
        index_dir: Some(dir.path().join("cache")),
        ..SessionOptions::default()
    }
}

/// A listing that claims a 1 PB segment: `pull`, `verify` and an open refuse the log, naming
/// the segment and both sizes, instead of reserving a petabyte and aborting.
#[test]
fn a_listed_size_the_object_does_not_have_is_an_error_not_an_allocation() {
    let (store, dir, _) = store_with_log(10_000);
    store.lie(Lies {
        listed_size: Some(1_000_000_000_000_000),
        ..Lies::default()
    });
    let remote = remote(&store, RequestBounds::default());
    let target = dir.path().join("pulled.jsonl");
    let expect = "but was listed with 1000000000000000";
    let error = pull_on(remote.clone(), &address("s.jsonl"), &target, false).unwrap_err();
    assert!(
        matches!(&error, ObjectStoreError::Layout { object, reason }
            if object.starts_with("s3://b/s.jsonl.d/seg-") && reason.contains(expect)),
        "{error}"
    );
    assert!(!target.exists(), "nothing pulled");
    let error = verify_on(remote.clone(), &address("s.jsonl"), false, &options(&dir)).unwrap_err();
    assert!(error.to_string().contains(expect), "{error}");
    let error = match open_session_on(remote, &address("s.jsonl"), options(&dir)) {
        Ok(_) => panic!("a log whose listing lies was opened"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains(expect), "{error}");
}

/// A listing that always says "more follows" with the same token stops at its second page,
/// with an error naming the folder and the token.
#[test]
fn a_repeated_continuation_token_is_an_error_at_once() {
    let (store, _dir, _) = store_with_log(10_000);
    store.lie(Lies {
        endless_listing: Some(true),
        ..Lies::default()
    });
    let before = store.pages_listed.load(std::sync::atomic::Ordering::SeqCst);
    let error = SegmentStorage::open(
        remote(&store, RequestBounds::default()),
        &address("s.jsonl"),
    )
    .err()
    .expect("an endless listing is refused");
    let pages = store.pages_listed.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert!(
        matches!(&error, ObjectStoreError::Listing { object, fault: ListingFault::RepeatedToken { token } }
            if object == "s3://b/s.jsonl.d/" && token == "again"),
        "{error}"
    );
    assert_eq!(pages, 2, "the second page repeats the first page's token");
    assert!(error.to_string().contains("would never end"), "{error}");
}

/// A listing that hands out a new token with every empty page stops at the page bound.
#[test]
fn a_listing_that_never_ends_stops_at_the_page_bound() {
    let (store, _dir, _) = store_with_log(10_000);
    store.lie(Lies {
        endless_listing: Some(false),
        ..Lies::default()
    });
    let bounds = RequestBounds {
        listing_pages_max: 50,
        ..RequestBounds::default()
    };
    let before = store.pages_listed.load(std::sync::atomic::Ordering::SeqCst);
    let error = SegmentStorage::open(remote(&store, bounds), &address("s.jsonl"))
        .err()
        .expect("an endless listing is refused");
    let pages = store.pages_listed.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert!(
        matches!(
            error,
            ObjectStoreError::Listing {
                fault: ListingFault::TooManyPages { max: 50 },
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(pages, 50);
}

/// A listing whose pages come slowly and never end stops at its deadline.
#[test]
fn a_slow_endless_listing_stops_at_its_deadline() {
    let (store, _dir, _) = store_with_log(10_000);
    store.lie(Lies {
        endless_listing: Some(false),
        page_delay: Some(Duration::from_millis(20)),
        ..Lies::default()
    });
    let bounds = RequestBounds {
        listing_deadline: Duration::from_millis(300),
        ..RequestBounds::default()
    };
    let started = Instant::now();
    let error = SegmentStorage::open(remote(&store, bounds), &address("s.jsonl"))
        .err()
        .expect("an endless listing is refused");
    assert!(
        matches!(
            error,
            ObjectStoreError::Listing {
                fault: ListingFault::Deadline { .. },
                ..
            }
        ),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// A read the store never answers is an error after the request timeout, naming the object.
#[test]
fn a_request_never_answered_times_out() {
    let (store, dir, _) = store_with_log(10_000);
    store.lie(Lies {
        reads_hang: true,
        ..Lies::default()
    });
    let bounds = RequestBounds {
        request_timeout: Duration::from_millis(200),
        ..RequestBounds::default()
    };
    let started = Instant::now();
    let error = pull_on(
        remote(&store, bounds),
        &address("s.jsonl"),
        &dir.path().join("p"),
        false,
    )
    .unwrap_err();
    assert!(
        matches!(&error, ObjectStoreError::Timeout { object, .. } if object.starts_with("s3://b/s.jsonl.d/seg-")),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// `push`, `pull` and `verify` of a 48 MiB log hold a bounded number of bytes, not the log:
/// under 32 MiB for pull and verify, and for push under 32 MiB beyond what the store itself
/// keeps (the log, once pushed).
#[test]
fn push_pull_and_verify_stream_a_log() {
    const LEN: usize = 48 << 20;
    const BOUND: u64 = 32 << 20;
    let store = Arc::new(MemStore::new());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.jsonl");
    write_file(&file, &log_bytes(LEN));
    let len = std::fs::metadata(&file).unwrap().len();
    let client = remote(&store, RequestBounds::default());
    let (pushed, push_peak) = peak_during(|| push_on(client.clone(), &file, &address("big.jsonl")));
    assert_eq!(pushed.unwrap().len_bytes, len);
    assert!(
        push_peak < len + BOUND,
        "push held {push_peak} bytes for a {len}-byte log"
    );
    let target = dir.path().join("pulled.jsonl");
    let (pulled, pull_peak) =
        peak_during(|| pull_on(client.clone(), &address("big.jsonl"), &target, false));
    assert_eq!(pulled.unwrap().len_bytes, len);
    assert!(
        pull_peak < BOUND,
        "pull held {pull_peak} bytes for a {len}-byte log"
    );
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(&file).unwrap()
    );
    let (report, verify_peak) =
        peak_during(|| verify_on(client.clone(), &address("big.jsonl"), false, &options(&dir)));
    let report = report.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(
        verify_peak < BOUND,
        "verify held {verify_peak} bytes for a {len}-byte log"
    );
    eprintln!(
        "peaks for a {len}-byte log: push {push_peak}, pull {pull_peak}, verify {verify_peak}"
    );
}
