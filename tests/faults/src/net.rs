//! [`FaultNet`]: a network namespace behind a veth pair, whose traffic the kernel can be told
//! to drop, reset or blackhole.
//!
//! The host keeps one end of the veth pair (`10.213.X.Y.1/30`), the namespace the other
//! (`.2`); a server started inside the namespace ([`FaultNet::serve`]) is reached at
//! [`FaultNet::server_ip`], over the veth only, so its traffic crosses the namespace's
//! netfilter hooks where [`crate::Fault`]s are installed, and never leaves the machine.
//! Names (`backstop-fault-<pid>-<n>`) and subnets are unique per instance, so tests run in
//! parallel, in one process and across processes.

use std::fs::File;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sched::{setns, CloneFlags};

use crate::command::{run, FaultError};
use crate::fault::{self, Fault};
use crate::skip::{self, Skip, Tools, REQUIRED_VAR};

/// The prefix of every namespace the harness makes (stale ones are found by it).
const NAME_PREFIX: &str = "backstop-fault-";
/// Instances made by this process so far: the `<n>` of the names.
static NEXT: AtomicU32 = AtomicU32::new(0);
/// Held while a subnet is chosen and assigned, so two instances of one process never take
/// the same one.
static SUBNETS: Mutex<()> = Mutex::new(());
/// The /30 subnets used: `10.213.0.0/16`, 16384 of them.
const SUBNETS_IN_RANGE: u32 = 1 << 14;

/// A network namespace joined to the host by a veth pair, and the faults installed on it.
///
/// Dropping it deletes the veth pair, the namespace and with it its nftables table, also
/// when a test panics (the `Drop` runs while unwinding).
#[derive(Debug)]
pub struct FaultNet {
    tools: Tools,
    name: String,
    table: String,
    host_dev: String,
    ns_dev: String,
    host_ip: Ipv4Addr,
    server_ip: Ipv4Addr,
    current: Mutex<Vec<Fault>>,
    /// Whether `ip netns add` succeeded (what `Drop` has to delete).
    made: bool,
}

impl FaultNet {
    /// Makes a namespace, a veth pair with a /30 between it and the host, and brings the
    /// links up. `Err` says why this machine cannot ([`Skip`]).
    pub fn new() -> Result<FaultNet, Skip> {
        let tools = skip::probe()?;
        remove_stale(&tools);
        let pid = std::process::id();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let id = format!("{pid:x}x{n}");
        let mut net = FaultNet {
            name: format!("{NAME_PREFIX}{pid}-{n}"),
            table: format!("bsfault_{id}"),
            host_dev: format!("bf{id}h"),
            ns_dev: format!("bf{id}n"),
            tools,
            host_ip: Ipv4Addr::UNSPECIFIED,
            server_ip: Ipv4Addr::UNSPECIFIED,
            current: Mutex::new(Vec::new()),
            made: false,
        };
        // On an error `net` drops here and removes whatever part was made.
        net.set_up().map_err(|e| {
            if e.is_permission() {
                Skip::NotPermitted(e.to_string())
            } else {
                Skip::SetupFailed(e.to_string())
            }
        })?;
        Ok(net)
    }

    /// [`FaultNet::new`] for a test: `None` after printing `SKIPPED: reason` when the machine
    /// cannot make one.
    ///
    /// # Panics
    ///
    /// When the machine should have made one: setting up failed on a capable machine, or
    /// [`REQUIRED_VAR`] is `1` (CI), where a skip would hide a suite that never ran.
    #[must_use]
    pub fn for_test() -> Option<FaultNet> {
        match FaultNet::new() {
            Ok(net) => Some(net),
            Err(skip) if !skip.is_environment() => panic!("{skip}"),
            Err(skip) if std::env::var(REQUIRED_VAR).is_ok_and(|v| v == "1") => {
                panic!("{REQUIRED_VAR}=1, and the fault suite cannot run here: {skip}")
            }
            Err(skip) => {
                println!("SKIPPED: {skip}");
                None
            }
        }
    }

    /// The namespace's name (`ip netns exec NAME ...`).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host's end of the veth pair: where the server's peers connect from.
    #[must_use]
    pub fn host_ip(&self) -> Ipv4Addr {
        self.host_ip
    }

    /// The namespace's end of the veth pair: where a server in the namespace listens.
    #[must_use]
    pub fn server_ip(&self) -> Ipv4Addr {
        self.server_ip
    }

    /// Runs `f` on a thread inside the namespace and returns what it returned. Sockets made
    /// there stay in the namespace (a listener bound to [`FaultNet::server_ip`], say), and so
    /// do the threads that thread spawns (a server's accept loop).
    ///
    /// A panic of `f` is resumed on the caller's thread.
    pub fn serve<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, FaultError> {
        let path = format!("/var/run/netns/{}", self.name);
        let namespace = File::open(&path).map_err(|error| FaultError::Os {
            doing: format!("opening {path}"),
            error,
        })?;
        let entered = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    setns(&namespace, CloneFlags::CLONE_NEWNET).map_err(|errno| {
                        FaultError::Os {
                            doing: format!("setns into {path}"),
                            error: errno.into(),
                        }
                    })?;
                    Ok(f())
                })
                .join()
        });
        entered.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    /// Drops every packet between the host and the namespace, both ways: a connection goes
    /// half-open (its peer sees no error, only silence), a connect never completes.
    pub fn drop_all(&self) -> Result<(), FaultError> {
        self.inject(&[Fault::DropAll])
    }

    /// Answers every packet of an established TCP connection from the host with a TCP reset.
    pub fn reset_established(&self) -> Result<(), FaultError> {
        self.inject(&[Fault::ResetEstablished])
    }

    /// Drops new connections from the host (their SYNs): a connect that never completes.
    pub fn blackhole_new(&self) -> Result<(), FaultError> {
        self.inject(&[Fault::BlackholeNew])
    }

    /// Drops every packet of the connection from the host's `client_port` (a request's
    /// [`crate::Recorded::peer`]), both ways: that connection goes half-open, and a new one
    /// (a resume's) goes through, where [`FaultNet::drop_all`] would drop it too.
    pub fn drop_connection(&self, client_port: u16) -> Result<(), FaultError> {
        self.inject(&[Fault::DropConnection { client_port }])
    }

    /// Resets the established connection from the host's `client_port` (a request's
    /// [`crate::Recorded::peer`]) at its client's next packet; a new one goes through.
    pub fn reset_connection(&self, client_port: u16) -> Result<(), FaultError> {
        self.inject(&[Fault::ResetConnection { client_port }])
    }

    /// Removes the faults: packets flow again, and TCP's retransmissions resume what stalled.
    pub fn heal(&self) -> Result<(), FaultError> {
        self.inject(&[])
    }

    /// Replaces the faults in force with `faults`, all at once (one transaction): a
    /// connection cut while new ones are blackholed, say. None: healed.
    pub fn inject(&self, faults: &[Fault]) -> Result<(), FaultError> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let script = fault::script(&self.table, &self.ns_dev, faults);
        self.in_namespace(&self.tools.nft, &["-f", "-"], Some(&script))?;
        *current = faults.to_vec();
        Ok(())
    }

    /// The faults in force now (none when healed).
    #[must_use]
    pub fn faults(&self) -> Vec<Fault> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The packets the faults in force have dropped or reset so far, all together (0 when
    /// healed).
    pub fn faulted_packets(&self) -> Result<u64, FaultError> {
        if self.faults().is_empty() {
            return Ok(0);
        }
        let listing = self.in_namespace(
            &self.tools.nft,
            &["list", "table", "inet", &self.table],
            None,
        )?;
        Ok(fault::counted_packets(&listing))
    }

    /// Waits until the faults in force have dropped or reset at least `n` packets, at most
    /// `timeout`, polling every 5 ms: how many it had at the end (compare with `n`).
    pub fn wait_for_faulted_packets(&self, n: u64, timeout: Duration) -> Result<u64, FaultError> {
        let deadline = Instant::now() + timeout;
        loop {
            let counted = self.faulted_packets()?;
            if counted >= n || Instant::now() >= deadline {
                return Ok(counted);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Runs `program args` inside the namespace (`ip netns exec`).
    fn in_namespace(
        &self,
        program: &std::path::Path,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Result<String, FaultError> {
        let program = program.to_string_lossy();
        let mut all = vec!["netns", "exec", &self.name, &program];
        all.extend_from_slice(args);
        run(&self.tools.ip, &all, stdin)
    }

    /// `ip` with `args`.
    fn ip(&self, args: &[&str]) -> Result<String, FaultError> {
        run(&self.tools.ip, args, None)
    }

    /// The namespace, the veth pair, the addresses, the links up.
    fn set_up(&mut self) -> Result<(), FaultError> {
        // A namespace of this name was left by a killed process that had this pid: no live
        // instance has it (the counter is this process's own).
        if std::path::Path::new(&format!("/var/run/netns/{}", self.name)).exists() {
            let _ = self.ip(&["netns", "del", &self.name]);
        }
        self.ip(&["netns", "add", &self.name])?;
        self.made = true;
        self.ip(&[
            "link",
            "add",
            &self.host_dev,
            "type",
            "veth",
            "peer",
            "name",
            &self.ns_dev,
        ])?;
        self.ip(&["link", "set", &self.ns_dev, "netns", &self.name])?;
        let _held = SUBNETS.lock().unwrap_or_else(PoisonError::into_inner);
        let index = self.free_subnet()?;
        // 10.213.0.0/16 in /30s: network, host, server, broadcast.
        let base = u32::from(Ipv4Addr::new(10, 213, 0, 0)) + index * 4;
        self.host_ip = Ipv4Addr::from(base + 1);
        self.server_ip = Ipv4Addr::from(base + 2);
        let host_cidr = format!("{}/30", self.host_ip);
        let server_cidr = format!("{}/30", self.server_ip);
        self.ip(&["addr", "add", &host_cidr, "dev", &self.host_dev])?;
        self.ip(&["link", "set", &self.host_dev, "up"])?;
        let ns = self.name.clone();
        self.ip(&["-n", &ns, "addr", "add", &server_cidr, "dev", &self.ns_dev])?;
        self.ip(&["-n", &ns, "link", "set", &self.ns_dev, "up"])?;
        self.ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        Ok(())
    }

    /// A /30 of the range that no address of the host is in: the first free one from a
    /// place the pid and the instance number choose (another process's instances start
    /// elsewhere).
    fn free_subnet(&self) -> Result<u32, FaultError> {
        let used = self.ip(&["-4", "-o", "addr", "show"])?;
        let start = (std::process::id() % 1024) * 16 + NEXT.load(Ordering::Relaxed) % 16;
        (0..SUBNETS_IN_RANGE)
            .map(|k| (start + k) % SUBNETS_IN_RANGE)
            .find(|index| {
                let third = index / 64;
                let fourth = (index % 64) * 4;
                (1..=2).all(|host| {
                    let address = format!(" 10.213.{third}.{}/", fourth + host);
                    !used.contains(&address)
                })
            })
            .ok_or_else(|| FaultError::Command {
                command: "ip -4 -o addr show".into(),
                status: "every subnet in use".into(),
                stderr: "no free /30 in 10.213.0.0/16".into(),
            })
    }
}

impl Drop for FaultNet {
    fn drop(&mut self) {
        // Deleting one end deletes the pair at once (deleting the namespace would, but later,
        // from a kernel work queue); the namespace takes its nftables table with it.
        if !self.made {
            return;
        }
        let _ = self.ip(&["link", "del", &self.host_dev]);
        if let Err(e) = self.ip(&["netns", "del", &self.name]) {
            eprintln!("backstop-faults: leaked namespace {}: {e}", self.name);
        }
    }
}

/// Deletes the namespaces of harness processes that are gone (killed before their `Drop`).
fn remove_stale(tools: &Tools) {
    let Ok(list) = run(&tools.ip, &["netns", "list"], None) else {
        return;
    };
    for name in list
        .lines()
        .filter_map(|line| line.split_whitespace().next())
    {
        let Some(pid) = name
            .strip_prefix(NAME_PREFIX)
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = run(&tools.ip, &["netns", "del", name], None);
        }
    }
}
