//! A minimal event queue on virtual time: events fire in time order, ties in the order they
//! were scheduled, so a run is a pure function of its seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A queue of `E` keyed by virtual time in nanoseconds.
#[derive(Debug)]
pub struct Queue<E: Ord> {
    heap: BinaryHeap<Reverse<(u64, u64, E)>>,
    seq: u64,
}

impl<E: Ord> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E: Ord> Queue<E> {
    /// Schedules `event` at `at` nanoseconds.
    pub fn at(&mut self, at: u64, event: E) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, event)));
    }

    /// The next event and its time.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }
}
