//! `cargo run --example download -- URL FILE` as a user runs it: a body cut mid-way resumes
//! into a byte-exact FILE (exit 0); a changed file on the server or a 404 exits non-zero with
//! one line on stderr and leaves nothing, neither FILE nor its temporary file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use backstop_tests::server::{Action, Fault, Reply, Representation, Served, Server};

/// 64 KiB that tell every offset apart.
fn content() -> Vec<u8> {
    (0..64 * 1024u32).map(|i| (i % 251) as u8).collect()
}

/// The example's binary, built once for this run: `cargo test --test ...` builds no example,
/// and one left from an earlier build could be stale.
fn example() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
        let mut build = Command::new(cargo);
        build.args([
            "build",
            "--quiet",
            "-p",
            "backstop-tests",
            "--example",
            "download",
        ]);
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        // What cargo set for this test, not for a build: a build script that watches one of
        // them (ring's, `CARGO_MANIFEST_DIR`) would make this build dirty, and the next too.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            let of_this_test = name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_BIN_EXE_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_CRATE_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                ]
                .contains(&&*name);
            if of_this_test {
                build.env_remove(&*name);
            }
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "the example builds");
        // This test is target/<profile>/deps/<name>; examples are target/<profile>/examples.
        let exe = std::env::current_exe().expect("the test's path");
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>");
        profile
            .join("examples")
            .join(format!("download{}", std::env::consts::EXE_SUFFIX))
    })
}

/// A directory of its own under the system's temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(case: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "backstop-download-{case}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }

    /// The names left in the directory.
    fn left(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .expect("the scratch directory")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn download(url: &str, file: &Path) -> Output {
    Command::new(example())
        .arg(url)
        .arg(file)
        .output()
        .expect("the example runs")
}

/// The one line on stderr.
fn problem(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    stderr
}

#[test]
fn a_reset_mid_body_resumes_into_the_whole_file() {
    let server = Server::always(Action::Serve(
        Served::new(Representation::new(content()).strong_etag("v1"))
            .faults([Fault::ResetAt(20_000)]),
    ));
    let scratch = Scratch::new("reset");
    let file = scratch.0.join("file.bin");
    let output = download(&server.url("/file"), &file);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        std::fs::read(&file).expect("FILE") == content(),
        "byte-exact"
    );
    assert_eq!(scratch.left(), ["file.bin"], "no temporary file left");
    assert_eq!(server.requests(), 2, "the first request and one resume");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("saved 65536 bytes"), "{stdout}");
    assert!(stdout.contains("resumed 1 time(s)"), "{stdout}");
}

#[test]
fn a_file_that_changed_on_the_server_leaves_nothing() {
    let v2 = Representation::new(vec![9u8; 64 * 1024]).strong_etag("v2");
    let server = Server::always(Action::Serve(
        Served::new(Representation::new(content()).strong_etag("v1"))
            .faults([Fault::CloseAt(10_000)])
            .new_version_from(2, v2),
    ));
    let scratch = Scratch::new("changed");
    let output = download(&server.url("/file"), &scratch.0.join("file.bin"));
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let problem = problem(&output);
    assert!(problem.contains("changed representation"), "{problem}");
    assert_eq!(
        scratch.left(),
        Vec::<String>::new(),
        "neither FILE nor its temporary file"
    );
}

#[test]
fn a_404_leaves_nothing() {
    let server = Server::always(Reply::status(404).body("no such thing"));
    let scratch = Scratch::new("404");
    let output = download(&server.url("/missing"), &scratch.0.join("file.bin"));
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(
        problem(&output),
        "download: the server answered 404 Not Found\n"
    );
    assert_eq!(scratch.left(), Vec::<String>::new());
}

#[test]
fn a_missing_argument_or_a_bad_url_is_a_usage_error() {
    let scratch = Scratch::new("usage");
    let file = scratch.0.join("file.bin");
    for args in [vec![], vec!["http://127.0.0.1:1/"], vec!["not a url", "x"]] {
        let output = Command::new(example())
            .args(&args)
            .current_dir(&scratch.0)
            .output()
            .expect("the example runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("usage:"), "{args:?}: {stderr}");
    }
    assert!(!file.exists());
    assert_eq!(scratch.left(), Vec::<String>::new());
}
