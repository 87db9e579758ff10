//! Work on many files at once: one worker thread per core, results handed back on the calling
//! thread in input order (so output is the same whatever finishes first).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::exit::CliError;

/// Runs `work` on every item, `available_parallelism` at a time, and calls `emit` with each
/// result in input order. When `emit` fails, no further work is started and its error is
/// returned once the running workers are done.
pub fn for_each_ordered<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    mut emit: impl FnMut(&T, R) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |count| count.get())
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else {
                        break;
                    };
                    if sender.send((index, work(item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut waiting = BTreeMap::new();
        let mut expected = 0;
        for (index, result) in receiver {
            waiting.insert(index, result);
            while let Some(result) = waiting.remove(&expected) {
                if let Err(error) = emit(&items[expected], result) {
                    // Stop handing out work; the workers finish their current item.
                    next.store(items.len(), Ordering::Relaxed);
                    return Err(error);
                }
                expected += 1;
            }
        }
        Ok(())
    })
}
