//! A ratio budget: retries stay under a percentage of the operations started in a sliding
//! time window, plus a minimum rate.
//!
//! Rule (the Google SRE book, "Handling Overload": per-client retries under 10% of requests;
//! Finagle's and tower's `TpsBudget`, Envoy's retry budgets): every operation that starts
//! deposits `percent / 100` of a retry; every retry withdraws one; deposits and withdrawals
//! expire after `window`; a reserve of `min_per_sec * window` retries lets a client that sends
//! little still retry. A retry is allowed while what is left covers it. In a full outage the
//! retries in any window are at most `percent`% of the operations started in it, plus the
//! reserve: amplification stays near `1 + percent / 100`.
//!
//! Charged when the machine grants a retry; a granted retry that is never sent (an abort
//! during its wait, a deadline reached first) is paid back into the slot it was taken from,
//! unless that slot has expired meanwhile (then the withdrawal expired with it).
//!
//! The window is [`SLOTS`](RatioBudget::SLOTS) slots of `window / SLOTS`, each one 128-bit
//! atomic word holding its full slot number and its balance (in hundredths of a retry), so
//! rotating a slot and counting into it is one compare-and-swap, nothing is lost, and a balance
//! that expired stays expired however many slots pass (a slot number cut to 32 bits would wrap
//! after 2^32 slots, seven minutes with a 1 µs window, and bring old balances back). Time comes only from the
//! `now` the machine passes in; a caller whose `now` lags behind a slot another caller has
//! already started counts into that newer slot.
//!
//! Concurrency: callers in the same slot can never overdraw the budget together (one
//! compare-and-swap checks and withdraws, and a fresh total is checked after it); under
//! contention a retry that would just have fitted may be denied instead. Callers whose `now`s
//! straddle a slot boundary each see the window of their own `now`, so the total can differ
//! from a sequential run by the retries in flight at that boundary (the threaded test allows
//! 1% and sees none).

use core::sync::atomic::Ordering;

use core::time::Duration;
use portable_atomic::AtomicU128;

use super::{Budget, BudgetConfigError};
use crate::decision::AttemptOutcome;
use crate::time::Instant;

/// Hundredths of a retry per retry: the cost of one retry.
const RETRY: i64 = 100;
const SLOTS: usize = 10;
const DAY_NANOS: u128 = 86_400 * 1_000_000_000;

/// A retry budget of `percent`% of the operations started in the last `window`, plus
/// `min_per_sec` retries per second. Shared by reference (`&RatioBudget` and
/// `Arc<RatioBudget>` are budgets); lock-free; usable in a `static`.
///
/// ```
/// use backstop_core::{AttemptOutcome, Budget, Instant, RatioBudget};
/// use core::time::Duration;
///
/// let budget = RatioBudget::new(10, 0, Duration::from_secs(10))?;
/// let cause = AttemptOutcome::Response(503);
/// let t0 = Instant::ZERO;
/// for _ in 0..30 {
///     budget.on_operation_start(t0); // 30 operations earn 3 retries
/// }
/// assert_eq!(budget.available_centi(t0), 300);
/// assert!((0..3).all(|_| budget.try_retry(t0, cause)));
/// assert!(!budget.try_retry(t0, cause));
/// // After the window, the operations and the retries have expired together.
/// let later = Instant::from_secs(11);
/// assert_eq!(budget.available_centi(later), 0);
/// # Ok::<(), backstop_core::BudgetConfigError>(())
/// ```
#[derive(Debug)]
pub struct RatioBudget {
    deposit: i64,
    reserve: i64,
    slot_nanos: u64,
    slots: [AtomicU128; SLOTS],
}

impl RatioBudget {
    /// The number of slots the window is divided into: deposits expire one slot
    /// (`window / 10`) at a time.
    pub const SLOTS: usize = SLOTS;

    /// A budget allowing retries of at most `percent`% (0 to 10,000) of the operations
    /// started in the last `window` (1 µs to 1 day), plus `min_per_sec` retries per second
    /// whatever the traffic.
    pub const fn new(
        percent: u32,
        min_per_sec: u32,
        window: Duration,
    ) -> Result<Self, BudgetConfigError> {
        if percent > 10_000 {
            return Err(BudgetConfigError::PercentOutOfRange(percent));
        }
        let window_nanos = window.as_nanos();
        if window_nanos < 1_000 || window_nanos > DAY_NANOS {
            return Err(BudgetConfigError::WindowOutOfRange);
        }
        // Below a day and at most 2^32 * 1e9 * 100: fits an i64 (about 9.2e18) in every case.
        let reserve = (min_per_sec as u128 * window_nanos * RETRY as u128) / 1_000_000_000;
        let reserve = if reserve > i64::MAX as u128 {
            i64::MAX
        } else {
            reserve as i64
        };
        Ok(RatioBudget {
            deposit: percent as i64,
            reserve,
            slot_nanos: (window_nanos / SLOTS as u128) as u64,
            slots: [const { AtomicU128::new(0) }; SLOTS],
        })
    }

    /// The window's length.
    #[must_use]
    pub const fn window(&self) -> Duration {
        Duration::from_nanos(self.slot_nanos * SLOTS as u64)
    }

    /// What is left at `now`, in hundredths of a retry (a retry costs 100). It may be
    /// negative after the deposits that paid for recent retries expired.
    #[must_use]
    pub fn available_centi(&self, now: Instant) -> i64 {
        let slot = self.slot_number(now);
        let mut sum = self.reserve;
        for cell in &self.slots {
            sum = sum.saturating_add(live_balance(cell.load(Ordering::Relaxed), slot));
        }
        sum
    }

    /// The slot number of `now`: the count of slot lengths since the epoch.
    fn slot_number(&self, now: Instant) -> u64 {
        // `slot_nanos` is at least 100 (window >= 1 µs); the quotient of a u128 by it can
        // exceed u64 only past 58,000 years of uptime, where it saturates.
        u64::try_from(now.as_duration().as_nanos() / u128::from(self.slot_nanos))
            .unwrap_or(u64::MAX)
    }

    /// Applies `change` to the balance of `now`'s slot (rotating it if it holds an older
    /// slot) in one compare-and-swap loop. `change` sees the slot's balance and returns the
    /// new one, or `None` to leave it alone. Returns the slot number the change was counted
    /// in, or `None` if `change` declined.
    fn update(&self, slot: u64, change: impl Fn(i64) -> Option<i64>) -> Option<u64> {
        let cell = self.cell(slot)?;
        let mut counted_in = slot;
        cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |word| {
            let (held, balance) = unpack(word);
            // A newer slot (a thread with a later `now` rotated it) keeps its number: the
            // change is counted there rather than wiping it.
            let (tag, balance) = if held >= slot {
                (held, balance)
            } else {
                (slot, 0)
            };
            counted_in = tag;
            change(balance).map(|b| pack(tag, b))
        })
        .ok()
        .map(|_| counted_in)
    }

    /// The cell that holds `slot`.
    fn cell(&self, slot: u64) -> Option<&AtomicU128> {
        // `slot % SLOTS` is always an index of `slots`; `None` cannot happen.
        self.slots.get((slot % SLOTS as u64) as usize)
    }

    /// The balance of every live slot except `slot`'s own cell.
    fn others(&self, slot: u64) -> i64 {
        let own = (slot % SLOTS as u64) as usize;
        let mut sum = 0i64;
        for (i, cell) in self.slots.iter().enumerate() {
            if i != own {
                sum = sum.saturating_add(live_balance(cell.load(Ordering::Relaxed), slot));
            }
        }
        sum
    }
}

impl Budget for RatioBudget {
    fn on_operation_start(&self, now: Instant) {
        let deposit = self.deposit;
        let _ = self.update(self.slot_number(now), |b| Some(b.saturating_add(deposit)));
    }

    fn try_retry(&self, now: Instant, _cause: AttemptOutcome) -> bool {
        let slot = self.slot_number(now);
        let rest = self.others(slot).saturating_add(self.reserve);
        // The check and the withdrawal are one compare-and-swap on the current slot, so two
        // threads in the same slot cannot both take the last retry.
        let Some(counted_in) = self.update(slot, |own| {
            (own.saturating_add(rest) >= RETRY).then(|| own.saturating_sub(RETRY))
        }) else {
            return false;
        };
        // `rest` may be stale: a thread whose clock is in another slot may have spent from
        // its own slot meanwhile. Our withdrawal is visible now, so a fresh total that is
        // still covered proves the retry was paid for; otherwise give it back. Contention can
        // deny a retry that would have fitted, never grant one that did not.
        if self.available_centi(now) >= 0 {
            return true;
        }
        // Give it back to the slot it was taken from; if that slot has expired meanwhile,
        // the withdrawal expired with it and there is nothing to give back.
        self.give_back(counted_in);
        false
    }

    fn on_retry_cancelled(&self, _now: Instant, granted_at: Instant, _cause: AttemptOutcome) {
        // The slot of the grant's `now`: a withdrawal counted into a newer slot (a caller
        // whose clock lagged) is in another window and is not found there, so it stays spent.
        self.give_back(self.slot_number(granted_at));
    }
}

impl RatioBudget {
    /// Gives one retry back to `slot`, if its cell still holds that slot.
    fn give_back(&self, slot: u64) {
        if let Some(cell) = self.cell(slot) {
            let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |word| {
                let (held, balance) = unpack(word);
                (held == slot).then(|| pack(held, balance.saturating_add(RETRY)))
            });
        }
    }
}

fn pack(slot: u64, balance: i64) -> u128 {
    (u128::from(slot) << 64) | u128::from(balance as u64)
}

fn unpack(word: u128) -> (u64, i64) {
    ((word >> 64) as u64, word as u64 as i64)
}

/// The balance a cell contributes at slot `slot`: its own if it holds one of the window's
/// slots (or a newer one), else nothing (it expired).
fn live_balance(word: u128, slot: u64) -> i64 {
    let (held, balance) = unpack(word);
    if held >= slot || slot - held < SLOTS as u64 {
        balance
    } else {
        0
    }
}
