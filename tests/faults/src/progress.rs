//! A body read on one thread, watched from another: how many bytes arrived, and when the
//! last did. A test installs a fault once the reader has what the server sent before it, and
//! tells a stall (no bytes for a while) from a slow read.

use std::io::Read;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The bytes of a read so far and the instant of the last ones.
#[derive(Debug, Default)]
pub struct Progress {
    state: Mutex<(u64, Option<Instant>)>,
    changed: Condvar,
}

/// How a [`Progress::read_to_end`] ended.
#[derive(Debug)]
pub struct BodyRead {
    /// Everything read.
    pub bytes: Vec<u8>,
    /// `Ok` at the end of the body, or the error that ended the read.
    pub end: std::io::Result<()>,
    /// When the read ended.
    pub ended: Instant,
}

impl Progress {
    /// A read not yet started.
    #[must_use]
    pub fn new() -> Progress {
        Progress::default()
    }

    fn lock(&self) -> MutexGuard<'_, (u64, Option<Instant>)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes read so far.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.lock().0
    }

    /// When bytes last arrived (`None`: none yet).
    #[must_use]
    pub fn last_read(&self) -> Option<Instant> {
        self.lock().1
    }

    /// Waits until `n` bytes have been read, at most `timeout`: whether they were.
    pub fn wait_for(&self, n: u64, timeout: Duration) -> bool {
        let (state, _) = self
            .changed
            .wait_timeout_while(self.lock(), timeout, |(read, _)| *read < n)
            .unwrap_or_else(PoisonError::into_inner);
        state.0 >= n
    }

    /// Counts `n` more bytes read, now: for a body that is not a [`Read`] (an async body's
    /// frames).
    pub fn count(&self, n: usize) {
        let mut state = self.lock();
        *state = (state.0 + n as u64, Some(Instant::now()));
        drop(state);
        self.changed.notify_all();
    }

    /// Reads `reader` to its end or its first error, counting as it goes (64 KiB reads).
    pub fn read_to_end(&self, mut reader: impl Read) -> BodyRead {
        let mut bytes = Vec::new();
        let mut buffer = vec![0; 64 * 1024];
        let end = loop {
            match reader.read(&mut buffer) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    bytes.extend_from_slice(&buffer[..n]);
                    self.count(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        BodyRead {
            bytes,
            end,
            ended: Instant::now(),
        }
    }
}
