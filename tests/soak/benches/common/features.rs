//! The retriers of the per-GET probes' `backstop*` ways: backstop as shipped, and with each
//! feature on that a GET answered 200 at once should not pay for (its anchor is `backstop`).

use std::sync::Arc;
use std::time::Duration;

use backstop::{Hedging, Policy, RatioBudget, Retrier};

/// The retrier of the way `name`, if it is a `backstop*` way with a retrier of its own:
///
/// - `backstop`: `Retrier::default()`;
/// - `backstop-hedging`: a policy that hedges after a fixed second (two copies at most): a GET
///   answered at once never sends its backup, but takes the hedged path;
/// - `backstop-gates`: an `OriginGates` (default `GateConfig`) and an `AdaptiveRateLimiter`,
///   neither acting;
/// - `backstop-events`: one observer (`Retrier::on_event`) that reads each event;
/// - `backstop-budget`: a shared `RatioBudget` (20 % of operations, 20 retries a second, 10 s).
pub fn retrier(name: &str) -> Option<Retrier> {
    Some(match name {
        "backstop" => Retrier::default(),
        "backstop-hedging" => Retrier::new(
            Policy::builder()
                .hedging(Hedging::fixed(Duration::from_secs(1)))
                .build()
                .unwrap(),
        ),
        "backstop-gates" => {
            let gates = backstop::OriginGates::new(backstop::GateConfig::new()).unwrap();
            Retrier::default()
                .origin_gates(Arc::new(gates))
                .rate_limiter(Arc::new(backstop::AdaptiveRateLimiter::new()))
        }
        "backstop-events" => Retrier::default().on_event(|event| {
            std::hint::black_box(event);
        }),
        "backstop-budget" => Retrier::default().budget(Arc::new(
            RatioBudget::new(20, 20, Duration::from_secs(10)).unwrap(),
        )),
        _ => return None,
    })
}
