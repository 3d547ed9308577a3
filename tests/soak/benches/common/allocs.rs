//! The per-GET probes' allocation count: a global allocator over the system's that counts the
//! allocations made on the thread that asked for them, while it asks ([`counted`]).
//!
//! A block is one `alloc`, `alloc_zeroed` or `realloc` (a `realloc` is counted as a new block of
//! its new size, as dhat's "total" counts do); the bytes are the sizes asked for. Frees are not
//! counted. Other threads (the probe's server) are never counted. When nothing counts, the
//! allocator costs one relaxed load per allocation, on every way alike.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// The probe's allocator: the system's, counting on the thread inside [`counted`].
pub struct Counting;

/// Whether any thread counts (so that the allocations of a run that never counts read one
/// flag and no thread-local).
static ANY: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread counts, and its count: (blocks, bytes).
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn note(size: usize) {
    if ANY.load(Ordering::Relaxed) && ON.with(Cell::get) {
        COUNT.with(|c| {
            let (blocks, bytes) = c.get();
            c.set((blocks + 1, bytes + size as u64));
        });
    }
}

// SAFETY: every call goes to `System` with the caller's arguments; the counting touches only
// const-initialised thread-locals and an atomic, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `f` with this thread's allocations counted; its result and the count (blocks, bytes).
pub fn counted<T>(f: impl FnOnce() -> T) -> (T, (u64, u64)) {
    ANY.store(true, Ordering::Relaxed);
    COUNT.with(|c| c.set((0, 0)));
    ON.with(|on| on.set(true));
    let out = f();
    ON.with(|on| on.set(false));
    (out, COUNT.with(Cell::get))
}

/// Prints one way's line of the allocation table: per GET, over `gets` GETs.
pub fn print(name: &str, width: usize, gets: usize, (blocks, bytes): (u64, u64)) {
    let n = gets as f64;
    println!(
        "{name:<width$} {:>9.1} {:>11.1}",
        blocks as f64 / n,
        bytes as f64 / n
    );
}

/// Prints the header of the allocation table.
pub fn header(probe: &str, width: usize, gets: usize) {
    println!(
        "== {probe} probe: allocations per GET on the client thread, over {gets} GETs after a warm-up"
    );
    println!("{:<width$} {:>9} {:>11}", "way", "blocks", "bytes");
}

/// The `--allocs` table of a probe: for each way in `names`, made by `make` and warmed by 200
/// GETs, the allocations of 1,000 more (`gets(way, n)` makes `n` GETs and checks each).
pub fn table<W>(
    probe: &str,
    names: &[&str],
    mut make: impl FnMut(&str) -> W,
    mut gets: impl FnMut(&W, usize),
) {
    let n = 1_000;
    header(probe, 20, n);
    for name in names {
        let way = make(name);
        gets(&way, 200);
        let ((), count) = counted(|| gets(&way, n));
        print(name, 20, n, count);
    }
}
