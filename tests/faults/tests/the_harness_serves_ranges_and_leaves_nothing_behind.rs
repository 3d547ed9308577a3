//! The harness itself: the server in the namespace answers a `Range` request for a resumable
//! body with 206, its `Content-Range` and the same strong `ETag` (what resumption scenarios
//! build on), and a `FaultNet` dropped, even by a panic, leaves no namespace, no veth and no
//! nftables table behind.

use std::process::Command;
use std::time::Duration;

use backstop_faults::{body, FaultNet, Reply, Server};

const TOTAL: usize = 3 << 20;
const OFFSET: usize = 1_234_567;

fn ip(args: &[&str]) -> String {
    let output = Command::new("ip").args(args).output().expect("ip runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_range_request_gets_the_rest_of_a_resumable_body_as_a_206_with_the_same_etag() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let reply = Reply::status(200).body(body::pattern(TOTAL)).resumable();
    let server = net
        .serve(|| Server::start_on(net.server_ip().into(), [reply]))
        .expect("entered the namespace")
        .expect("bound in the namespace");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();

    let mut whole = agent.get(server.url("/big")).call().expect("a response");
    let etag = whole.headers()["etag"].to_str().expect("ASCII").to_owned();
    assert!(etag.starts_with('"'), "a strong tag: {etag}");
    assert_eq!(whole.body_mut().read_to_vec().expect("a body").len(), TOTAL);

    let mut rest = agent
        .get(server.url("/big"))
        .header("Range", format!("bytes={OFFSET}-"))
        .header("If-Range", &etag)
        .call()
        .expect("a response");
    assert_eq!(rest.status(), 206);
    assert_eq!(
        rest.headers()["content-range"],
        format!("bytes {OFFSET}-{}/{TOTAL}", TOTAL - 1).as_str()
    );
    assert_eq!(rest.headers()["etag"], etag.as_str());
    let rest = rest.body_mut().read_to_vec().expect("a body");
    assert!(
        rest == body::pattern(TOTAL)[OFFSET..],
        "the rest, from the offset"
    );
    assert_eq!(server.recorded()[1].field("range"), Some("bytes=1234567-"));
}

#[test]
fn a_fault_net_dropped_by_a_panic_leaves_no_namespace_veth_or_table() {
    let Some(probe) = FaultNet::for_test() else {
        return;
    };
    drop(probe);
    let made = std::panic::catch_unwind(|| {
        let net = FaultNet::new().expect("made");
        net.drop_all().expect("installed");
        let name = net.name().to_owned();
        assert!(ip(&["netns", "list"]).contains(&name));
        let host_dev = ip(&["-o", "addr", "show", "to", &format!("{}/30", net.host_ip())]);
        assert!(!host_dev.is_empty(), "the host's end has its address");
        std::panic::panic_any((name, host_dev, net.host_ip()));
    });
    let payload = made.expect_err("it panicked");
    let (name, host_dev, host_ip) = payload
        .downcast_ref::<(String, String, std::net::Ipv4Addr)>()
        .expect("the test's own panic")
        .clone();
    assert!(!ip(&["netns", "list"]).contains(&name), "{name} remains");
    let addresses = ip(&["-o", "addr", "show"]);
    assert!(
        !addresses.contains(&format!(" {host_ip}/")),
        "the veth remains: {host_dev}"
    );
    assert!(
        !std::path::Path::new(&format!("/var/run/netns/{name}")).exists(),
        "{name}'s mount remains"
    );
    // The fault's table lived in the namespace; none was ever made in the host's.
    let tables = Command::new("nft")
        .args(["list", "tables"])
        .output()
        .expect("nft runs");
    assert!(!String::from_utf8_lossy(&tables.stdout).contains("bsfault"));
}
