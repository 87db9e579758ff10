//! Early writeback of a rebuild's private index file. A rebuild commits without durability
//! until its last commit, which makes the whole file durable with one `fsync`; were every byte
//! of the file still to be written at that point, that `fsync` would run alone at the end of
//! the rebuild, with nothing else to do meanwhile (docs/decisions/rebuild-end.md). A helper
//! thread asks the kernel to write the file out after each flush of the rebuild instead, while
//! the other threads go on parsing, so the last `fsync` finds little left.
//!
//! Best effort: the helper's errors are ignored (the last commit's own `fsync` reports any), and
//! where the file cannot be opened again or no thread can be started, the rebuild goes on
//! without it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

pub(crate) struct Writeback {
    /// A request for a writeback; one waiting is enough, later ones are dropped.
    requests: Option<mpsc::SyncSender<()>>,
    /// Set when the helper is dropped: a request still waiting is not carried out (the last
    /// commit's own `fsync` follows, or the file is about to be deleted).
    stopped: Arc<AtomicBool>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Writeback {
    /// Starts the helper for the file at `path`, or `None`.
    pub fn start(path: &Path) -> Option<Writeback> {
        // A read-only handle is enough: `fdatasync` writes out the file's dirty pages whoever
        // wrote them.
        let file = std::fs::File::open(path).ok()?;
        let (requests, received) = mpsc::sync_channel(1);
        let stopped = Arc::new(AtomicBool::new(false));
        let stopped_seen = Arc::clone(&stopped);
        let worker = std::thread::Builder::new()
            .name("treelog-writeback".into())
            .spawn(move || {
                for () in received {
                    if stopped_seen.load(Ordering::Acquire) {
                        break;
                    }
                    let _ = file.sync_data();
                }
            })
            .ok()?;
        Some(Writeback {
            requests: Some(requests),
            stopped,
            worker: Some(worker),
        })
    }

    /// Asks for the file's written pages to be written to disk, unless a request is waiting.
    pub fn request(&self) {
        if let Some(requests) = &self.requests {
            let _ = requests.try_send(());
        }
    }
}

impl Drop for Writeback {
    /// Stops the helper after the writeback under way, if any; a request still waiting is
    /// dropped.
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
        drop(self.requests.take());
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}
