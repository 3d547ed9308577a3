//! Every feature of `backstop` switches some code on: a feature that gates nothing (as `json`
//! once did, while the docs promised "events and metrics as JSON lines") is a promise the
//! crate does not keep. Read from the manifest and the sources: each feature (but the
//! internal `hyper`, shared by the front doors) is named by a `cfg(feature = ..)` in
//! `adapters/src`, or enables another feature that is.

use std::path::Path;

fn sources(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).expect("adapters/src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push_str(&std::fs::read_to_string(&path).expect("a source file"));
        }
    }
}

#[test]
fn every_feature_switches_code_on() {
    let adapters = Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters");
    let manifest = std::fs::read_to_string(adapters.join("Cargo.toml")).expect("the manifest");
    let mut code = String::new();
    sources(&adapters.join("src"), &mut code);
    let features: Vec<(String, String)> = manifest
        .split("[features]")
        .nth(1)
        .expect("a [features] table")
        .split("\n[")
        .next()
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(" = "))
        .map(|(name, enables)| (name.trim().to_owned(), enables.to_owned()))
        .filter(|(name, _)| name != "default")
        .collect();
    assert!(features.len() >= 7, "{features:?}");
    let gates = |name: &str| code.contains(&format!("feature = \"{name}\""));
    for (name, enables) in &features {
        let through = features
            .iter()
            .any(|(other, _)| enables.contains(&format!("\"{other}\"")) && gates(other));
        assert!(
            gates(name) || through,
            "the feature `{name}` switches no code on: no `cfg(feature = \"{name}\")` in adapters/src"
        );
    }
}
