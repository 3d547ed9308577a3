//! backon's `next()` as the peers benchmark calls it, run `N` times (first argument) for an
//! instruction count to set beside `cycle_probe`'s:
//!
//! ```text
//! cargo build --profile bench -p backstop-peers --example backon_probe
//! valgrind --tool=callgrind target/release/examples/backon_probe 200000   # minus the same
//! valgrind --tool=callgrind target/release/examples/backon_probe 100000   # then / 100000
//! ```

#![allow(clippy::print_stdout)]

use core::time::Duration;

use backon::BackoffBuilder;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut it = backon::ExponentialBuilder::default()
        .with_jitter()
        .without_max_times()
        .with_jitter_seed(1)
        .build();
    let mut total = Duration::ZERO;
    for _ in 0..n {
        if let Some(d) = core::hint::black_box(it.next()) {
            total += d;
        }
    }
    println!("{n} delays, {total:?} in all");
}
