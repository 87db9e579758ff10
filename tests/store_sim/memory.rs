//! Memory used by the calling thread: a global allocator that counts the bytes each thread
//! holds, and the most it held since the count was reset. The object-store client runs its
//! requests on the calling thread (a current-thread runtime), so what a call holds is counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static HELD: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn count(delta: i64) {
    // `try_with`: a thread being torn down no longer counts.
    let _ = HELD.try_with(|held| {
        let now = held.get() + delta;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The most bytes this thread held above what it held when `work` started, while it ran.
pub fn peak_during<T>(work: impl FnOnce() -> T) -> (T, u64) {
    let start = HELD.with(Cell::get);
    PEAK.with(|peak| peak.set(start));
    let value = work();
    let peak = PEAK.with(Cell::get);
    (value, (peak - start).max(0) as u64)
}
