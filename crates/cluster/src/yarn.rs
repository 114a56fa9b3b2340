//! Workers in YARN containers.
//!
//! No maintained Rust client speaks YARN's protocols, so a small Java program does the YARN
//! part (`org.sluice.yarn.Submit`, in `sluice-yarn.jar`): it stages the sluice binary (once
//! per content, as a public resource the node managers cache) and the cluster secret (private
//! to the application), submits the application, and is its master: an unmanaged one, in its
//! own JVM, that takes no container. It only brokers containers. This process decides
//! ([`broker::Fleet`]): it asks for the containers, names what runs in each — `sluice worker
//! --connect COORDINATOR`, which connects back here, proves it knows the secret, and works for
//! the job — replaces failed ones, and ends the application. Everything else — the plan, the
//! tasks, the shuffle, the commit — is the same as with started workers.
//!
//! ```text
//!  sluice (coordinator) ──spawn──► java Submit ══ AMRM, NM protocols ══► ResourceManager,
//!      │  ▲   commands on stdin ─►  (the master)                         NodeManagers
//!      │  │   ◄─ events on stdout                                            │ containers
//!      │  └── sluice worker --connect (authenticated) ◄──────────────────────┘
//! ```

mod broker;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_api::{JobStatus, Phase};
use sluice_exec::InputPlan;
use sluice_net::{Listener, Secret};

use crate::coordinator::{greet, run_linked, ClusterJob, ClusterReport};
use crate::link::{Link, Net};
use crate::ClusterError;
use broker::{Broker, FleetPlan};

/// How to reach YARN and what to ask it for.
#[derive(Debug, Clone)]
pub struct YarnSettings {
    /// The `java` to run the submitter with.
    pub java: PathBuf,
    /// Its class path: Hadoop's client classes and configuration (`hadoop classpath`), and
    /// `sluice-yarn.jar`.
    pub classpath: String,
    /// The sluice binary the containers run.
    pub binary: PathBuf,
    /// The cluster secret's file, staged privately for the containers.
    pub secret_file: PathBuf,
    /// Workers (containers) to run.
    pub workers: usize,
    /// Each worker's memory budget, in bytes (`sluice worker --memory`).
    pub worker_memory: u64,
    /// Memory each container is asked for, in MiB: the budget and what a worker holds
    /// outside it.
    pub container_mb: u64,
    /// Tasks each worker runs at once, and the cores its container is asked for.
    pub threads: usize,
    /// The YARN queue (`None`: the default).
    pub queue: Option<String>,
    /// The application's name.
    pub name: String,
    /// Where this process listens for its workers: an address the cluster's nodes reach.
    pub listen: SocketAddr,
    /// How long to wait for every worker to connect. The job then starts on those that
    /// have (if any); the others join it when YARN starts them.
    pub wait: Duration,
    /// The ports the workers' shuffles may listen on (`sluice worker --shuffle-ports`).
    pub shuffle_ports: Option<crate::PortRange>,
}

/// Memory a container needs beyond a worker's budget, in MiB: the binary, thread stacks,
/// the transport's buffers, and what each running task holds outside the budget.
pub fn container_mb(budget: u64, threads: usize, per_task: u64) -> u64 {
    let outside = (budget / 8).max(256 << 20) + per_task.saturating_mul(threads as u64);
    budget.saturating_add(outside).div_ceil(1 << 20)
}

/// Runs `job` on workers YARN starts for it; the same as [`crate::run_on_workers`] once they
/// have connected.
///
/// # Errors
/// The submitter cannot start, the application fails or no worker connects within
/// [`YarnSettings::wait`]; then as [`crate::run_on_workers`]. The application is
/// killed if it is still running when the job fails.
pub fn run_on_yarn(
    job: ClusterJob<'_>,
    yarn: &YarnSettings,
    secret: &Secret,
    status: Arc<JobStatus>,
) -> Result<ClusterReport, ClusterError> {
    let started = Instant::now();
    status.enter(Phase::Planning, 0);
    // Planned before anything is staged: a missing input fails here, and the containers are
    // asked for where the input is.
    let input = InputPlan::located(job.job, job.config, &job.config.stores)?;
    let net = Net::new()?;
    let listener = net
        .handle()
        .block_on(Listener::bind(yarn.listen, secret.clone()))?;
    let mut args = vec![
        "worker".to_string(),
        "--connect".to_string(),
        listener.local_addr().to_string(),
        "--memory".to_string(),
        yarn.worker_memory.to_string(),
        "--threads".to_string(),
        yarn.threads.to_string(),
    ];
    if let Some(ports) = yarn.shuffle_ports {
        args.extend(["--shuffle-ports".to_string(), ports.to_string()]);
    }
    // Localized beside the binary under this name.
    args.extend(["--secret-file".to_string(), "secret".to_string()]);
    // In the container's working directory, on the NodeManager's local disks: YARN removes
    // it with the container, a container killed outright (preempted, lost) included.
    args.extend(["--scratch".to_string(), "scratch".to_string()]);
    // The programs' logs in the container's log directory (the NodeManager puts its path in
    // place of `<LOG_DIR>`): YARN keeps it after the container and `yarn logs` shows it.
    args.extend(["--log-dir".to_string(), "<LOG_DIR>".to_string()]);
    // Spills on every local disk of the node, as Hadoop's tasks spread theirs: the container's
    // directories there (`LOCAL_DIRS`, which the NodeManager's launch script expands for
    // `{{LOCAL_DIRS}}`), removed with the application.
    args.extend(["--spill-dirs".to_string(), "{{LOCAL_DIRS}}".to_string()]);
    let plan = FleetPlan {
        workers: yarn.workers,
        memory_mb: yarn.container_mb,
        vcores: yarn.threads,
        max_failures: yarn.workers,
        nodes: input_hosts(&input),
        args,
    };
    let mut broker = Broker::start(yarn, plan, Arc::clone(&status))?;
    let links = match wait_for_workers(&net, &listener, &broker, yarn, &status) {
        Ok(links) => links,
        Err(e) => {
            broker.kill();
            return Err(e);
        }
    };
    // Containers started later (replacements of lost ones) join the running job.
    let (joined, joiners) = std::sync::mpsc::channel();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let accepting = {
        let stop = Arc::clone(&stop);
        let handle = net.handle().clone();
        std::thread::spawn(move || accept_joiners(&handle, &listener, &joined, &stop))
    };
    let result = run_linked(
        job,
        links,
        Some(joiners),
        Arc::clone(&status),
        started,
        Some(input),
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = accepting.join();
    // The workers exit once the job is over; then the application ends as the job did.
    match &result {
        Ok(_) => broker.finish(true, "the job succeeded", Duration::from_secs(10)),
        Err(e) => broker.finish(
            false,
            &format!("the job failed: {e}"),
            Duration::from_secs(5),
        ),
    }
    result
}

/// Accepts and greets workers that connect once the job runs, and hands them to the
/// coordinator through `joined`, until `stop` (or the coordinator is gone). A worker that
/// does not greet properly is dropped.
fn accept_joiners(
    handle: &tokio::runtime::Handle,
    listener: &Listener,
    joined: &std::sync::mpsc::Sender<(Link, crate::coordinator::WorkerState)>,
    stop: &std::sync::atomic::AtomicBool,
) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let accepted = handle.block_on(async {
            tokio::time::timeout(Duration::from_millis(200), listener.accept()).await
        });
        let Ok(Ok(conn)) = accepted else {
            continue;
        };
        let name = conn.peer().to_string();
        let link = Link::new(handle.clone(), conn);
        if let Ok(greeted) = greet(link, &name) {
            if joined.send(greeted).is_err() {
                return;
            }
        }
    }
}

/// At most this many hosts are named in a container request.
const MAX_REQUESTED_HOSTS: usize = 64;

/// The hosts holding the input's blocks (files on HDFS), those holding the most splits
/// first: where the workers' containers are asked for. Empty when the input says nothing of
/// hosts (local files, object stores): anywhere.
fn input_hosts(input: &InputPlan) -> Vec<String> {
    let mut splits_on: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for split in &input.splits {
        for host in split.hosts(&input.files) {
            *splits_on.entry(host.as_str()).or_default() += 1;
        }
    }
    let mut hosts: Vec<(&str, usize)> = splits_on.into_iter().collect();
    hosts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    hosts
        .into_iter()
        .take(MAX_REQUESTED_HOSTS)
        .map(|(host, _)| host.to_string())
        .collect()
}

/// Accepts workers until `yarn.workers` have connected and said hello, or until
/// `yarn.wait` has passed and at least one has: YARN may give fewer containers than asked
/// for at first (a busy queue, a scheduler that hands them out slowly), and the job then
/// starts on those it has, the others joining it as they come.
fn wait_for_workers(
    net: &Net,
    listener: &Listener,
    broker: &Broker,
    yarn: &YarnSettings,
    status: &JobStatus,
) -> Result<Vec<(Link, crate::coordinator::WorkerState)>, ClusterError> {
    let deadline = Instant::now() + yarn.wait;
    let mut links = Vec::new();
    while links.len() < yarn.workers {
        status.set_waiting_for(&if broker.registered() {
            format!(
                "waiting for YARN's containers: {} of {} workers connected",
                links.len(),
                yarn.workers
            )
        } else {
            "waiting for YARN to accept the application".to_string()
        });
        if status.is_cancelled() {
            return Err(ClusterError::Exec(sluice_api::ExecError::Cancelled));
        }
        if let Some(over) = broker.over() {
            return Err(ClusterError::Setup(over));
        }
        if Instant::now() > deadline && !links.is_empty() {
            status.note(format!(
                "YARN: {} of {} workers connected within {} s \
                 (-D sluice.yarn.wait.seconds); the job starts on them, and the others join \
                 it when YARN starts their containers ({})",
                links.len(),
                yarn.workers,
                yarn.wait.as_secs(),
                broker.containers()
            ));
            break;
        }
        if Instant::now() > deadline {
            return Err(ClusterError::Setup(format!(
                "{} of {} workers connected within {} s (-D sluice.yarn.wait.seconds); \
                 {}; do the containers reach {}?",
                links.len(),
                yarn.workers,
                yarn.wait.as_secs(),
                broker.progress(),
                listener.local_addr()
            )));
        }
        let accepted = net.handle().block_on(async {
            tokio::time::timeout(Duration::from_millis(200), listener.accept()).await
        });
        if let Ok(conn) = accepted {
            let conn = conn?;
            let name = conn.peer().to_string();
            let link = Link::new(net.handle().clone(), conn);
            // A worker that goes before its hello is one fewer: its container's end is
            // replaced as any other's.
            match greet(link, &name) {
                Ok(greeted) => links.push(greeted),
                Err(e) => status.note(format!("a worker at {name} did not start: {e}")),
            }
        }
    }
    status.set_waiting_for("");
    Ok(links)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sluice_exec::InputPlan;
    use sluice_io::{MapSplit, Split};

    use super::input_hosts;

    fn split_on(hosts: &[&str]) -> MapSplit {
        MapSplit::Combined {
            parts: vec![Split {
                file: 0,
                start: 0,
                len: 1,
            }],
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
        }
    }

    #[test]
    fn containers_are_asked_for_where_most_splits_are() {
        let input = InputPlan {
            files: Vec::new(),
            splits: vec![
                split_on(&["dn2", "dn3"]),
                split_on(&["dn3", "dn1"]),
                split_on(&["dn3"]),
                split_on(&["dn1"]),
                split_on(&[]),
            ],
        };
        assert_eq!(input_hosts(&input), vec!["dn3", "dn1", "dn2"]);
        let local = InputPlan {
            files: Vec::new(),
            splits: vec![split_on(&[])],
        };
        assert!(input_hosts(&local).is_empty());
    }
}
