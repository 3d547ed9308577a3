//! The long soak: `cargo run --release -p backstop-soak --bin soak [operations] [concurrency]`
//! (defaults: 100,000 operations at concurrency 64). Prints the report and exits non-zero if
//! a check failed.

#![allow(clippy::print_stdout)]

use backstop_soak::soak::{self, Config};

fn main() {
    let mut args = std::env::args().skip(1);
    let operations = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let concurrency = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let report = soak::run(Config::new(operations, concurrency));
    print!("{}", soak::render(&report));
    let problems = report.problems(soak::RSS_GROWTH_KIB);
    for p in &problems {
        println!("FAILED: {p}");
    }
    if !problems.is_empty() {
        std::process::exit(1);
    }
}
