//! The soak: many operations through every adapter at once (ureq on threads, the tower layer
//! over `backstop::smol::HttpService` on smol, the tower layer over hyper-util on tokio) against
//! a [`FaultyServer`], with one budget shared by all, then the checks.
//!
//! Rule: nothing is lost and nothing is miscounted. Every operation ends with a response or an
//! error and the machine's reason; none outlives its `max_elapsed` by more than a scheduling
//! slack; the requests the server read equal the attempts the operations counted against it
//! (a refused connection sends nothing, so operations sent to a port where nothing listens are
//! counted apart); and descriptors and resident memory come back to where they were once the
//! clients are gone.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backstop::classify::AttemptOutcome;
use backstop::{Backoff, ErrorKind, Policy, RatioBudget};
use backstop::{EventKind, Retrier, RetryError};
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::clients::{self, TowerSmol, TowerTokio};
use crate::faulty_server::{refused_url, Fault, FaultyServer, Mix};
use crate::process;

/// The adapters the soak drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Adapter {
    /// `backstop::ureq`, one blocking thread per concurrent operation.
    Ureq,
    /// `backstop::tower`'s layer over `backstop::smol::HttpService`, tasks on one smol executor
    /// thread.
    TowerSmol,
    /// `backstop::tower`'s layer over hyper-util's pooled client, tasks on a two-worker tokio
    /// runtime.
    TowerTokio,
}

impl Adapter {
    /// Every adapter.
    pub const ALL: [Adapter; 3] = [Adapter::Ureq, Adapter::TowerSmol, Adapter::TowerTokio];
}

/// What a soak runs.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Operations in all, shared evenly among the adapters.
    pub operations: usize,
    /// Operations in flight at once, in all (split evenly among the adapters).
    pub concurrency: usize,
    /// Per mille of the operations sent to a port where nothing listens.
    pub refused_per_mille: u64,
    /// Seed of the server's fault draws and of the retriers' jitter.
    pub seed: u64,
    /// The policy of every operation.
    pub policy: Policy,
    /// How far past `max_elapsed` an operation may end (thread and timer scheduling).
    pub slack: Duration,
}

impl Config {
    /// `operations` at `concurrency`, with the soak's policy: 4 attempts, 100 ms attempt
    /// timeout, 500 ms overall, backoff from 5 ms to 50 ms.
    ///
    /// # Panics
    ///
    /// Never: the policy is valid.
    #[must_use]
    pub fn new(operations: usize, concurrency: usize) -> Self {
        let policy = Policy::builder()
            .max_attempts(4)
            .attempt_timeout(Duration::from_millis(100))
            .max_elapsed(Duration::from_millis(500))
            .backoff(Backoff::exponential(
                Duration::from_millis(5),
                Duration::from_millis(50),
            ))
            .build()
            .expect("a valid policy");
        Config {
            operations,
            concurrency,
            refused_per_mille: 20,
            seed: 7,
            policy,
            slack: Duration::from_millis(250),
        }
    }
}

/// How one operation ended.
#[derive(Clone, Debug)]
struct Record {
    refused_target: bool,
    status: Option<u16>,
    error: Option<String>,
    reason: &'static str,
    attempts: u32,
    wall: Duration,
}

/// The tally of one adapter.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Operations finished.
    pub operations: u64,
    /// Operations that ended with a response, by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Operations that ended with an error, by kind.
    pub errors: BTreeMap<String, u64>,
    /// Operations by the machine's stop reason.
    pub reasons: BTreeMap<&'static str, u64>,
    /// Attempts counted by operations sent to the server.
    pub attempts_to_server: u64,
    /// Attempts counted by operations sent where nothing listens.
    pub attempts_refused: u64,
    /// Operations sent where nothing listens that nonetheless got a response.
    pub refused_with_response: u64,
    /// Operations that ended later than `max_elapsed` plus the slack.
    pub overran: u64,
    /// The latest end past `max_elapsed` (zero if none ended past it).
    pub worst_overrun: Duration,
    /// Median and largest wall time of an operation.
    pub median_wall: Duration,
    /// The largest wall time of an operation.
    pub max_wall: Duration,
}

/// What a soak measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// The configuration it ran.
    pub config: Config,
    /// Per adapter.
    pub tallies: BTreeMap<Adapter, Tally>,
    /// Requests the server read (whole heads).
    pub server_requests: u64,
    /// Attempts that ran out of time: the only ones the server may not have read (a
    /// starved server thread can still be reading when the client gives up).
    pub timed_out_attempts: u64,
    /// Of which, by fault.
    pub by_fault: [(Fault, u64); 7],
    /// Connections the server accepted.
    pub server_connections: u64,
    /// Open descriptors before the run (after a warm-up) and after it.
    pub fds: (Option<usize>, Option<usize>),
    /// Resident memory before and after, KiB.
    pub rss_kib: (Option<u64>, Option<u64>),
    /// Threads before and after.
    pub threads: (Option<usize>, Option<usize>),
    /// Whether every server connection had ended after the run.
    pub server_idle: bool,
    /// Wall time of the run.
    pub took: Duration,
}

impl Report {
    /// Operations finished, all adapters.
    #[must_use]
    pub fn operations(&self) -> u64 {
        self.tallies.values().map(|t| t.operations).sum()
    }

    /// Attempts the operations counted against the server.
    #[must_use]
    pub fn attempts_to_server(&self) -> u64 {
        self.tallies.values().map(|t| t.attempts_to_server).sum()
    }

    /// Every check that failed, in words; empty when the soak passed. `rss_growth_kib` is the
    /// resident growth tolerated (the allocator keeps some freed memory).
    #[must_use]
    pub fn problems(&self, rss_growth_kib: u64) -> Vec<String> {
        let mut p = Vec::new();
        if self.operations() != self.config.operations as u64 {
            p.push(format!(
                "{} of {} operations finished",
                self.operations(),
                self.config.operations
            ));
        }
        for (adapter, t) in &self.tallies {
            let ended: u64 = t.statuses.values().sum::<u64>() + t.errors.values().sum::<u64>();
            if ended != t.operations || t.reasons.values().sum::<u64>() != t.operations {
                p.push(format!(
                    "{adapter:?}: an operation without an outcome or a reason"
                ));
            }
            if t.overran > 0 {
                p.push(format!(
                    "{adapter:?}: {} operations outlived max_elapsed by more than {:?} (worst {:?})",
                    t.overran, self.config.slack, t.worst_overrun
                ));
            }
            if t.refused_with_response > 0 {
                p.push(format!(
                    "{adapter:?}: {} refused operations got a response",
                    t.refused_with_response
                ));
            }
        }
        // Every request the server read was counted as an attempt, and every attempt the
        // server did not read ran out of time first.
        let unread = self.attempts_to_server().checked_sub(self.server_requests);
        if unread.is_none_or(|n| n > self.timed_out_attempts) {
            p.push(format!(
                "the server read {} requests, the operations counted {} attempts to it, \
                 {} of which timed out",
                self.server_requests,
                self.attempts_to_server(),
                self.timed_out_attempts
            ));
        }
        if !self.server_idle {
            p.push("server connections still open after the clients were dropped".into());
        }
        if let (Some(a), Some(b)) = self.fds {
            if a != b {
                p.push(format!("open descriptors: {a} before, {b} after"));
            }
        }
        if let (Some(a), Some(b)) = self.rss_kib {
            if b > a + rss_growth_kib {
                p.push(format!(
                    "resident memory grew from {a} KiB to {b} KiB (tolerance {rss_growth_kib} KiB)"
                ));
            }
        }
        p
    }
}

/// Runs a warm-up (so that lazily created process-wide state, such as smol's reactor, exists
/// before the baseline is taken), then the soak, and reports.
///
/// # Panics
///
/// If a worker thread panics (a bug in the soak itself).
#[must_use]
pub fn run(config: Config) -> Report {
    let mix = Mix::faulty(config.seed, config.policy.attempt_timeout());
    let server = FaultyServer::start(mix);
    let refused = refused_url("/refused");
    let warm = Config {
        operations: (config.concurrency * 6).min(config.operations),
        ..config
    };
    let _ = drive(&warm, &server.url("/soak"), &refused, None);
    let _ = server.wait_idle(Duration::from_secs(5));
    let read_before = server.requests();
    let warm_by_fault = server.requests_by_fault();
    let connections_before = server.connections();
    let fds_before = settled_fds(None);
    let rss_before = process::rss_kib();
    let threads_before = process::threads();

    let started = Instant::now();
    let timed_out = Arc::new(AtomicU64::new(0));
    let records = drive(&config, &server.url("/soak"), &refused, Some(&timed_out));
    let took = started.elapsed();
    // Tallied (and the records freed) before the memory is read.
    let tallies = tally(&config, records);
    let server_idle = server.wait_idle(Duration::from_secs(10));
    let fds_after = settled_fds(fds_before);
    let rss_after = process::rss_kib();
    let threads_after = process::threads();

    let mut by_fault = server.requests_by_fault();
    // The warm-up's requests are not the run's.
    for ((_, n), (_, warm)) in by_fault.iter_mut().zip(warm_by_fault) {
        *n -= warm;
    }
    Report {
        config,
        tallies,
        server_requests: server.requests() - read_before,
        timed_out_attempts: timed_out.load(Ordering::Relaxed),
        by_fault,
        server_connections: server.connections() - connections_before,
        fds: (fds_before, fds_after),
        rss_kib: (rss_before, rss_after),
        threads: (threads_before, threads_after),
        server_idle,
        took,
    }
}

/// Open descriptors once they stop changing (closing threads and tasks finish within a few
/// milliseconds); with a `target`, as soon as it is reached, within two seconds.
fn settled_fds(target: Option<usize>) -> Option<usize> {
    let mut last = process::open_fds();
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(10));
        let now = process::open_fds();
        if target.is_some() && now == target {
            return now;
        }
        if target.is_none() && now == last {
            return now;
        }
        last = now;
    }
    last
}

fn tally(config: &Config, records: Vec<(Adapter, Record)>) -> BTreeMap<Adapter, Tally> {
    let mut walls: BTreeMap<Adapter, Vec<Duration>> = BTreeMap::new();
    let mut tallies: BTreeMap<Adapter, Tally> = BTreeMap::new();
    let max = config.policy.max_elapsed();
    for (adapter, r) in records {
        let t = tallies.entry(adapter).or_default();
        t.operations += 1;
        match (&r.status, &r.error) {
            (Some(s), _) => *t.statuses.entry(*s).or_default() += 1,
            (None, Some(e)) => *t.errors.entry(e.clone()).or_default() += 1,
            (None, None) => {}
        }
        *t.reasons.entry(r.reason).or_default() += 1;
        if r.refused_target {
            t.attempts_refused += u64::from(r.attempts);
            if r.status.is_some() {
                t.refused_with_response += 1;
            }
        } else {
            t.attempts_to_server += u64::from(r.attempts);
        }
        let over = r.wall.saturating_sub(max);
        t.worst_overrun = t.worst_overrun.max(over);
        if over > config.slack {
            t.overran += 1;
        }
        walls.entry(adapter).or_default().push(r.wall);
    }
    for (adapter, mut w) in walls {
        w.sort();
        if let Some(t) = tallies.get_mut(&adapter) {
            t.median_wall = w[w.len() / 2];
            t.max_wall = w[w.len() - 1];
        }
    }
    tallies
}

/// The operations of one run, shared by every worker: operation `i` goes to adapter `i % 3`,
/// and to the refused URL for a fixed per mille of `i`s.
struct Plan {
    operations: usize,
    refused_per_mille: u64,
    url: http::Uri,
    refused: http::Uri,
    next: [AtomicUsize; 3],
    records: Mutex<Vec<(Adapter, Record)>>,
}

impl Plan {
    /// The next operation of `adapter`, and where it goes.
    fn take(&self, adapter: Adapter) -> Option<(bool, http::Uri)> {
        let a = adapter as usize;
        let i = self.next[a].fetch_add(1, Ordering::SeqCst) * 3 + a;
        if i >= self.operations {
            return None;
        }
        let refused =
            (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1000 < self.refused_per_mille;
        Some((
            refused,
            if refused { &self.refused } else { &self.url }.clone(),
        ))
    }

    fn record(&self, adapter: Adapter, record: Record) {
        self.records
            .lock()
            .expect("records")
            .push((adapter, record));
    }
}

/// Runs every adapter at once; returns each operation's record.
/// Attempts that end in a time-out are counted in `timed_out`, if given.
fn drive(
    config: &Config,
    url: &str,
    refused: &str,
    timed_out: Option<&Arc<AtomicU64>>,
) -> Vec<(Adapter, Record)> {
    let budget =
        Arc::new(RatioBudget::new(20, 20, Duration::from_secs(10)).expect("a valid budget"));
    let mut retrier = Retrier::new(config.policy).budget(budget).seed(config.seed);
    if let Some(count) = timed_out {
        let count = count.clone();
        retrier = retrier.on_event(move |e| {
            let ended_in_time_out = matches!(
                e.kind,
                EventKind::AttemptEnded {
                    result: AttemptOutcome::Error(error),
                    ..
                } if matches!(error.kind, ErrorKind::Timeout | ErrorKind::ConnectTimeout)
            );
            if ended_in_time_out {
                count.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let plan = Arc::new(Plan {
        operations: config.operations,
        refused_per_mille: config.refused_per_mille,
        url: url.parse().expect("a valid URL"),
        refused: refused.parse().expect("a valid URL"),
        next: Default::default(),
        records: Mutex::new(Vec::with_capacity(config.operations)),
    });
    let per_adapter = config.concurrency.div_ceil(Adapter::ALL.len()).max(1);
    std::thread::scope(|scope| {
        let ureq = Arc::new(backstop::ureq::Client::new(retrier.clone()));
        for _ in 0..per_adapter {
            let (plan, ureq) = (plan.clone(), ureq.clone());
            scope.spawn(move || ureq_worker(&plan, &ureq));
        }
        let smol_plan = plan.clone();
        let smol_retrier = retrier.clone();
        scope.spawn(move || {
            let client = clients::tower_smol(smol_retrier);
            let ex = smol::LocalExecutor::new();
            smol::block_on(ex.run(async {
                let tasks: Vec<_> = (0..per_adapter)
                    .map(|_| ex.spawn(smol_worker(&smol_plan, &client)))
                    .collect();
                for t in tasks {
                    t.await;
                }
            }));
        });
        let tokio_plan = plan.clone();
        let tokio_retrier = retrier.clone();
        scope.spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let client = clients::tower_tokio(tokio_retrier);
            rt.block_on(async {
                let tasks: Vec<_> = (0..per_adapter)
                    .map(|_| tokio::spawn(tokio_worker(tokio_plan.clone(), client.clone())))
                    .collect();
                for t in tasks {
                    t.await.expect("a tokio worker");
                }
            });
            drop(client);
            drop(rt);
        });
    });
    let plan = Arc::into_inner(plan).expect("every worker has ended");
    plan.records.into_inner().expect("records")
}

fn ureq_worker(plan: &Plan, client: &backstop::ureq::Client) {
    while let Some((refused, uri)) = plan.take(Adapter::Ureq) {
        let started = Instant::now();
        let request = http::Request::get(uri)
            .body(())
            .expect("a GET of a parsed URI");
        let result = client.run(request);
        let wall = started.elapsed();
        let record = match result {
            Ok(mut r) => {
                let _ = r.response.body_mut().read_to_vec();
                ok_record(refused, r.response.status().as_u16(), &r.outcome, wall)
            }
            Err(e) => err_record(refused, &e, wall),
        };
        plan.record(Adapter::Ureq, record);
    }
}

async fn smol_worker(plan: &Plan, client: &TowerSmol) {
    while let Some((refused, uri)) = plan.take(Adapter::TowerSmol) {
        let started = Instant::now();
        let result = client.clone().oneshot(clients::get(&uri)).await;
        let wall = started.elapsed();
        let record = match result {
            Ok(response) => {
                let status = response.status().as_u16();
                let outcome = outcome_of(&response);
                // A reset after the head ends the body with an error; bounded all the same.
                let body = response.into_body().collect();
                let _ = futures_lite::future::or(async { body.await.is_ok() }, async {
                    smol::Timer::after(Duration::from_secs(2)).await;
                    false
                })
                .await;
                ok_record(refused, status, &outcome, wall)
            }
            Err(e) => err_record(refused, &e, wall),
        };
        plan.record(Adapter::TowerSmol, record);
    }
}

async fn tokio_worker(plan: Arc<Plan>, client: TowerTokio) {
    while let Some((refused, uri)) = plan.take(Adapter::TowerTokio) {
        let started = Instant::now();
        let result = client.clone().oneshot(clients::get(&uri)).await;
        let wall = started.elapsed();
        let record = match result {
            Ok(response) => {
                let status = response.status().as_u16();
                let outcome = outcome_of(&response);
                let body = response.into_body().collect();
                let _ = tokio::time::timeout(Duration::from_secs(2), body).await;
                ok_record(refused, status, &outcome, wall)
            }
            Err(e) => err_record(refused, &e, wall),
        };
        plan.record(Adapter::TowerTokio, record);
    }
}

/// The outcome the tower layer puts in the response's extensions.
fn outcome_of<B>(response: &http::Response<B>) -> backstop::Outcome {
    *response
        .extensions()
        .get::<backstop::Outcome>()
        .expect("the layer puts the outcome in the response's extensions")
}

fn ok_record(refused_target: bool, status: u16, o: &backstop::Outcome, wall: Duration) -> Record {
    Record {
        refused_target,
        status: Some(status),
        error: None,
        reason: o.reason.as_str(),
        attempts: o.attempts,
        wall,
    }
}

fn err_record<E>(refused_target: bool, e: &RetryError<E>, wall: Duration) -> Record {
    let error = match e {
        RetryError::Aborted(_) => "aborted".to_owned(),
        RetryError::TimedOut(_) => "timeout".to_owned(),
        RetryError::Failed { kind, .. } => format!("{kind:?}").to_lowercase(),
        _ => "other".to_owned(),
    };
    let o = e.outcome();
    Record {
        refused_target,
        status: None,
        error: Some(error),
        reason: o.reason.as_str(),
        attempts: o.attempts,
        wall,
    }
}

/// The resident growth the checks tolerate, KiB: allocators keep part of what was freed, and
/// thread stacks of the server's connections come and go.
pub const RSS_GROWTH_KIB: u64 = 16 * 1024;

/// The report as text: one table per adapter, then the server's side and the process's.
#[must_use]
pub fn render(r: &Report) -> String {
    use core::fmt::Write;
    let mut s = String::new();
    let c = &r.config;
    let _ = writeln!(
        s,
        "soak: {} operations, concurrency {}, {} per mille to a refused port, took {:.1} s ({:.0} operations/s)",
        c.operations,
        c.concurrency,
        c.refused_per_mille,
        r.took.as_secs_f64(),
        c.operations as f64 / r.took.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "policy: {} attempts, attempt timeout {:?}, max_elapsed {:?}, slack {:?}",
        c.policy.max_attempts(),
        c.policy.attempt_timeout(),
        c.policy.max_elapsed(),
        c.slack
    );
    for (a, t) in &r.tallies {
        let _ = writeln!(
            s,
            "{a:?}: {} operations; statuses {:?}; errors {:?}; reasons {:?}; attempts to the server {}, to the refused port {}; wall median {:?} max {:?}; worst end past max_elapsed {:?}, beyond the slack {}",
            t.operations,
            t.statuses,
            t.errors,
            t.reasons,
            t.attempts_to_server,
            t.attempts_refused,
            t.median_wall,
            t.max_wall,
            t.worst_overrun,
            t.overran
        );
    }
    let _ = writeln!(
        s,
        "server: {} requests read (operations counted {} attempts to it, {} attempts timed out), {} connections; by fault {:?}",
        r.server_requests,
        r.attempts_to_server(),
        r.timed_out_attempts,
        r.server_connections,
        r.by_fault
    );
    let _ = writeln!(
        s,
        "process: descriptors {:?} -> {:?}; RSS {:?} -> {:?} KiB; threads {:?} -> {:?}; server idle after: {}",
        r.fds.0, r.fds.1, r.rss_kib.0, r.rss_kib.1, r.threads.0, r.threads.1, r.server_idle
    );
    s
}
