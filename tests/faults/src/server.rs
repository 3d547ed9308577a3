//! A scripted HTTP/1.1 server that binds any address (the namespace's end of the veth pair),
//! one thread per connection.
//!
//! Each request takes the next [`Reply`] of the script (the last one repeats): any status,
//! headers and body; a resumable body answers `Range` with 206 ([`Reply::resumable`]). A
//! reply can wait for the test before its head ([`Reply::hold`]) or in its body
//! ([`Reply::pause_body_at`]), so the test can install a fault at that point, then
//! [`Server::release`] it. Reads and writes time out after [`IO_TIMEOUT`], so a stalled
//! connection ends; dropping the server shuts its connections and joins its threads.

mod conn;
mod reply;

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

pub use reply::Reply;

/// How long a connection's read or write may block before the server gives it up.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a held or paused reply waits for [`Server::release`] before it goes on anyway.
const HOLD_LIMIT: Duration = Duration::from_secs(10);
/// How often the accept loop looks for a connection or a stop.
const ACCEPT_POLL: Duration = Duration::from_millis(5);

/// A request as it arrived: the connection it came on, its method, target and fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The client's end of the connection it came on: its port names that connection to a
    /// fault of that connection alone ([`crate::FaultNet::drop_connection`]).
    pub peer: SocketAddr,
    /// The method.
    pub method: String,
    /// The request target (`/path?query`).
    pub target: String,
    /// The fields, in order, names as sent.
    pub fields: Vec<(String, String)>,
}

impl Recorded {
    /// The first field named `name` (case-insensitive).
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server's threads share, under one lock and one condition variable.
#[derive(Debug, Default)]
struct State {
    script: Vec<Reply>,
    requests: Vec<Recorded>,
    connections: usize,
    body_bytes: u64,
    permits: u64,
    stopped: bool,
    streams: Vec<TcpStream>,
    threads: Vec<JoinHandle<()>>,
}

/// The shared state and the condition variable told of every change.
#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the state and tells every waiter.
    fn update<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.lock());
        self.changed.notify_all();
        out
    }

    /// Waits until `done` holds or `timeout` passes: the state then.
    fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&State) -> bool,
    ) -> MutexGuard<'_, State> {
        let (state, _) = self
            .changed
            .wait_timeout_while(self.lock(), timeout, |state| !done(state))
            .unwrap_or_else(PoisonError::into_inner);
        state
    }

    /// Takes a permit of [`Server::release`], waiting at most [`HOLD_LIMIT`] (or until the
    /// server stops).
    fn take_permit(&self) {
        let mut state = self.wait_until(HOLD_LIMIT, |s| s.permits > 0 || s.stopped);
        state.permits = state.permits.saturating_sub(1);
    }
}

/// A running scripted server (see the module docs).
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts a server on `ip` (a free port) that follows `script` (an empty script answers
    /// 404). Inside a namespace: start it from [`crate::FaultNet::serve`].
    pub fn start_on(ip: IpAddr, script: impl IntoIterator<Item = Reply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind((ip, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        shared.lock().script = script.into_iter().collect();
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name(format!("faults-accept-{addr}"))
            .spawn(move || accept_loop(&listener, &accepting))?;
        Ok(Server {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` followed by `path_and_query`.
    #[must_use]
    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.addr)
    }

    /// Connections accepted so far.
    #[must_use]
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Requests read so far.
    #[must_use]
    pub fn requests(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// The requests read so far, in order.
    #[must_use]
    pub fn recorded(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Waits until `n` requests have been read, at most `timeout`: whether they were.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        self.shared
            .wait_until(timeout, |s| s.requests.len() >= n)
            .requests
            .len()
            >= n
    }

    /// Body bytes written to connections so far (into the kernel's send buffers: the client
    /// has them once the network delivers them), all responses together.
    #[must_use]
    pub fn body_bytes(&self) -> u64 {
        self.shared.lock().body_bytes
    }

    /// Waits until `n` body bytes have been written, at most `timeout`: whether they were.
    /// With [`Reply::pause_body_at`]`(n)` the server then stands at byte `n` until
    /// [`Server::release`].
    pub fn wait_for_body_bytes(&self, n: u64, timeout: Duration) -> bool {
        self.shared
            .wait_until(timeout, |s| s.body_bytes >= n)
            .body_bytes
            >= n
    }

    /// Lets one held or paused reply go on (a permit: given before the reply waits, it is
    /// taken when it does).
    pub fn release(&self) {
        self.shared.update(|s| s.permits += 1);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.update(|s| s.stopped = true);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        // No connection starts now; shutting each wakes its thread, blocked in a read or a
        // write.
        let (streams, threads) = self.shared.update(|s| {
            (
                std::mem::take(&mut s.streams),
                std::mem::take(&mut s.threads),
            )
        });
        for stream in streams {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until the server stops, a thread for each.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.lock().stopped {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = start_connection(stream, shared) {
                    eprintln!("backstop-faults server: a connection failed to start: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL);
            }
            Err(e) => {
                eprintln!("backstop-faults server: accept: {e}");
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
}

/// Counts `stream`, keeps a handle to shut it, and serves it on a thread of its own.
fn start_connection(stream: TcpStream, shared: &Arc<Shared>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let handle = stream.try_clone()?;
    let serving = Arc::clone(shared);
    let thread = std::thread::Builder::new()
        .name("faults-conn".into())
        .spawn(move || conn::serve(stream, &serving))?;
    shared.update(|s| {
        s.connections += 1;
        s.streams.push(handle);
        s.threads.push(thread);
    });
    Ok(())
}
