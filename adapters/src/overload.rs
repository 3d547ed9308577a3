//! Overload control past one operation: the retrier's gates, one per origin, and its
//! send-rate limiter, handed to every operation's machine.
//!
//! Rule: a server's pushback pauses every operation of the client to that origin (scheme,
//! host, port), and a throttling server slows the client's whole send rate.
//!
//! A `Retry-After` on a 429 or 503 says how long the *service* is unavailable, not one request.
//! With [`Retrier::origin_gates`](crate::Retrier::origin_gates) the retrier keeps an [`OriginGate`]
//! per origin ([`OriginGates`]): such an answer closes it, every new operation to that origin waits
//! for the reopening (or gives up with `origin_paused` when that is past its deadline, or at once
//! under [`fail_fast_when_paused`](crate::PolicyBuilder::fail_fast_when_paused)), retries already
//! pending are floored at it, and the reopening is half-open: one probe goes first. With
//! [`Retrier::rate_limiter`](crate::Retrier::rate_limiter) an [`AdaptiveRateLimiter`] (AWS's
//! adaptive retry mode: a CUBIC token bucket, off until the first throttle) paces every attempt of
//! every operation. Both are consulted by the machine before each attempt, through every front
//! door, and before each copy of a hedged operation: a backup is not sent to a paused origin, and
//! goes out at the later of its hedging delay and the reopening. The events say when a gate closes
//! or reopens ([`EventKind::GateClosed`], [`EventKind::GateReopened`]), when the limiter turns on
//! ([`EventKind::RateLimiterEnabled`]), and why an operation waited
//! ([`DelaySource::OriginPaused`](crate::observe::DelaySource::OriginPaused),
//! [`DelaySource::RateLimited`](crate::observe::DelaySource::RateLimited)).
//!
//! ```
//! # #[cfg(feature = "ureq")] {
//! use backstop::{AdaptiveRateLimiter, GateConfig, OriginGates, Retrier};
//! use std::sync::Arc;
//!
//! let retrier = Retrier::default()
//!     .origin_gates(Arc::new(OriginGates::new(GateConfig::new())?))
//!     .rate_limiter(Arc::new(AdaptiveRateLimiter::new()));
//! // Every operation of this client (and of its clones) shares the gates and the limiter.
//! let client = backstop::ureq::Client::new(retrier);
//! # drop(client);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The machine consults both before every attempt through its traits
//! ([`Gate`], [`RateLimiter`]). The map of
//! gates is bounded: past its capacity, a gate that holds nothing back makes room for a new
//! origin's. Holding nothing back means that the gate's pause and reopening are over (open,
//! or closed so long ago that nobody has asked since: [`OriginGate::holds_nothing_back`]) *and*
//! that no operation holds it: an operation in flight reports its answer to the gate it took,
//! and a `Retry-After` on that answer must pause the origin's next operation, not an evicted
//! gate. A gate that stayed half-open once its pause ended must go too, or a map filled with
//! origins each paused once would keep every later origin's pushback from pausing anything.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use crate::last_origin::{self, without_userinfo};
use crate::observe::events::EventKind;
use crate::observe::{Emitter, Subject};

use backstop_core::{Ask, Gate, GateAdmission, GateSignal, Instant, RateLimiter};

#[doc(inline)]
pub use backstop_core::{
    AdaptiveRateLimiter, FailureRatio, GateConfig, GateConfigError, GateState, OriginGate,
    Reopening,
};

/// One gate per origin, made on first use with one [`GateConfig`], in a bounded map: the
/// origin gates of a [`Retrier`](crate::Retrier) ([`Retrier::origin_gates`](crate::Retrier::origin_gates)).
/// Past its capacity ([`with_capacity`](Self::with_capacity), 1,024 by default) a new origin's
/// gate takes the place of one that holds nothing back and that no operation holds.
///
/// Each gate starts its sequence of reopening offsets at a seed of its own, drawn from the
/// operating system's generator when it is made, unless the config fixes one
/// ([`GateConfig::seed`], for reproducible runs): processes told by a server to come back at
/// the same instant (a `Retry-After` date, a quota's reset) then send their first callers back
/// spread over the reopening, not together.
///
/// ```
/// use backstop::{GateConfig, OriginGates, Retrier};
/// use std::sync::Arc;
///
/// let gates = Arc::new(OriginGates::new(GateConfig::new())?);
/// let retrier = Retrier::default().origin_gates(gates.clone());
/// // A gate is made when the first operation to its origin starts.
/// assert!(gates.get(&"https://api.example.com/v1/items".parse()?).is_none());
/// # drop(retrier);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OriginGates {
    config: GateConfig,
    capacity: usize,
    gates: Mutex<HashMap<Origin, Arc<OriginGate>>>,
    /// Which map this is, for the threads' caches of their last lookup.
    id: u64,
}

/// An origin: scheme, host (lowercase), port (the scheme's default when the URI has none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// The origin of a URI's parts; `None` without a host.
    pub(crate) fn new(scheme: Option<&str>, host: Option<&str>, port: Option<u16>) -> Option<Self> {
        let scheme = scheme.unwrap_or("http").to_ascii_lowercase();
        let host = host?.to_ascii_lowercase();
        // Every front door gives the port only as written (reqwest's URL included), so that
        // one origin gets one gate whichever door it comes through.
        let port = port.unwrap_or(match scheme.as_str() {
            "https" | "wss" => 443,
            _ => 80,
        });
        Some(Origin { scheme, host, port })
    }

    pub(crate) fn of(uri: &http::Uri) -> Option<Self> {
        Origin::new(uri.scheme_str(), uri.host(), uri.port_u16())
    }
}

/// What a request's plan knows of its origin's gate, when the retrier has gates: the gate
/// itself (this thread looked its origin up last, and the gate is still kept), or the origin
/// to look up under the map's lock when the operation starts.
#[derive(Debug)]
pub(crate) enum OriginOf {
    Gate(Arc<OriginGate>),
    Origin(Box<Lookup>),
}

/// An origin to look up in the map, and the request's scheme and host and port as written
/// (the key of the thread's cache once the gate is found).
#[derive(Clone)]
pub(crate) struct Lookup {
    origin: Origin,
    scheme: String,
    authority: String,
}

/// Not the authority: it may hold a userinfo.
impl core::fmt::Debug for Lookup {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lookup")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// A thread's last lookup ([`last_origin`]): the map's id and the origin's gate (weak: the
    /// cache keeps no gate from eviction, and an evicted gate is dead, see
    /// [`OriginGates::gate`]). Another spelling of the same origin only misses the cache: the
    /// map finds the same gate.
    static LAST_LOOKUP: last_origin::Slot<(u64, Weak<OriginGate>)> = const { RefCell::new(None) };
}

/// The ids of the maps (never reused, so a cache never answers for another map).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The default capacity of an [`OriginGates`] map.
const DEFAULT_CAPACITY: usize = 1024;

impl OriginGates {
    /// Gates made with `config` (checked here, once), for at most 1,024 origins at a time.
    ///
    /// # Errors
    ///
    /// `config`'s error ([`OriginGate::new`]).
    pub fn new(config: GateConfig) -> Result<Self, GateConfigError> {
        OriginGate::new(config)?;
        Ok(OriginGates {
            config,
            capacity: DEFAULT_CAPACITY,
            gates: Mutex::new(HashMap::new()),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// At most `n` origins at a time (at least 1). Past it, a gate that holds nothing back
    /// gives its place to the new origin's: one whose pause and reopening are over (open, or
    /// half-open or reopening with nothing left to hold back:
    /// [`OriginGate::holds_nothing_back`]) and that no operation holds (an operation holds its
    /// origin's gate from its start to its end, and reports every attempt's answer to it).
    /// When every gate is paused, reopening or held, the new origin gets a gate of its own
    /// that is not kept (its operations are not paused together).
    #[must_use]
    pub fn with_capacity(mut self, n: usize) -> Self {
        self.capacity = n.max(1);
        self
    }

    /// The gate of `uri`'s origin (scheme, host, port: the path does not matter), if an
    /// operation to it made one and it is still kept: to read its state, for a graph or a
    /// test. While the returned `Arc` is held the gate is not evicted.
    #[must_use]
    pub fn get(&self, uri: &http::Uri) -> Option<Arc<OriginGate>> {
        let origin = Origin::of(uri)?;
        let gates = self.gates.lock().unwrap_or_else(PoisonError::into_inner);
        gates.get(&origin).cloned()
    }

    /// The gate of a request's origin, by its `scheme` and `authority` as written, when this
    /// thread's last lookup in this map had the same (compared byte for byte: no parsing, no
    /// lock, no allocation, the common case of a client that talks to one origin) and its
    /// gate is still kept; else the origin, made from `host` and `port` (called only then),
    /// for [`gate`](Self::gate) when the operation starts. `None` without a host.
    pub(crate) fn find<'h>(
        &self,
        scheme: Option<&str>,
        authority: Option<&str>,
        host_port: impl FnOnce() -> (Option<&'h str>, Option<u16>),
    ) -> Option<OriginOf> {
        let authority = authority?;
        let scheme = scheme.unwrap_or_default();
        // A thread whose locals are being torn down has no cache: the map answers.
        let cached = last_origin::find(&LAST_LOOKUP, scheme, authority, |(gates, gate)| {
            (*gates == self.id).then(|| gate.upgrade()).flatten()
        });
        if let Some(gate) = cached {
            return Some(OriginOf::Gate(gate));
        }
        // The host and port as written: the userinfo names no origin, and is not kept.
        let authority = without_userinfo(authority);
        let (host, port) = host_port();
        let origin = Origin::new(Some(scheme).filter(|s| !s.is_empty()), host, port)?;
        Some(OriginOf::Origin(Box::new(Lookup {
            origin,
            scheme: scheme.to_owned(),
            authority: authority.to_owned(),
        })))
    }

    /// [`find`](Self::find) for an `http::Uri`.
    pub(crate) fn find_uri(&self, uri: &http::Uri) -> Option<OriginOf> {
        let authority = uri.authority().map(http::uri::Authority::as_str);
        self.find(uri.scheme_str(), authority, || (uri.host(), uri.port_u16()))
    }

    /// The gate of the origin `lookup` names, made at `now` if there is none; remembered as
    /// this thread's last lookup when the map keeps it.
    pub(crate) fn gate(&self, lookup: Lookup, now: Instant) -> Arc<OriginGate> {
        let (gate, kept) = self.gate_in_map(&lookup.origin, now);
        if kept {
            let value = (self.id, Arc::downgrade(&gate));
            last_origin::remember(&LAST_LOOKUP, lookup.scheme, lookup.authority, value);
        }
        gate
    }

    /// The gate of `origin`, made at `now` if there is none, and whether the map keeps it.
    fn gate_in_map(&self, origin: &Origin, now: Instant) -> (Arc<OriginGate>, bool) {
        let mut gates = self.gates.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(gate) = gates.get(origin) {
            return (gate.clone(), true);
        }
        let config = match self.config.fixed_seed() {
            Some(_) => self.config,
            None => self.config.seed(gate_seed()),
        };
        // Checked in `new` (a seed changes no check): the config makes a gate.
        let Ok(gate) = OriginGate::new(config) else {
            unreachable!("the gates' config was checked when they were made")
        };
        let gate = Arc::new(gate);
        if gates.len() >= self.capacity {
            let Some(o) = gates
                .iter()
                .find(|(_, g)| evictable(g, now))
                .map(|(o, _)| o.clone())
            else {
                return (gate, false);
            };
            // A thread's cache may take the gate between the test and the removal (its weak
            // reference upgrades without the lock): the gate goes only if the map's reference
            // is the last one, atomically, after which no cache can bring it back. Else it
            // stays, held, and the new origin's gate is not kept.
            if let Some(evicted) = gates.remove(&o) {
                if let Err(held) = Arc::try_unwrap(evicted) {
                    gates.insert(o, held);
                    return (gate, false);
                }
            }
        }
        gates.insert(origin.clone(), gate.clone());
        (gate, true)
    }
}

/// A new gate's seed: the operating system's randomness, or (should it fail) the retrier's
/// per-process jitter generator, as random across processes and never secret anyway.
fn gate_seed() -> u64 {
    getrandom::u64().unwrap_or_else(|_| crate::random::random_u64())
}

/// Whether the map may evict `gate` at `now`: it holds nothing back
/// ([`OriginGate::holds_nothing_back`]: open, or its pause and reopening are over), and only
/// the map holds it. Read under the map's lock; a holder that lets go meanwhile only keeps the
/// gate one eviction longer. A thread's cache may still take the gate (its `Weak` upgrades
/// without the lock): the eviction itself is decided by `Arc::try_unwrap`, atomically (see
/// [`OriginGates::gate`]).
fn evictable(gate: &Arc<OriginGate>, now: Instant) -> bool {
    Arc::strong_count(gate) == 1 && gate.holds_nothing_back(now)
}

/// An operation's gate: its origin's, or none.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedGate(pub(crate) Option<Arc<OriginGate>>);

impl SharedGate {
    /// The gate of an operation to `origin` started at `now`: its origin's among `gates`
    /// (the retrier's, made when the origin's first operation starts), or none.
    pub(crate) fn of(gates: Option<&OriginGates>, origin: Option<OriginOf>, now: Instant) -> Self {
        SharedGate(match (origin, gates) {
            (Some(OriginOf::Gate(gate)), Some(_)) => Some(gate),
            (Some(OriginOf::Origin(origin)), Some(gates)) => Some(gates.gate(*origin, now)),
            _ => None,
        })
    }
}

/// How an attempt (or a hedged copy) ended, once the machine has heard of it.
pub(crate) struct AttemptEnd {
    pub(crate) attempt: u32,
    pub(crate) outcome: backstop_core::AttemptOutcome,
    pub(crate) sent: backstop_core::Instant,
    pub(crate) ended: backstop_core::Instant,
}

impl AttemptEnd {
    /// Tells the observers: the attempt's `AttemptEnded`, then what its report did to the gate
    /// and the limiter (`marks`, read before the report, with the gate and the limiter to
    /// compare them with) of an operation started at `start`.
    pub(crate) fn announce(
        self,
        emitter: &Emitter<'_, impl Subject>,
        marks: Option<(Marks, (&SharedGate, &SharedLimiter<'_>))>,
        start: backstop_core::Instant,
    ) {
        emitter.emit(EventKind::AttemptEnded {
            attempt: self.attempt,
            result: self.outcome,
            took: self.ended.saturating_duration_since(self.sent),
            elapsed: self.ended.saturating_duration_since(start),
        });
        if let Some((marks, (gate, limiter))) = marks {
            marks.emit_changes(gate, limiter, emitter, self.attempt, self.ended, start);
        }
    }
}

/// What an operation's gate and limiter stood at before an answer was reported to them
/// (the gate's closings and reopenings, whether the limiter is on): compared after, it says
/// what the answer did, for the events. Shared by the retry and the hedged loops.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Marks {
    closes: u64,
    reopens: u64,
    enabled: bool,
}

impl Marks {
    /// The marks now; `None` without a gate or a limiter (nothing to compare), or when no one
    /// hears the events they would make (`emitter`).
    #[inline]
    pub(crate) fn of(
        gate: &SharedGate,
        limiter: &SharedLimiter<'_>,
        emitter: &Emitter<'_, impl Subject>,
    ) -> Option<Self> {
        let gate = gate.0.as_deref();
        if (gate.is_none() && limiter.0.is_none()) || !emitter.heard() {
            return None;
        }
        Some(Marks {
            closes: gate.map_or(0, OriginGate::closes),
            reopens: gate.map_or(0, OriginGate::reopens),
            enabled: limiter.0.is_some_and(AdaptiveRateLimiter::is_enabled),
        })
    }

    /// Emits what attempt (or copy) `attempt`'s answer, reported at `ended`, did to the gate
    /// and the limiter: [`EventKind::GateClosed`], [`EventKind::GateReopened`],
    /// [`EventKind::RateLimiterEnabled`] (`elapsed` counted from `start`).
    #[cold]
    pub(crate) fn emit_changes(
        self,
        gate: &SharedGate,
        limiter: &SharedLimiter<'_>,
        emitter: &Emitter<'_, impl Subject>,
        attempt: u32,
        ended: Instant,
        start: Instant,
    ) {
        let elapsed = ended.saturating_duration_since(start);
        if let Some(gate) = gate.0.as_deref() {
            if gate.closes() > self.closes {
                let reopens_in = match gate.state(ended) {
                    GateState::Closed { until, .. } => until.saturating_duration_since(ended),
                    _ => Duration::ZERO,
                };
                emitter.emit(EventKind::GateClosed {
                    attempt,
                    reopens_in,
                    elapsed,
                });
            }
            if gate.reopens() > self.reopens {
                emitter.emit(EventKind::GateReopened { attempt, elapsed });
            }
        }
        if !self.enabled && limiter.0.is_some_and(AdaptiveRateLimiter::is_enabled) {
            emitter.emit(EventKind::RateLimiterEnabled { attempt, elapsed });
        }
    }
}

impl Gate for SharedGate {
    #[inline]
    fn engaged(&self) -> bool {
        self.0.is_some()
    }

    fn admit(&self, now: Instant, ask: Ask) -> GateAdmission {
        match &self.0 {
            Some(gate) => gate.admit(now, ask),
            None => GateAdmission::Open,
        }
    }

    fn on_attempt_end(&self, now: Instant, signal: GateSignal) {
        if let Some(gate) = &self.0 {
            gate.on_attempt_end(now, signal);
        }
    }

    fn probe_not_sent(&self, now: Instant) {
        if let Some(gate) = &self.0 {
            gate.probe_not_sent(now);
        }
    }
}

/// The retrier's send-rate limiter, or none.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SharedLimiter<'a>(pub(crate) Option<&'a AdaptiveRateLimiter>);

impl RateLimiter for SharedLimiter<'_> {
    #[inline]
    fn engaged(&self) -> bool {
        self.0.is_some()
    }

    fn acquire(&self, now: Instant) -> Result<(), Instant> {
        match self.0 {
            Some(limiter) => limiter.acquire(now),
            None => Ok(()),
        }
    }

    fn on_response(&self, now: Instant, throttled: bool) {
        if let Some(limiter) = self.0 {
            limiter.on_response(now, throttled);
        }
    }
}

/// The retrier's send-rate limiter, or none, shared with a body that outlives the call.
#[cfg(any(feature = "reqwest", feature = "tower", feature = "ureq"))]
#[derive(Clone, Debug, Default)]
pub(crate) struct OwnedLimiter(pub(crate) Option<Arc<AdaptiveRateLimiter>>);

#[cfg(any(feature = "reqwest", feature = "tower", feature = "ureq"))]
impl RateLimiter for OwnedLimiter {
    #[inline]
    fn engaged(&self) -> bool {
        self.0.is_some()
    }

    fn acquire(&self, now: Instant) -> Result<(), Instant> {
        SharedLimiter(self.0.as_deref()).acquire(now)
    }

    fn on_response(&self, now: Instant, throttled: bool) {
        SharedLimiter(self.0.as_deref()).on_response(now, throttled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backstop_core::{GateAdmission, GateSignal};

    /// The lookup of `http://{host}/`.
    fn origin(host: &str) -> Lookup {
        let uri: http::Uri = format!("http://{host}/").parse().expect("a URI");
        let gates = OriginGates::new(GateConfig::new()).expect("the defaults are valid");
        match gates.find_uri(&uri) {
            Some(OriginOf::Origin(lookup)) => *lookup,
            _ => panic!("a new map has no gate"),
        }
    }

    /// An operation holds its origin's gate from start to end: a full map keeps that gate
    /// (the new origin's is not kept), and evicts it once no operation holds it.
    #[test]
    fn a_full_map_evicts_only_a_gate_no_operation_holds() {
        let now = Instant::from_secs(1);
        let gates = OriginGates::new(GateConfig::new())
            .expect("the defaults are valid")
            .with_capacity(1);
        let uri = |host: &str| format!("http://{host}/").parse().expect("a URI");

        let held = gates.gate(origin("a"), now);
        drop(gates.gate(origin("b"), now));
        assert!(gates.get(&uri("a")).is_some_and(|a| Arc::ptr_eq(&a, &held)));
        assert!(gates.get(&uri("b")).is_none());

        drop(held);
        drop(gates.gate(origin("b"), now));
        assert!(gates.get(&uri("a")).is_none());
        assert!(gates.get(&uri("b")).is_some());
    }

    /// The thread's cache of its last lookup answers without the map's lock, for that map
    /// only, and never with a gate the map evicted; a gate it handed out is held like one
    /// the map handed out.
    #[test]
    fn the_last_lookup_is_found_without_the_map_and_never_outlives_its_eviction() {
        let now = Instant::from_secs(1);
        let new_gates = || {
            OriginGates::new(GateConfig::new())
                .expect("the defaults are valid")
                .with_capacity(1)
        };
        let (gates, other) = (new_gates(), new_gates());
        let find = |gates: &OriginGates, uri: &str| {
            let uri: http::Uri = uri.parse().expect("a URI");
            match gates.find_uri(&uri) {
                Some(OriginOf::Gate(gate)) => Some(gate),
                _ => None,
            }
        };

        let made = gates.gate(origin("a"), now);
        // The same scheme and authority as written: cached.
        let cached = find(&gates, "http://a/other?x=1").expect("cached");
        assert!(Arc::ptr_eq(&cached, &made));
        // A userinfo names no origin (and the cache keeps none).
        let with_userinfo = find(&gates, "http://user:pw@a/").expect("cached");
        assert!(Arc::ptr_eq(&with_userinfo, &made));
        drop(with_userinfo);
        // Another spelling of the same origin misses the cache, and the map has the same gate.
        assert!(find(&gates, "http://A:80/").is_none());
        let respelled = origin("A:80");
        assert!(Arc::ptr_eq(&gates.gate(respelled, now), &made));
        assert!(find(&gates, "https://a/").is_none());
        assert!(find(&gates, "http://a:8080/").is_none());
        assert!(find(&other, "http://a/").is_none());
        assert!(gates.find(Some("http"), None, || (None, None)).is_none());

        // Held through the cache: a full map keeps it.
        drop(made);
        drop(gates.gate(origin("a"), now));
        drop(gates.gate(origin("b"), now));
        assert!(gates.get(&"http://a/".parse().expect("a URI")).is_some());

        // Held by nobody: evicted (by another thread: this one's cache still names `a`), and
        // the cache no longer finds it.
        drop(cached);
        std::thread::scope(|s| {
            s.spawn(|| drop(gates.gate(origin("b"), now)));
        });
        assert!(gates.get(&"http://a/".parse().expect("a URI")).is_none());
        assert!(find(&gates, "http://a/").is_none());
    }

    /// Two origins each paused once by a `429 Retry-After: 60` fill a map of two; an hour
    /// later their pauses are long over and nobody holds their gates: a third origin's gate
    /// takes the place of one, and its own `Retry-After: 60` pauses its next operation.
    #[test]
    fn a_full_map_evicts_a_gate_whose_pause_ended_long_ago() {
        let retry_after_60 = |at: Instant| GateSignal {
            started: at,
            back_off: Some(Duration::from_secs(60)),
            failed: true,
            probe: false,
        };
        let gates = OriginGates::new(GateConfig::new())
            .expect("the defaults are valid")
            .with_capacity(2);
        let t0 = Instant::from_secs(1);
        for host in ["a", "b"] {
            gates
                .gate(origin(host), t0)
                .on_attempt_end(t0, retry_after_60(t0));
        }

        let hour_later = t0.saturating_add(Duration::from_secs(3_600));
        let c = gates.gate(origin("c"), hour_later);
        let kept = gates.get(&"http://c/".parse().expect("a URI"));
        assert!(kept.is_some_and(|kept| Arc::ptr_eq(&kept, &c)));
        c.on_attempt_end(hour_later, retry_after_60(hour_later));
        drop(c);

        let next = gates.gate(origin("c"), hour_later);
        let ask = Ask::new(Duration::from_secs(10));
        assert!(
            matches!(next.admit(hour_later, ask), GateAdmission::Closed(_)),
            "{:?}",
            next.state(hour_later)
        );
    }

    /// 1,000 processes, each with its own `OriginGates::new(GateConfig::new())`, told by the
    /// same server to back off until the same instant (a `Retry-After` HTTP-date, a quota's
    /// reset): their first callers return spread over the reopening's spread, not together.
    #[test]
    fn processes_told_the_same_instant_do_not_return_in_step() {
        const PROCESSES: u64 = 1_000;
        const BIN: u64 = 10_000_000; // 10 ms
        let origin = origin("api.example.com");
        let now = Instant::from_secs(100);
        let back_off = Duration::from_secs(30);
        let until = now.saturating_add(back_off);
        let spread = Duration::from_secs(1); // the default, a tenth of 30 s being more
        let mut bins = [0u64; 101];
        for _ in 0..PROCESSES {
            let gates = OriginGates::new(GateConfig::new()).expect("the defaults are valid");
            let gate = gates.gate(origin.clone(), now);
            gate.on_attempt_end(
                now,
                GateSignal {
                    started: now,
                    back_off: Some(back_off),
                    failed: true,
                    probe: false,
                },
            );
            let GateAdmission::Closed(at) = gate.admit(now, Ask::new(Duration::from_secs(10)))
            else {
                panic!("the gate is closed");
            };
            let offset = at.saturating_duration_since(until);
            assert!(offset <= spread, "{offset:?}");
            bins[(offset.as_nanos() as u64 / BIN) as usize] += 1;
        }
        // Uniform over 1 s, a 10 ms bin holds 10 of 1,000 callers on average, and more than 30
        // with a probability below 1e-6: 5 % (50) is a bound with a huge margin.
        let fullest = bins.iter().max().copied().unwrap_or(0);
        assert!(
            fullest * 100 <= PROCESSES * 5,
            "{fullest} of {PROCESSES} first callers in one 10 ms bin: {bins:?}"
        );
    }
}
