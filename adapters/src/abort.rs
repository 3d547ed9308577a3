//! Abort: one cancellation concept for every adapter.
//!
//! Rule: an abort interrupts the request in flight, its timeout and
//! the wait between attempts, and no request is sent after it. An [`Abort`] is a cheap,
//! cloneable handle: one clone goes with the operation, another to whoever may cancel it (any
//! thread or task). Async waits listen for it; blocking waits park on it with a deadline; a
//! blocking client registers a hook that shuts its socket down.

use core::time::Duration;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use event_listener::{Event, Listener};

type Hook = Box<dyn FnOnce() + Send>;

/// A handle that aborts an operation from another thread or task.
///
/// ```
/// use backstop::Abort;
///
/// let abort = Abort::new();
/// let for_other_thread = abort.clone();
/// std::thread::spawn(move || for_other_thread.abort()).join().unwrap();
/// assert!(abort.is_aborted());
/// ```
///
/// # Cancelling from another thread or task
///
/// One clone goes with the operation (in its request's extensions), another to whoever may
/// cancel it (a UI thread, a shutdown signal, a task that lost a race). [`abort`](Self::abort)
/// interrupts the request in flight, its timeout or the wait between attempts; nothing is
/// sent after it, and the error says `Aborted`, not a timeout.
///
/// ```
/// # #[cfg(feature = "ureq")] {
/// # use std::io::Read;
/// # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// # let url = format!("http://{}/report", listener.local_addr()?);
/// # let (arrived, request_arrived) = std::sync::mpsc::channel();
/// # std::thread::spawn(move || {
/// #     let mut held = Vec::new(); // reads each request, never answers
/// #     for stream in listener.incoming() {
/// #         let mut stream = stream.unwrap();
/// #         let _ = stream.read(&mut [0; 4096]);
/// #         let _ = arrived.send(());
/// #         held.push(stream);
/// #     }
/// # });
/// # let request_arrived = move || request_arrived.recv().unwrap();
/// use backstop::StopReason;
/// use backstop::ureq::{Abort, Client, Retrier, RetryError};
///
/// let abort = Abort::new();
/// let canceller = abort.clone();
/// let cancel = std::thread::spawn(move || {
///     request_arrived(); // the user presses Cancel while the server says nothing
///     canceller.abort();
/// });
/// let client = Client::new(Retrier::default()); // 5 s per attempt, up to 4 attempts
/// let mut request = http::Request::get(url).body(())?;
/// request.extensions_mut().insert(abort.clone());
/// let result = client.run(request);
/// # cancel.join().unwrap();
/// let Err(RetryError::Aborted(outcome)) = result else { panic!("expected an abort") };
/// assert_eq!((outcome.attempts, outcome.reason), (1, StopReason::Aborted));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The tower layer (on tokio or smol) and [`run`](crate::run) take it the same way, and a
/// task cancels as a thread does (`tokio::spawn(async move { canceller.abort() })`). Through
/// reqwest the handle goes in the middleware chain's extensions,
/// `client.get(url).with_extension(abort.clone())`, and `backstop::reqwest::retry_error(&e)`
/// finds `RetryError::Aborted` in the error.
#[derive(Clone, Default)]
pub struct Abort(Arc<Inner>);

#[derive(Default)]
struct Inner {
    aborted: AtomicBool,
    event: Event,
    next_hook: AtomicU64,
    hooks: Mutex<Vec<(u64, Hook)>>,
}

impl core::fmt::Debug for Abort {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Abort")
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

impl Abort {
    /// A handle that has not fired.
    #[must_use]
    pub fn new() -> Self {
        Abort::default()
    }

    /// Aborts the operation. Idempotent; later calls do nothing.
    pub fn abort(&self) {
        if self.0.aborted.swap(true, Ordering::SeqCst) {
            return;
        }
        self.0.event.notify(usize::MAX);
        let hooks = core::mem::take(&mut *self.lock_hooks());
        for (_, hook) in hooks {
            hook();
        }
    }

    /// Whether [`abort`](Self::abort) was called.
    #[must_use]
    pub fn is_aborted(&self) -> bool {
        self.0.aborted.load(Ordering::SeqCst)
    }

    /// Resolves once the handle fires (at once if it already has).
    pub async fn aborted(&self) {
        loop {
            if self.is_aborted() {
                return;
            }
            let listener = self.0.event.listen();
            if self.is_aborted() {
                return;
            }
            listener.await;
        }
    }

    /// A listener for the handle's firing, for a future that polls it itself: check
    /// [`is_aborted`](Self::is_aborted) after making it (a firing before it was made is not
    /// heard).
    pub(crate) fn listen(&self) -> event_listener::EventListener {
        self.0.event.listen()
    }

    /// Blocks the thread until the handle fires or `deadline` passes. Returns whether it
    /// fired. For blocking runtimes.
    pub fn wait_until(&self, deadline: std::time::Instant) -> bool {
        loop {
            if self.is_aborted() {
                return true;
            }
            let listener = self.0.event.listen();
            if self.is_aborted() {
                return true;
            }
            if listener.wait_deadline(deadline).is_none() {
                return self.is_aborted();
            }
        }
    }

    /// Blocks the thread for at most `timeout`; see [`wait_until`](Self::wait_until).
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_until(deadline),
            None => loop {
                // A timeout too long to represent: wait for the abort itself, a day at a time.
                if self.wait_until(std::time::Instant::now() + Duration::from_secs(86_400)) {
                    return true;
                }
            },
        }
    }

    /// Runs `hook` once when the handle fires (at once, on this thread, if it already has),
    /// unless the returned guard is dropped first. A blocking client uses it to shut down the
    /// socket of the attempt in flight.
    pub fn on_abort(&self, hook: impl FnOnce() + Send + 'static) -> HookGuard {
        let id = self.0.next_hook.fetch_add(1, Ordering::Relaxed);
        {
            let mut hooks = self.lock_hooks();
            if !self.is_aborted() {
                hooks.push((id, Box::new(hook)));
                return HookGuard {
                    abort: self.clone(),
                    id,
                };
            }
        }
        hook();
        HookGuard {
            abort: self.clone(),
            id,
        }
    }

    fn lock_hooks(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Hook)>> {
        // A panicking hook cannot leave the list inconsistent: recover it.
        self.0.hooks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Unregisters an [`Abort::on_abort`] hook when dropped.
#[must_use = "dropping the guard unregisters the hook at once"]
pub struct HookGuard {
    abort: Abort,
    id: u64,
}

impl core::fmt::Debug for HookGuard {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HookGuard").field("id", &self.id).finish()
    }
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        self.abort.lock_hooks().retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn hook_runs_once_on_abort_and_not_after_its_guard_is_dropped() {
        let abort = Abort::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let _kept = abort.on_abort(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        let r = ran.clone();
        drop(abort.on_abort(move || {
            r.fetch_add(10, Ordering::SeqCst);
        }));
        abort.abort();
        abort.abort();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn blocking_wait_returns_when_aborted_from_another_thread() {
        let abort = Abort::new();
        let other = abort.clone();
        let t = std::thread::spawn(move || other.wait_timeout(Duration::from_secs(30)));
        abort.abort();
        assert!(t.join().expect("waiter thread"));
    }

    #[test]
    fn blocking_wait_times_out_without_abort() {
        assert!(!Abort::new().wait_timeout(Duration::from_millis(1)));
    }
}
