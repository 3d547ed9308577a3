//! The retry configuration shared by many operations: policy, observers, wall clock,
//! error-classification override, randomness.

use core::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::overload::{AdaptiveRateLimiter, OriginGates};
use crate::request::Plan;
use backstop_core::{
    AttemptOutcome, Budget, ErrorClass, ErrorKind, Instant, LatencyTracker, Policy, ResponseClass,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

use crate::body::ReadBody;
use crate::drain::DrainLimits;
use crate::observe::events::RetryEvent;
use crate::observe::metrics::Metrics;
use crate::observe::Observer;
use crate::response_view::{ClassifyResponse, ResponseView};
use crate::wall_clock::{SystemClock, WallClock};

/// The caller's error classification: given the adapter's [`ErrorKind`] and the client's
/// error, `Some(class)` overrides the default class, `None` keeps it.
pub type ClassifyOverride =
    Arc<dyn Fn(ErrorKind, &(dyn std::error::Error + 'static)) -> Option<ErrorClass> + Send + Sync>;

/// Everything that is the same for many operations. Cheap to clone (shared parts are `Arc`s).
///
/// ```
/// use backstop::{Metrics, Retrier};
///
/// let metrics = Metrics::new();
/// let retrier = Retrier::new(backstop::Policy::default())
///     .metrics(&metrics)
///     .on_event(|event| println!("{event}"))
///     .seed(7); // reproducible jitter
/// assert_eq!(retrier.policy().max_attempts(), 4);
/// ```
#[derive(Clone)]
pub struct Retrier {
    policy: Policy,
    pub(crate) observers: Vec<Observer>,
    pub(crate) metrics: Option<Metrics>,
    pub(crate) wall_clock: Arc<dyn WallClock>,
    pub(crate) classify: Option<ClassifyOverride>,
    pub(crate) classify_response: Option<ClassifyResponse>,
    pub(crate) budget: SharedBudget,
    pub(crate) drain: DrainLimits,
    /// Whether each response's body is read inside its attempt (a request's own wins).
    pub(crate) read_body: ReadBody,
    /// The latencies an adaptive hedging delay reads, shared by the retrier's clones.
    pub(crate) latencies: Arc<LatencyTracker>,
    /// The gates that pause an origin's operations together, if any.
    pub(crate) gates: Option<Arc<OriginGates>>,
    /// The send-rate limiter, if any.
    pub(crate) limiter: Option<Arc<AdaptiveRateLimiter>>,
    seed: Option<u64>,
    operations: Arc<AtomicU64>,
}

impl fmt::Debug for Retrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retrier")
            .field("policy", &self.policy)
            .field("observers", &self.observers.len())
            .field("metrics", &self.metrics.is_some())
            .field("classify_response", &self.classify_response.is_some())
            .field("budget", &self.budget.0.is_some())
            .field("drain", &self.drain)
            .field("read_body", &self.read_body)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl Default for Retrier {
    fn default() -> Self {
        Retrier::new(Policy::default())
    }
}

impl Retrier {
    /// Operations under `policy`, with the system wall clock, no observers, and random seeds.
    #[must_use]
    pub fn new(policy: Policy) -> Self {
        #[cfg(feature = "metrics")]
        crate::observe::otel_metrics::describe();
        Retrier {
            policy,
            observers: Vec::new(),
            metrics: None,
            wall_clock: Arc::new(SystemClock),
            classify: None,
            classify_response: None,
            budget: SharedBudget(None),
            drain: DrainLimits::DEFAULT,
            read_body: ReadBody::OFF,
            latencies: Arc::new(LatencyTracker::new(LATENCY_WINDOW)),
            gates: None,
            limiter: None,
            seed: None,
            operations: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The policy.
    #[must_use]
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The same retrier (observers, metrics, budget, wall clock, classification, seed
    /// sequence) under another policy: for one request that must be sent at most once, say.
    ///
    /// ```
    /// use backstop::Retrier;
    ///
    /// let once = backstop::Policy::builder().max_attempts(1).build()?;
    /// let retrier = Retrier::default().on_event(|e| println!("{e}"));
    /// assert_eq!(retrier.with_policy(once).policy().max_attempts(), 1);
    /// # Ok::<(), backstop::ConfigError>(())
    /// ```
    #[must_use]
    pub fn with_policy(&self, policy: Policy) -> Self {
        Retrier {
            policy,
            ..self.clone()
        }
    }

    /// Calls `observer` with every event. Several observers may be added.
    #[must_use]
    pub fn on_event(mut self, observer: impl Fn(&RetryEvent<'_>) + Send + Sync + 'static) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Counts every operation into `metrics` (a shared handle).
    #[must_use]
    pub fn metrics(mut self, metrics: &Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The wall clock used for an HTTP-date `Retry-After` when the response has no `Date`.
    #[must_use]
    pub fn wall_clock(mut self, clock: impl WallClock + 'static) -> Self {
        self.wall_clock = Arc::new(clock);
        self
    }

    /// Overrides the classification of attempt errors.
    ///
    /// ```
    /// use backstop::classify::ErrorClass;
    /// use backstop::ErrorKind;
    /// use backstop::Retrier;
    ///
    /// // This service never acts on a request whose response was cut off: retry it like
    /// // a request that was never sent.
    /// let retrier = Retrier::default().classify(|kind, _error| {
    ///     (kind == ErrorKind::UnexpectedEof).then_some(ErrorClass::NotSent)
    /// });
    /// # drop(retrier);
    /// ```
    #[must_use]
    pub fn classify(
        mut self,
        f: impl Fn(ErrorKind, &(dyn std::error::Error + 'static)) -> Option<ErrorClass>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.classify = Some(Arc::new(f));
        self
    }

    /// Says which responses are retryable beyond the policy's status set, from the whole
    /// response head and the request it answers: a `200` whose header says "not ready yet",
    /// a `404` that one endpoint answers until a resource exists, a `503` the caller wants
    /// back at once. [`ResponseClass::ByStatus`] leaves a response to the status set. Every
    /// other rule still holds for a retryable response: the methods and keys, the attempts,
    /// the deadline, the budget, `Retry-After`. To add or remove a status for every request,
    /// use the policy's `add_retryable_status` and `remove_retryable_status` instead.
    ///
    /// ```
    /// use backstop::classify::ResponseClass;
    /// use backstop::Retrier;
    ///
    /// let retrier = Retrier::default().classify_response(|r| {
    ///     let not_ready = r.headers.contains_key("x-not-ready"); // a 200 that says "try again"
    ///     let pending = r.status == 404 && r.uri.path().starts_with("/jobs/"); // not there yet
    ///     if not_ready || pending {
    ///         ResponseClass::Retryable
    ///     } else {
    ///         ResponseClass::ByStatus
    ///     }
    /// });
    /// # drop(retrier);
    /// ```
    #[must_use]
    pub fn classify_response(
        mut self,
        f: impl Fn(&ResponseView<'_>) -> ResponseClass + Send + Sync + 'static,
    ) -> Self {
        self.classify_response = Some(Arc::new(f));
        self
    }

    /// Consults `budget` before every retry of every operation of this retrier (and of its
    /// clones): a retry budget shared across operations, so that a fleet of clients cannot
    /// multiply an outage (see `backstop::TokenBucket`, `RetryQuota`, `RatioBudget`). The
    /// budget sees each runtime's clock; the adapters' runtimes share one process-wide epoch.
    ///
    /// A `Retrier` and every clone of it (and so every clone of a client, layer or
    /// middleware) draw on one budget: in an outage the retries of the whole process stop
    /// together, not one operation at a time. Four threads call a server that answers every
    /// request with 503 and `Retry-After: 0`:
    ///
    /// ```
    /// # #[cfg(feature = "ureq")] {
    /// # use std::io::{Read, Write};
    /// # use std::sync::atomic::{AtomicUsize, Ordering};
    /// # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// # let url = format!("http://{}/data", listener.local_addr()?);
    /// # let requests = Arc::new(AtomicUsize::new(0));
    /// # let seen = requests.clone();
    /// # std::thread::spawn(move || {
    /// #     for stream in listener.incoming() {
    /// #         let mut stream = stream.unwrap();
    /// #         let _ = stream.read(&mut [0; 4096]);
    /// #         seen.fetch_add(1, Ordering::SeqCst);
    /// #         let busy = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    /// #         let _ = stream.write_all(busy.as_bytes());
    /// #     }
    /// # });
    /// use std::sync::Arc;
    /// use backstop::{RetryQuota, StopReason};
    /// use backstop::ureq::{Client, Retrier};
    ///
    /// // Room for two retries in all: each costs 5, and a 503 refunds nothing.
    /// let quota = Arc::new(RetryQuota::new().with_capacity(10));
    /// let client = Client::new(Retrier::default().budget(quota.clone()));
    /// let request = http::Request::get(url).body(())?;
    ///
    /// let outcomes = std::thread::scope(|s| {
    ///     let threads: Vec<_> = (0..4)
    ///         .map(|_| s.spawn(|| client.run(request.clone()).map(|done| done.outcome)))
    ///         .collect();
    ///     threads.into_iter().map(|t| t.join().unwrap()).collect::<Result<Vec<_>, _>>()
    /// })?;
    /// // Up to 4 attempts each would be 16 requests; the budget allowed 4 first attempts and 2 retries.
    /// assert!(outcomes.iter().all(|o| o.reason == StopReason::Budget));
    /// assert_eq!(outcomes.iter().map(|o| o.attempts).sum::<u32>(), 6);
    /// assert_eq!(quota.available(), 0);
    /// # assert_eq!(requests.load(Ordering::SeqCst), 6);
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The count is the same whichever thread runs first: `RetryQuota` spends atomically and
    /// only a success refunds it. `TokenBucket` and `RatioBudget` go in the same place. On
    /// tokio, clone the layered service into each `tokio::spawn`: the clones share the
    /// retrier, and with it the budget.
    #[must_use]
    pub fn budget(mut self, budget: Arc<dyn Budget + Send + Sync>) -> Self {
        self.budget = SharedBudget(Some(budget));
        self
    }

    /// How much of a discarded response's body is read so that the client can reuse its
    /// connection for the next attempt (default [`DrainLimits::DEFAULT`]: 64 KiB within
    /// 250 ms; [`DrainLimits::OFF`] never reads and always closes). Applies to the adapters'
    /// ready-made clients and to every [`Transport::drain`](crate::Transport::drain).
    #[must_use]
    pub fn drain(mut self, limits: DrainLimits) -> Self {
        self.drain = limits;
        self
    }

    /// Reads every response's body into memory inside its attempt, at most `read` bytes of
    /// it (default [`ReadBody::OFF`]): a body that breaks off is the attempt's failure,
    /// retried under the same rules, budget and deadline as the head (see
    /// [`body`](crate::body)). A request's own [`ReadBody`], in its extensions, wins.
    /// The reqwest and ureq front doors read it themselves; under the tower layer,
    /// `backstop::tower::ReadBodyLayer` does.
    #[must_use]
    pub fn read_body(mut self, read: ReadBody) -> Self {
        self.read_body = read;
        self
    }

    /// Whether bodies are read inside the attempt (see [`Retrier::read_body`]).
    #[must_use]
    pub fn read_body_limit(&self) -> ReadBody {
        self.read_body
    }

    /// Records the latencies of hedged operations in `tracker` (default: a tracker of the
    /// retrier's own, over 30 s, shared by its clones), which an adaptive
    /// [`Hedging`](crate::Hedging) delay reads: pass one `Arc` to several retriers to share
    /// it, or a tracker with another window.
    #[must_use]
    pub fn latencies(mut self, tracker: Arc<LatencyTracker>) -> Self {
        self.latencies = tracker;
        self
    }

    /// Pauses every operation to an origin (scheme, host, port) when a server asks one of
    /// them to back off (a `Retry-After` on a 429 or 503, an exhausted rate-limit quota, on a
    /// 403 too as GitHub sends it):
    /// `gates` keeps one [`OriginGate`](crate::overload::OriginGate) per origin, shared by the
    /// retrier's clones (and by other retriers given the same `Arc`). While an origin's gate
    /// is closed a new operation waits for it to reopen, within its deadline, or gives up
    /// with [`StopReason::OriginPaused`](crate::StopReason::OriginPaused) (at once, under
    /// [`fail_fast_when_paused`](crate::PolicyBuilder::fail_fast_when_paused)); retries are
    /// floored at the reopening. A hedged operation's copies are held alike: a backup is not
    /// sent to a paused origin (see the hedging machine,
    /// [`HedgeMachine`](crate::machine::HedgeMachine#overload-control)).
    #[must_use]
    pub fn origin_gates(mut self, gates: Arc<OriginGates>) -> Self {
        self.gates = Some(gates);
        self
    }

    /// Paces every attempt of the retrier's operations (first attempts too) by `limiter`,
    /// AWS's adaptive client rate limiter: off until a server throttles (a 429, a 503 with
    /// `Retry-After`), then a token bucket whose rate follows CUBIC. An attempt without a
    /// token waits for one within its deadline, or gives up with
    /// [`StopReason::RateLimited`](crate::StopReason::RateLimited). Every copy of a hedged
    /// operation takes a token too.
    #[must_use]
    pub fn rate_limiter(mut self, limiter: Arc<AdaptiveRateLimiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// The latencies hedged operations recorded (for a graph, or a test).
    #[must_use]
    pub fn latency_tracker(&self) -> &LatencyTracker {
        &self.latencies
    }

    /// The drain limits (see [`Retrier::drain`]).
    #[must_use]
    pub fn drain_limits(&self) -> DrainLimits {
        self.drain
    }

    /// Whether an operation started now reports its events anywhere: to an observer
    /// ([`on_event`](Self::on_event)), or to a `tracing` subscriber that wants them (feature
    /// `tracing`). Metrics count without them. The request's URL is used for events only, so
    /// a front door whose client holds the URL in another form (reqwest's `Url`) converts it
    /// only when this is `true`.
    ///
    /// ```
    /// use backstop::Retrier;
    ///
    /// assert!(!Retrier::default().reports_events());
    /// assert!(Retrier::default().on_event(|e| println!("{e}")).reports_events());
    /// ```
    #[must_use]
    pub fn reports_events(&self) -> bool {
        crate::observe::reported(&self.observers)
    }

    /// The plan of `request` under this retrier (see [`Plan::from_head`]), with its URI only
    /// when the retrier reads it ([`Self::needs_uri`]; else `/`, which nothing reads), and
    /// its origin when the retrier has origin gates.
    pub(crate) fn plan<B>(&self, request: &http::Request<B>) -> Plan {
        let uri = if self.needs_uri() {
            request.uri().clone()
        } else {
            http::Uri::default()
        };
        let mut plan = Plan::from_head(
            request.method().clone(),
            uri,
            request.headers(),
            request.extensions(),
        );
        if let Some(gates) = &self.gates {
            plan.origin = gates.find_uri(request.uri());
        }
        plan
    }

    /// Whether an operation started now reads its request's URI: for its events, for the
    /// response hook, or for the `metrics` feature's `server.address` and `server.port`. A
    /// front door passes the URI to the loop only then (copying it costs more than the rest
    /// of the request's facts; the reqwest middleware keeps its URL as it is, and converts it
    /// for the response hook only).
    pub(crate) fn needs_uri(&self) -> bool {
        self.reports_events() || self.classify_response.is_some() || cfg!(feature = "metrics")
    }

    /// Seeds the jitter: operation `n` (counting from 0) of this retrier uses seed
    /// `seed + n`, so a run is reproducible.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The random generator for the next operation: seeded now (operation `n` of a seeded
    /// retrier gets `seed + n`), drawn and expanded only when the operation first needs a
    /// random number (a wait's jitter), so an operation that succeeds at once pays for neither.
    pub(crate) fn next_rng(&self) -> LazyRng {
        let seed = self.seed.map(|s| {
            let n = self.operations.fetch_add(1, Ordering::Relaxed);
            s.wrapping_add(n)
        });
        LazyRng::Seed(seed)
    }
}

/// A [`Pcg64Mcg`] made on first use from its seed (a fresh random one when there is none).
/// One or the other, not both: the operation's future holds it.
pub(crate) enum LazyRng {
    Seed(Option<u64>),
    Rng(Pcg64Mcg),
}

impl LazyRng {
    fn rng(&mut self) -> &mut Pcg64Mcg {
        if let LazyRng::Seed(seed) = *self {
            *self = LazyRng::Rng(Pcg64Mcg::seed_from_u64(
                seed.unwrap_or_else(crate::random::random_u64),
            ));
        }
        match self {
            LazyRng::Rng(rng) => rng,
            // Cannot happen: made just above.
            LazyRng::Seed(_) => unreachable!("the generator is made before it is lent"),
        }
    }
}

impl rand_core::TryRng for LazyRng {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        self.rng().try_next_u32()
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        self.rng().try_next_u64()
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Self::Error> {
        self.rng().try_fill_bytes(dest)
    }
}

/// The window of a retrier's own latency tracker (Finagle's default).
const LATENCY_WINDOW: core::time::Duration = core::time::Duration::from_secs(30);

/// The retrier's budget, or none (every retry the policy allows).
#[derive(Clone)]
pub(crate) struct SharedBudget(Option<Arc<dyn Budget + Send + Sync>>);

impl SharedBudget {
    /// Whether no budget was given (every retry allowed).
    #[cfg(feature = "grpc")]
    pub(crate) fn is_unlimited(&self) -> bool {
        self.0.is_none()
    }
}

impl Budget for SharedBudget {
    fn on_operation_start(&self, now: Instant) {
        if let Some(b) = &self.0 {
            b.on_operation_start(now);
        }
    }

    fn try_retry(&self, now: Instant, cause: AttemptOutcome) -> bool {
        match &self.0 {
            Some(b) => b.try_retry(now, cause),
            None => true,
        }
    }

    fn on_retry_cancelled(&self, now: Instant, granted_at: Instant, cause: AttemptOutcome) {
        if let Some(b) = &self.0 {
            b.on_retry_cancelled(now, granted_at, cause);
        }
    }

    fn on_attempt_end(&self, now: Instant, success: bool) {
        if let Some(b) = &self.0 {
            b.on_attempt_end(now, success);
        }
    }
}
