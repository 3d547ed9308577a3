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
//! Attempts' results do not enter it (it keeps [`Budget::on_attempt_end`]'s default, which
//! does nothing): a final 400 and a 200 count alike, as one operation started, as in Finagle's
//! and tower's budgets, which count requests and retries only.
//!
//! Charged when the machine grants a retry; a granted retry that is never sent (an abort
//! during its wait, a deadline reached first) is paid back into the slot it was taken from,
//! unless that slot has expired meanwhile (then the withdrawal expired with it).
//!
//! The window is [`SLOTS`](RatioBudget::SLOTS) slots of `window / SLOTS`. Each slot's balance
//! (in hundredths of a retry) sits in one 64-bit cell beside the low 16 bits of the slot number
//! it belongs to, and a running total holds the sum of the window's cells, so a decision reads
//! one total instead of summing the slots. Expiry is lazy: the first call in a new slot (the
//! budget keeps the newest slot number any caller reached, in full) takes each slot that has
//! left the window out of its cell and out of the total, at most `SLOTS` of them however much
//! time has passed, so a balance that expired stays expired however many slots pass. Time
//! comes only from the `now` the machine passes in; a caller whose `now` lags behind the newest
//! slot counts into its own slot while that is still in the window, and into the slot that
//! has taken its cell since otherwise.
//!
//! Concurrency: a retry is granted by one compare-and-swap on the total that checks and
//! withdraws together, so callers can never overdraw the budget together, in the same slot or
//! across a slot boundary: the total never counts more than the window of the newest slot
//! reached holds (a slot leaving the window is taken out of the total before it is taken out of
//! its cell, and a deposit enters its cell before the total). Under contention a retry that
//! would just have fitted may be denied instead. The budget's clock is the newest slot any
//! caller reached: a caller whose `now` lags behind it (a thread preempted between reading
//! its clock and calling) is answered from the newest slot's window rather than its own, which
//! differs from it by the slot that left the window at the boundary between them, and its
//! deposit or withdrawal still counts in its own slot. A caller lagging a whole window or more
//! counts into the newer slot that now holds its cell. Deposits fill a slot, and the reserve is
//! capped, at 2^43 hundredths of a retry (88 billion retries).

use core::sync::atomic::Ordering;

use core::num::NonZeroU64;
use core::time::Duration;
use portable_atomic::{AtomicI64, AtomicU64};

use super::{Budget, BudgetConfigError};
use crate::decision::AttemptOutcome;
use crate::time::Instant;

/// Hundredths of a retry per retry: the cost of one retry.
const RETRY: i64 = 100;
const SLOTS: usize = 10;
const DAY_NANOS: u128 = 86_400 * 1_000_000_000;
/// A cell: the balance in the high 48 bits (two's complement), the slot number's low 16 bits
/// below it. The tag only tells a refund whether its slot still holds the cell; what has
/// expired is decided by the full newest slot number.
const TAG_BITS: u32 = 16;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
/// What deposits and refunds fill a cell to, and the largest reserve: 2^43 hundredths (88
/// billion retries). A withdrawal needs the window's total plus the reserve to cover it, so a
/// cell never falls below `-(SLOTS * CAP)`: withdrawals are added to their cell without a check
/// and can never reach the 48 bits' limit of `-2^47`.
const CAP: i64 = 1 << 43;

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
    slot_nanos: NonZeroU64,
    /// The newest slot number any caller reached; every slot that left the window before it
    /// has been taken out of `cells` and `total`.
    newest: AtomicU64,
    /// The sum of the cells' balances: the window's balance, without the reserve.
    total: AtomicI64,
    cells: [AtomicU64; SLOTS],
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
        let reserve = (min_per_sec as u128 * window_nanos * RETRY as u128) / 1_000_000_000;
        let reserve = if reserve > CAP as u128 {
            CAP
        } else {
            reserve as i64
        };
        // At least 100 (the window is at least 1 µs) and below a day.
        let Some(slot_nanos) = NonZeroU64::new((window_nanos / SLOTS as u128) as u64) else {
            return Err(BudgetConfigError::WindowOutOfRange);
        };
        Ok(RatioBudget {
            deposit: percent as i64,
            reserve,
            slot_nanos,
            newest: AtomicU64::new(0),
            total: AtomicI64::new(0),
            cells: [const { AtomicU64::new(0) }; SLOTS],
        })
    }

    /// The window's length.
    #[must_use]
    pub const fn window(&self) -> Duration {
        Duration::from_nanos(self.slot_nanos.get() * SLOTS as u64)
    }

    /// What is left at `now`, in hundredths of a retry (a retry costs 100). It may be
    /// negative after the deposits that paid for recent retries expired. Reads only: the
    /// slots that `now` would expire are left out of the sum, not taken out of the budget.
    #[must_use]
    pub fn available_centi(&self, now: Instant) -> i64 {
        let slot = self.slot_number(now);
        let newest = self.newest.load(Ordering::Acquire);
        let mut sum = self.total.load(Ordering::Relaxed);
        for starting in expiring(newest, slot) {
            let Some(cell) = self.cell(starting) else {
                continue;
            };
            let word = cell.load(Ordering::Relaxed);
            // A cell that already holds `starting` was expired by a caller in that slot.
            if tag(word) != tag_of(starting) {
                sum = sum.saturating_sub(balance(word));
            }
        }
        sum.saturating_add(self.reserve)
    }

    /// The slot number of `now`: the count of slot lengths since the epoch.
    fn slot_number(&self, now: Instant) -> u64 {
        now.nanos() / self.slot_nanos
    }

    /// The cell that holds `slot`.
    fn cell(&self, slot: u64) -> Option<&AtomicU64> {
        // `slot % SLOTS` is always an index of `cells`: `None` cannot happen (and the check is
        // compiled out).
        self.cells.get((slot % SLOTS as u64) as usize)
    }

    /// The slot of `now`, made the newest slot if it is newer (what left the window expired
    /// first).
    #[inline]
    fn reach(&self, now: Instant) -> u64 {
        let newest = self.newest.load(Ordering::Acquire);
        // Usually `now` is in the newest slot: a multiplication tells, no division needed.
        let since = now
            .nanos()
            .wrapping_sub(newest.wrapping_mul(self.slot_nanos.get()));
        if since < self.slot_nanos.get() {
            return newest;
        }
        let slot = self.slot_number(now);
        if slot > newest {
            self.advance(newest, slot);
        }
        slot
    }

    /// Expires the slots that leave the window between `newest` and `slot`, then publishes
    /// `slot` as the newest. Any number of callers may run this at once: each expired balance
    /// is taken out of its cell by exactly one of them.
    #[inline(never)]
    fn advance(&self, newest: u64, slot: u64) {
        let starting = expiring(newest, slot);
        // The cells in turn from the first one's, without a division per cell.
        let mut index = (starting.start % SLOTS as u64) as usize;
        for s in starting {
            if let Some(cell) = self.cells.get(index) {
                self.expire_into(cell, s);
            }
            index = if index + 1 == SLOTS { 0 } else { index + 1 };
        }
        // Release: a caller that sees `slot` as the newest sees the expired balances gone.
        self.newest.fetch_max(slot, Ordering::AcqRel);
    }

    /// `starting` takes over its cell: the balance the cell held (a slot that is leaving the
    /// window, and anything a caller lagging by a window added since) expires.
    #[inline(always)]
    fn expire_into(&self, cell: &AtomicU64, starting: u64) {
        let fresh = pack(0, starting);
        let mut word = cell.load(Ordering::Relaxed);
        // Writes into `starting`'s slot begin only once it is published as the newest (or
        // older), so until then everything in the cell has expired; once it is published,
        // whoever published it expired the cell.
        while self.newest.load(Ordering::Acquire) < starting {
            let expired = balance(word);
            // Out of the total before out of the cell: the total never counts a balance that
            // a slower caller is still expiring (a failed swap puts it back).
            if expired != 0 {
                self.total.fetch_sub(expired, Ordering::Relaxed);
            }
            match cell.compare_exchange_weak(word, fresh, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(current) => {
                    if expired != 0 {
                        self.total.fetch_add(expired, Ordering::Relaxed);
                    }
                    word = current;
                }
            }
        }
    }

    /// Adds `deposit` to `slot`'s cell (whatever slot now holds it), up to [`CAP`]. Returns
    /// what was added.
    fn deposit_into(&self, slot: u64, deposit: i64) -> i64 {
        let Some(cell) = self.cell(slot) else {
            return 0;
        };
        let (Ok(before) | Err(before)) =
            cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some(plus(w, deposit))
            });
        balance(plus(before, deposit)) - balance(before)
    }
}

impl Budget for RatioBudget {
    fn on_operation_start(&self, now: Instant) {
        let slot = self.reach(now);
        // Into the cell first, then the total: the total never runs ahead of the cells.
        let added = self.deposit_into(slot, self.deposit);
        if added != 0 {
            self.total.fetch_add(added, Ordering::Relaxed);
        }
    }

    fn try_retry(&self, now: Instant, _cause: AttemptOutcome) -> bool {
        let slot = self.reach(now);
        // The check and the withdrawal are one compare-and-swap on the total, so two callers
        // cannot both take the last retry.
        // No overflow: the reserve is at most `CAP` and the total at most `SLOTS * CAP`.
        let reserve = self.reserve;
        let granted = self
            .total
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |total| {
                (total + reserve >= RETRY).then_some(total - RETRY)
            })
            .is_ok();
        if let (true, Some(cell)) = (granted, self.cell(slot)) {
            // No check needed: the cell stays above `-(SLOTS * CAP)` (see `CAP`).
            cell.fetch_sub((RETRY as u64) << TAG_BITS, Ordering::Relaxed);
        }
        granted
    }

    fn on_retry_cancelled(&self, _now: Instant, granted_at: Instant, _cause: AttemptOutcome) {
        // The slot of the grant's `now`, while it is still in the window and still holds its
        // cell: a withdrawal counted into a newer slot (a caller whose clock lagged by a
        // window) is in another window and is not found there, so it stays spent.
        let slot = self.slot_number(granted_at);
        let Some(cell) = self.cell(slot) else {
            return;
        };
        let returned = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            let newest = self.newest.load(Ordering::Acquire);
            let live = slot <= newest && newest - slot < SLOTS as u64;
            (live && tag(w) == tag_of(slot)).then(|| plus(w, RETRY))
        });
        if let Ok(before) = returned {
            let added = balance(plus(before, RETRY)) - balance(before);
            self.total.fetch_add(added, Ordering::Relaxed);
        }
    }
}

/// The slots that start (and so expire the slot `SLOTS` before each) when the newest slot
/// moves from `newest` to `slot`: the last `SLOTS` of them at most, none if `slot` is not newer.
fn expiring(newest: u64, slot: u64) -> core::ops::Range<u64> {
    // Slot numbers are below `u64::MAX / 100`: no sum here can overflow.
    (newest + 1).max((slot + 1).saturating_sub(SLOTS as u64))..slot + 1
}

fn pack(balance: i64, slot: u64) -> u64 {
    ((balance as u64) << TAG_BITS) | tag_of(slot)
}

fn tag_of(slot: u64) -> u64 {
    slot & TAG_MASK
}

fn tag(word: u64) -> u64 {
    word & TAG_MASK
}

/// The balance of a cell, sign-extended from its 48 bits.
fn balance(word: u64) -> i64 {
    (word as i64) >> TAG_BITS
}

/// The cell `word` with `amount` (0 to 10,000) added to its balance, up to [`CAP`] (which no
/// balance exceeds).
fn plus(word: u64, amount: i64) -> u64 {
    pack((balance(word) + amount).min(CAP), word)
}
