//! The hedging experiment (issue 20): requests fanned out to 100 leaves, each leaf one real
//! [`HedgeMachine`] operation, on virtual time.
//!
//! Requests arrive at a fixed [`Config::rate`]; each starts [`Config::fan_out`] leaf calls at
//! its arrival and its user-visible latency is the slowest leaf's. A leaf is one `GET` driven
//! through a `HedgeMachine`; every copy the machine sends takes an independent draw of
//! [`tail`] and answers `200`; the first answer wins and the machine cancels the
//! other copy. One event queue holds every leaf in flight, so the shared [`LatencyTracker`]
//! (the adaptive delay's) and the shared [`RatioBudget`] see time move forward only, as in a
//! process.
//!
//! Each run first sends [`Config::warmup`] requests that are not measured (the tracker and the
//! budget start from a plausible state rather than empty); the measured requests follow. In
//! the slowdown case every measured leaf is [`Case::slowdown`] times slower, so the slowdown
//! starts when the tracker still holds the normal latencies: the adaptive delay lags it by up
//! to a tracker window, and the budget is what bounds the extra load meanwhile.
//!
//! Copy `k` of leaf `i` of request `r` takes the same draw in every case (common random
//! numbers): the cases differ only by their policy.

use core::cell::Cell;
use core::time::Duration;

use backstop_core::{
    Budget, HedgeDecision, HedgeEvent, HedgeMachine, HedgeOutcome, Hedging, Instant, Latencies,
    LatencyTracker, Method, Policy, RatioBudget, Request, Response, StopReason, Unlimited,
    MAX_COPIES,
};
use rand_pcg::Pcg64Mcg;

use crate::events::Queue;
use crate::net::{rng, MS};
use crate::tail;

/// Nanoseconds per second.
const SEC: u64 = 1_000 * MS;
/// Every copy's timeout and the operation's deadline: longer than the slowest leaf (120 s,
/// 600 s when 5x slower), so no copy ever times out and the tail is measured whole.
pub const TIMEOUT: Duration = Duration::from_secs(1_000);
/// The adaptive delay's window (Finagle's default).
pub const TRACKER_WINDOW: Duration = Duration::from_secs(30);
/// The shared budget: hedges stay under this share of the leaves started in the last
/// [`BUDGET_WINDOW`] (the Google SRE book's 10 %), with no minimum rate.
pub const BUDGET_PERCENT: u32 = 10;
/// The shared budget's window.
pub const BUDGET_WINDOW: Duration = Duration::from_secs(10);
/// The width of one bin of the extra-load-over-time series.
pub const BIN_NS: u64 = SEC;

/// One row of the experiment: how every leaf is hedged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Case {
    /// The name used in tables and figures.
    pub name: &'static str,
    /// The hedging policy; `None`: one copy per leaf.
    pub hedging: Option<Hedging>,
    /// How many times slower every measured leaf is than the distribution.
    pub slowdown: u32,
    /// Whether hedges are paid from the shared [`RatioBudget`].
    pub budgeted: bool,
}

impl Case {
    /// No hedging.
    pub const NONE: Case = Case::new("no hedging", None, 1, false);
    /// A backup after 10 ms (Dean's).
    pub const FIXED_10: Case = Case::hedged("fixed 10 ms", Hedging::fixed(ms(10)), 1);
    /// A backup after 50 ms.
    pub const FIXED_50: Case = Case::hedged("fixed 50 ms", Hedging::fixed(ms(50)), 1);
    /// A backup after the recent p95 (`max_extra_load` 5 %).
    pub const ADAPTIVE: Case = Case::hedged("adaptive 5 %", Hedging::adaptive(5), 1);
    /// The adaptive backup when every measured leaf is 5x slower.
    pub const ADAPTIVE_SLOW: Case =
        Case::hedged("adaptive 5 %, leaves 5x slower", Hedging::adaptive(5), 5);
    /// The same without the budget: not a row of the table, the comparison that shows what
    /// the budget bounds.
    pub const ADAPTIVE_SLOW_UNBUDGETED: Case = Case::new(
        "adaptive 5 %, leaves 5x slower, no budget",
        Some(Hedging::adaptive(5)),
        5,
        false,
    );

    /// The table's rows, in order.
    pub const ROWS: [Case; 5] = [
        Case::NONE,
        Case::FIXED_10,
        Case::FIXED_50,
        Case::ADAPTIVE,
        Case::ADAPTIVE_SLOW,
    ];

    const fn new(
        name: &'static str,
        hedging: Option<Hedging>,
        slowdown: u32,
        budgeted: bool,
    ) -> Self {
        Case {
            name,
            hedging,
            slowdown,
            budgeted,
        }
    }

    const fn hedged(name: &'static str, hedging: Hedging, slowdown: u32) -> Self {
        Case::new(name, Some(hedging), slowdown, true)
    }

    /// The policy of every leaf: `GET`s, [`TIMEOUT`] per copy and in all, and this case's
    /// hedging (two copies at most, like Dean's single backup request).
    ///
    /// # Panics
    ///
    /// Never: the policies are valid by construction.
    #[must_use]
    pub fn policy(self) -> Policy {
        let builder = Policy::builder()
            .attempt_timeout(TIMEOUT)
            .max_elapsed(TIMEOUT);
        match self.hedging {
            Some(h) => builder.hedging(h.max_attempts(2)),
            None => builder.max_attempts(1),
        }
        .build()
        .expect("the experiment's policies are valid")
    }
}

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The experiment's fixed numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// The measured requests (N).
    pub requests: u32,
    /// The requests sent before them, not measured, at the distribution's speed.
    pub warmup: u32,
    /// Leaves per request.
    pub fan_out: u32,
    /// Requests started per second.
    pub rate: u32,
    /// The seed of every draw.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            requests: 50_000,
            warmup: 3_000,
            fan_out: 100,
            rate: 100,
            seed: 2012,
        }
    }
}

/// What one run measured (over the measured requests only).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The case.
    pub case: Case,
    /// The user-visible latency of every measured request in milliseconds, sorted.
    pub latencies_ms: Vec<f64>,
    /// Leaves (originals).
    pub leaves: u64,
    /// Copies sent, originals included.
    pub copies: u64,
    /// Copies the budget suppressed.
    pub denied: u64,
    /// Per [`BIN_NS`] bin from the first measured request on, by leaf start: the leaves
    /// started, the extra copies they sent, and the sum of their hedging delays (ns) over
    /// the leaves that had one.
    pub bins: Vec<Bin>,
}

/// One bin of the series over time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bin {
    /// Leaves started.
    pub leaves: u64,
    /// Extra copies those leaves sent.
    pub extra: u64,
    /// The sum of their hedging delays, in nanoseconds.
    pub delay_ns: u64,
    /// Leaves that had a hedging delay.
    pub delayed: u64,
}

impl Outcome {
    /// Extra leaf requests, in percent of the originals.
    #[must_use]
    pub fn extra_percent(&self) -> f64 {
        percent(self.copies - self.leaves, self.leaves)
    }

    /// The nearest-rank `q`-quantile (0 < q ≤ 1) of the user-visible latency, in ms.
    #[must_use]
    pub fn percentile(&self, q: f64) -> f64 {
        crate::stats::nearest_rank(&self.latencies_ms, q)
    }

    /// The largest extra load, in percent, over any `bins` consecutive bins.
    #[must_use]
    pub fn worst_window_percent(&self, bins: usize) -> f64 {
        self.bins
            .windows(bins.min(self.bins.len()).max(1))
            .map(|w| {
                let leaves = w.iter().map(|b| b.leaves).sum();
                percent(w.iter().map(|b| b.extra).sum(), leaves)
            })
            .fold(0.0, f64::max)
    }

    /// The mean hedging delay of the leaves that had one, in ms (`None`: none had one).
    #[must_use]
    pub fn mean_delay_ms(&self) -> Option<f64> {
        let delayed: u64 = self.bins.iter().map(|b| b.delayed).sum();
        let sum: u64 = self.bins.iter().map(|b| b.delay_ns).sum();
        (delayed > 0).then(|| sum as f64 / delayed as f64 / MS as f64)
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// A [`LatencyTracker`] that remembers its last answer until the next sample: the 100
/// leaves a request starts at one instant read one quantile, computed once. Answers exactly
/// as the tracker does.
#[derive(Debug)]
struct Memo<'a> {
    tracker: &'a LatencyTracker,
    last: Cell<Option<(Query, Option<Duration>)>>,
}

/// A quantile's arguments: the instant, the percentile, the samples needed.
type Query = (Instant, u8, u32);

impl Latencies for Memo<'_> {
    fn quantile(&self, now: Instant, percentile: u8, min_samples: u32) -> Option<Duration> {
        let query = (now, percentile, min_samples);
        if let Some((last, q)) = self.last.get() {
            if last == query {
                return q;
            }
        }
        let q = self.tracker.quantile(now, percentile, min_samples);
        self.last.set(Some((query, q)));
        q
    }

    fn record(&self, now: Instant, latency: Duration) {
        self.last.set(None);
        self.tracker.record(now, latency);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Request `r` arrives and starts its leaves.
    Arrival(u32),
    /// Something is due for the leaf in slot `s`: a copy's answer or the machine's timer.
    Leaf(u32),
}

/// Not in flight.
const NONE: u64 = u64::MAX;

struct Leaf<'a> {
    machine: HedgeMachine<Pcg64Mcg, &'a dyn Budget, &'a dyn Latencies>,
    /// The copies' latencies are drawn from it, in copy order.
    rng: Pcg64Mcg,
    request: u32,
    started: u64,
    /// When each copy in flight answers (`NONE`: not in flight).
    answers: [u64; MAX_COPIES as usize],
}

/// Where a leaf stands after it was driven.
enum Step {
    /// Drive it again at this instant.
    At(u64),
    /// It returned.
    Done(HedgeOutcome),
}

/// Runs one case. `config.seed` fixes every draw.
///
/// # Panics
///
/// If the machine misbehaves (a misplaced event, an unexpected decision, a leaf that did
/// not return its winner's answer).
#[must_use]
pub fn run(config: &Config, case: Case) -> Outcome {
    let policy = case.policy();
    let ratio = RatioBudget::new(BUDGET_PERCENT, 0, BUDGET_WINDOW).expect("a valid budget");
    let budget: &dyn Budget = if case.budgeted { &ratio } else { &Unlimited };
    let tracker = LatencyTracker::new(TRACKER_WINDOW);
    let memo = Memo {
        tracker: &tracker,
        last: Cell::new(None),
    };
    let latencies: &dyn Latencies = &memo;

    let gap = SEC / u64::from(config.rate);
    let total = config.warmup + config.requests;
    let measured_from = u64::from(config.warmup) * gap;
    // Per request: leaves not done yet, and when the last one finished.
    let mut requests: Vec<(u32, u64)> = vec![(config.fan_out, 0); total as usize];
    let mut latencies_ms = Vec::with_capacity(config.requests as usize);
    let mut bins =
        vec![Bin::default(); (u64::from(config.requests) * gap).div_ceil(BIN_NS) as usize];
    let (mut leaves, mut copies, mut denied) = (0u64, 0u64, 0u64);

    let mut slots: Vec<Option<Leaf<'_>>> = Vec::new();
    let mut free: Vec<u32> = Vec::new();
    let mut queue = Queue::default();
    if total > 0 {
        queue.at(0, Ev::Arrival(0));
    }

    while let Some((t, ev)) = queue.pop() {
        match ev {
            Ev::Arrival(r) => {
                if r + 1 < total {
                    queue.at(u64::from(r + 1) * gap, Ev::Arrival(r + 1));
                }
                let measured = r >= config.warmup;
                let slowdown = if measured { case.slowdown } else { 1 };
                for i in 0..config.fan_out {
                    let parts = [u64::from(r), u64::from(i)];
                    let mut leaf = Leaf {
                        machine: HedgeMachine::with_budget(
                            policy,
                            Request::new(Method::Get),
                            rng(config.seed, &[2, parts[0], parts[1]]),
                            budget,
                            latencies,
                            at(t),
                        ),
                        rng: rng(config.seed, &[1, parts[0], parts[1]]),
                        request: r,
                        started: t,
                        answers: [NONE; MAX_COPIES as usize],
                    };
                    if measured {
                        if let (Some(bin), Some(d)) =
                            (bin_of(&mut bins, t - measured_from), leaf.machine.delay())
                        {
                            bin.delay_ns += u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                            bin.delayed += 1;
                        }
                    }
                    let step = drive(&mut leaf, t, f64::from(slowdown));
                    let slot = match free.pop() {
                        Some(s) => {
                            slots[s as usize] = Some(leaf);
                            s
                        }
                        None => {
                            slots.push(Some(leaf));
                            u32::try_from(slots.len() - 1)
                                .expect("fewer than 2^32 leaves in flight")
                        }
                    };
                    match step {
                        Step::At(next) => queue.at(next, Ev::Leaf(slot)),
                        Step::Done(_) => {
                            unreachable!("a leaf answers after its first copy is sent")
                        }
                    }
                }
            }
            Ev::Leaf(s) => {
                let leaf = slots[s as usize].as_mut().expect("a leaf in flight");
                let measured = leaf.request >= config.warmup;
                let slowdown = if measured { case.slowdown } else { 1 };
                match drive(leaf, t, f64::from(slowdown)) {
                    Step::At(next) => queue.at(next, Ev::Leaf(s)),
                    Step::Done(outcome) => {
                        let (request, started) = (leaf.request, leaf.started);
                        slots[s as usize] = None;
                        free.push(s);
                        assert_eq!(
                            outcome.outcome.reason,
                            StopReason::FinalStatus,
                            "{outcome:?}"
                        );
                        let state = &mut requests[request as usize];
                        state.0 -= 1;
                        state.1 = state.1.max(t);
                        if !measured {
                            continue;
                        }
                        let sent = u64::from(outcome.outcome.attempts);
                        leaves += 1;
                        copies += sent;
                        if outcome.suppressed_by == Some(StopReason::Budget) {
                            denied += u64::from(outcome.suppressed);
                        }
                        if let Some(bin) = bin_of(&mut bins, started - measured_from) {
                            bin.leaves += 1;
                            bin.extra += sent - 1;
                        }
                        if state.0 == 0 {
                            let arrival = u64::from(request) * gap;
                            latencies_ms.push((state.1 - arrival) as f64 / MS as f64);
                        }
                    }
                }
            }
        }
    }
    assert_eq!(
        latencies_ms.len(),
        config.requests as usize,
        "every request finished"
    );
    latencies_ms.sort_by(f64::total_cmp);
    Outcome {
        case,
        latencies_ms,
        leaves,
        copies,
        denied,
        bins,
    }
}

fn bin_of(bins: &mut [Bin], since: u64) -> Option<&mut Bin> {
    bins.get_mut((since / BIN_NS) as usize)
}

fn at(t: u64) -> Instant {
    Instant::from_nanos(t)
}

/// Acts on the leaf's decisions at `t` until it waits or returns: answers due by `t` go in
/// first (earliest first), then the machine is polled.
fn drive(leaf: &mut Leaf<'_>, t: u64, slowdown: f64) -> Step {
    loop {
        if let Some((i, _)) = leaf
            .answers
            .iter()
            .enumerate()
            .min_by_key(|&(_, &a)| a)
            .filter(|&(_, &a)| a <= t)
        {
            let copy = i as u32 + 1;
            leaf.answers[i] = NONE;
            leaf.machine
                .handle(
                    at(t),
                    HedgeEvent::Response {
                        copy,
                        response: Response::new(200),
                    },
                )
                .expect("an answer of a copy in flight");
            continue;
        }
        match leaf.machine.poll(at(t)) {
            HedgeDecision::Send { copy, .. } => {
                let latency = tail::draw(&mut leaf.rng, slowdown);
                leaf.answers[copy as usize - 1] = t + latency;
                leaf.machine
                    .handle(at(t), HedgeEvent::Started { copy })
                    .expect("the machine asked for this copy");
            }
            HedgeDecision::Cancel { copy, .. } => {
                leaf.answers[copy as usize - 1] = NONE;
                leaf.machine
                    .handle(at(t), HedgeEvent::Cancelled { copy })
                    .expect("the machine asked to drop this copy");
            }
            HedgeDecision::Wait { until, .. } => {
                let until = u64::try_from(until.as_duration().as_nanos()).unwrap_or(u64::MAX);
                let answer = leaf.answers.iter().copied().min().unwrap_or(NONE);
                let next = until.min(answer);
                assert!(next > t, "the machine waits until {until} at {t}");
                return Step::At(next);
            }
            HedgeDecision::Return(outcome) => {
                assert!(
                    outcome.winner.is_some(),
                    "a leaf returns its winner: {outcome:?}"
                );
                return Step::Done(outcome);
            }
            other => panic!("unexpected decision {other:?}"),
        }
    }
}

/// Dean's published figures without backup requests: p95, p99 and p99.9 in ms.
pub const PUBLISHED_NO_BACKUP: [f64; 3] = [24.0, 52.0, 994.0];
/// Dean's published figures with a backup after 10 ms: p95, p99 and p99.9 in ms.
pub const PUBLISHED_BACKUP_10MS: [f64; 3] = [20.0, 23.0, 50.0];

/// The experiment's claims, checked against measured outcomes (the table's rows and
/// [`Case::ADAPTIVE_SLOW_UNBUDGETED`]): each entry is the statement and whether it holds.
#[must_use]
pub fn claim_checks(outcomes: &[Outcome]) -> Vec<(String, bool)> {
    let get = |c: Case| outcomes.iter().find(|o| o.case == c);
    let (Some(none), Some(fixed), Some(adaptive), Some(slow), Some(unbudgeted)) = (
        get(Case::NONE),
        get(Case::FIXED_10),
        get(Case::ADAPTIVE),
        get(Case::ADAPTIVE_SLOW),
        get(Case::ADAPTIVE_SLOW_UNBUDGETED),
    ) else {
        return vec![("every case was run".to_owned(), false)];
    };
    let budget = f64::from(BUDGET_PERCENT);
    let p999 = |o: &Outcome| o.percentile(0.999);
    let window = (BUDGET_WINDOW.as_nanos() / u128::from(BIN_NS)) as usize;
    vec![
        (
            format!(
                "fixed 10 ms cuts the tail: p99.9 {:.1} ms, under half of no hedging's {:.1} ms",
                p999(fixed),
                p999(none)
            ),
            p999(fixed) < p999(none) / 2.0,
        ),
        (
            format!(
                "fixed 10 ms sends a backup for the leaves slower than 10 ms, P(L > 10 ms) = 5 %: extra {:.2} % within 0.5 of 5 %",
                fixed.extra_percent()
            ),
            (fixed.extra_percent() - 5.0).abs() <= 0.5,
        ),
        (
            format!(
                "adaptive 5 % cuts the tail: p99.9 {:.1} ms, under half of no hedging's {:.1} ms",
                p999(adaptive),
                p999(none)
            ),
            p999(adaptive) < p999(none) / 2.0,
        ),
        (
            format!(
                "adaptive 5 % keeps to its bound: extra {:.2} % <= 5.5 %",
                adaptive.extra_percent()
            ),
            adaptive.extra_percent() <= 5.5,
        ),
        (
            format!(
                "5x slower leaves: the budget bounds the extra load, {:.2} % in all and {:.2} % in the worst {window} s, <= {budget} % + 0.5",
                slow.extra_percent(),
                slow.worst_window_percent(window)
            ),
            slow.extra_percent() <= budget + 0.5
                && slow.worst_window_percent(window) <= budget + 0.5,
        ),
        (
            format!(
                "5x slower leaves without the budget: {:.2} % extra in the worst {window} s, above the budget's {budget} % (the adaptive delay lags the slowdown)",
                unbudgeted.worst_window_percent(window)
            ),
            unbudgeted.worst_window_percent(window) > budget + 0.5,
        ),
    ]
}

/// Whether the fixed rows agree with [`tail::fan_out_quantile`], the closed form for
/// independent copies (p95 and p99 within 5 %, p99.9 within 25 %): the machine sends the
/// backup when it should, and the driver delivers the first answer. Meaningful at the full N
/// only.
#[must_use]
pub fn closed_form_checks(outcomes: &[Outcome]) -> Vec<(String, bool)> {
    let mut checks = Vec::new();
    for (case, delay) in [(Case::FIXED_10, 10.0), (Case::FIXED_50, 50.0)] {
        let Some(o) = outcomes.iter().find(|o| o.case == case) else {
            checks.push((format!("{} was run", case.name), false));
            continue;
        };
        for (name, q, tolerance) in [
            ("p95", 0.95, 0.05),
            ("p99", 0.99, 0.05),
            ("p99.9", 0.999, 0.25),
        ] {
            let (measured, model) = (o.percentile(q), tail::fan_out_quantile(q, 100, Some(delay)));
            checks.push((
                format!(
                    "{}, {name}: {measured:.1} ms, within {:.0} % of the closed form's {model:.1} ms",
                    case.name,
                    100.0 * tolerance
                ),
                (measured / model - 1.0).abs() <= tolerance,
            ));
        }
    }
    checks
}

/// Whether the no-hedging row reproduces the published figures it was reconstructed from
/// (p95 and p99 within 10 %, p99.9 within 25 %: it rests on the slowest 0.1 % of the requests).
/// Meaningful at the full N only.
#[must_use]
pub fn published_checks(none: &Outcome) -> Vec<(String, bool)> {
    [("p95", 0.95, 0.10), ("p99", 0.99, 0.10), ("p99.9", 0.999, 0.25)]
        .iter()
        .zip(PUBLISHED_NO_BACKUP)
        .map(|(&(name, q, tolerance), published)| {
            let measured = none.percentile(q);
            (
                format!(
                    "no hedging, {name}: {measured:.1} ms, within {:.0} % of the published {published} ms",
                    100.0 * tolerance
                ),
                (measured / published - 1.0).abs() <= tolerance,
            )
        })
        .collect()
}
