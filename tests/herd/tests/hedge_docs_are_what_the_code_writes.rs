//! The committed `docs/hedge` (tables and both figures, seed 2012, N = 50,000) is what the
//! code writes today, byte for byte. The experiment is a function of its seed and of the
//! code, so a change of the machine's behaviour that moves the numbers fails here until
//! the files are regenerated, and a run that depended on anything else (the wall clock, the
//! threads, a hash order) would fail against files another process wrote.
//!
//! The full N takes seconds in release and minutes in debug: run it with
//! `cargo test --release -p backstop-herd --test hedge_docs_are_what_the_code_writes`.

use std::path::Path;

use backstop_herd::cli;
use backstop_herd::hedge_outputs::{self, FILES};
use backstop_herd::hedging::Config;

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "the full N = 50,000 takes minutes in debug: run it with --release"
)]
fn the_committed_hedging_docs_are_what_the_code_writes() {
    let config = Config::default();
    let outcomes = hedge_outputs::run(&config);
    let checks = hedge_outputs::checks(&outcomes);
    let md = hedge_outputs::markdown(&config, &outcomes, &checks);
    let fresh = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hedge-docs");
    hedge_outputs::write(&fresh, &config, &outcomes, &md).expect("the outputs are written");

    let committed = cli::docs_dir("hedge");
    for file in FILES {
        let (now, then) = (read(&fresh.join(file)), read(&committed.join(file)));
        assert!(
            now == then,
            "docs/hedge/{file} is not what the code writes; regenerate it with \
             `cargo run --release -p backstop-herd --bin hedge`. First differing lines:\n{}",
            first_differences(&then, &now)
        );
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first few lines that differ, committed (`-`) then written (`+`).
fn first_differences(committed: &str, written: &str) -> String {
    committed
        .lines()
        .zip(written.lines())
        .filter(|(a, b)| a != b)
        .take(4)
        .map(|(a, b)| format!("- {a}\n+ {b}\n"))
        .collect()
}
