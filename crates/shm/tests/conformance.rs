//! Conformance of the shared-memory clients against the engine side, across real processes.
//!
//! One scenario list runs against the Rust client (this test binary, started again as the
//! child), the C client (`tests/shm/conform.c`, compiled here) and the Python client
//! (`tests/shm/conform.py`). Each child copies its input to its output through the client's
//! API; the engine side checks that every byte arrives intact and in order, or that the run
//! fails cleanly. A watchdog stops any run that takes too long, so a hang fails instead of
//! blocking the suite.
//!
//! The suite has its own `main` (`harness = false`) because the same binary is also the Rust
//! child: with `SLUICE_CONFORM_SCENARIO` set, it runs that scenario instead.

#[path = "../examples/support/runner.rs"]
mod runner;

use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use runner::{run, run_handshake, Answer, HandshakeReport, RunOptions, RunReport};

const SCENARIO_ENV: &str = "SLUICE_CONFORM_SCENARIO";

fn main() -> ExitCode {
    if let Ok(scenario) = std::env::var(SCENARIO_ENV) {
        return rust_child(&scenario);
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failures = Vec::new();
    let started = Instant::now();
    let wanted = |client: &str| {
        filter.is_empty() || filter.iter().any(|f| f.starts_with(&format!("{client}::")))
    };
    let clients = match clients(&wanted) {
        Ok(clients) => clients,
        Err(message) => {
            eprintln!("conformance: {message}");
            return ExitCode::FAILURE;
        }
    };
    for client in &clients {
        for case in cases(client) {
            let name = format!("{}::{}", client.name, case.name);
            if !filter.is_empty() && !filter.iter().any(|f| name.starts_with(f.as_str())) {
                continue;
            }
            let case_started = Instant::now();
            let result = (case.check)(client);
            let elapsed = case_started.elapsed();
            match result {
                Ok(()) => println!("ok   {name} ({elapsed:.2?})"),
                Err(message) => {
                    println!("FAIL {name}: {message}");
                    failures.push(name);
                }
            }
        }
    }
    println!(
        "conformance: {} failed, in {:.1?}",
        failures.len(),
        started.elapsed()
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One client implementation and how to start its conformance child.
struct Client {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Records in the big scenarios: the Python client is slower.
    records: usize,
    /// Whether the child can corrupt the region on purpose (the `garbage` scenario).
    can_corrupt: bool,
}

impl Client {
    fn command(&self, scenario: &str) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(scenario);
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if self.name == "rust" {
            command.env(SCENARIO_ENV, scenario);
        }
        command
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The clients `wanted`; the C one is compiled into a temporary directory first.
fn clients(wanted: &dyn Fn(&str) -> bool) -> Result<Vec<Client>, String> {
    let root = repo_root();
    let rust = Client {
        name: "rust",
        program: std::env::current_exe().map_err(|e| e.to_string())?,
        args: Vec::new(),
        env: Vec::new(),
        records: 1_000_000,
        can_corrupt: false,
    };
    let mut clients = vec![rust];
    if wanted("c") {
        clients.push(c_client(&root)?);
    }
    clients.push(Client {
        name: "python",
        program: "python3".into(),
        args: vec![root.join("tests/shm/conform.py").display().to_string()],
        env: vec![(
            "PYTHONPATH".into(),
            root.join("clients/python").display().to_string(),
        )],
        records: 200_000,
        can_corrupt: true,
    });
    clients.retain(|c| wanted(c.name));
    Ok(clients)
}

fn c_client(root: &Path) -> Result<Client, String> {
    // Under the target directory (cargo's place for tests' files), not the system's.
    let build =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("conform-c-{}", std::process::id()));
    std::fs::create_dir_all(&build).map_err(|e| e.to_string())?;
    let binary = build.join("conform");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let compiled = Command::new(&cc)
        .args([
            "-std=c11",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-I",
        ])
        .arg(root.join("clients/c"))
        .arg(root.join("clients/c/sluice_shm.c"))
        .arg(root.join("tests/shm/conform.c"))
        .arg("-o")
        .arg(&binary)
        .status()
        .map_err(|e| format!("{cc}: {e}"))?;
    if !compiled.success() {
        return Err(format!(
            "compiling the C conformance child failed: {compiled}"
        ));
    }
    Ok(Client {
        name: "c",
        program: binary,
        args: Vec::new(),
        env: Vec::new(),
        records: 1_000_000,
        can_corrupt: true,
    })
}

/// Runs a scenario against a client and checks its outcome.
type Check = Box<dyn Fn(&Client) -> Result<(), String>>;

/// A scenario and what its outcome must be.
struct Case {
    name: String,
    check: Check,
}

fn case(name: &str, check: impl Fn(&Client) -> Result<(), String> + 'static) -> Case {
    Case {
        name: name.to_string(),
        check: Box::new(check),
    }
}

const WATCHDOG: Duration = Duration::from_secs(120);

fn options(capacity: u64) -> RunOptions {
    RunOptions {
        capacity,
        input_ring: true,
        output_ring: true,
        timeout: WATCHDOG,
    }
}

/// Lines of random lengths, from empty to `max` bytes; most are short, as records are.
fn records(count: usize, max: usize, seed: u64) -> Vec<u8> {
    let mut rng = seed | 1;
    let mut next = move || {
        // xorshift64*: reproducible without a dependency.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut out = Vec::new();
    for _ in 0..count {
        let r = next();
        let len = match r % 100 {
            0 => (next() as usize) % (max + 1),
            1..=9 => (next() as usize) % 4097.min(max + 1),
            _ => (next() as usize) % 65.min(max + 1),
        };
        out.extend((0..len).map(|i| b'a' + ((r as usize + i) % 26) as u8));
        out.push(b'\n');
    }
    out
}

/// Feeds its data in pieces of random sizes, optionally pausing: the engine as a varied or
/// slow producer.
struct Choppy<'d> {
    data: &'d [u8],
    rng: u64,
    max: usize,
    pause_every: Option<usize>,
    since_pause: usize,
}

impl<'d> Choppy<'d> {
    fn new(data: &'d [u8], max: usize) -> Choppy<'d> {
        Choppy {
            data,
            rng: 0x9e37_79b9_7f4a_7c15,
            max,
            pause_every: None,
            since_pause: 0,
        }
    }
}

impl Read for Choppy<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let want = 1 + (self.rng as usize) % self.max;
        let n = want.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        if let Some(every) = self.pause_every {
            self.since_pause += n;
            if self.since_pause >= every {
                self.since_pause = 0;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        Ok(n)
    }
}

/// Collects what the child writes, optionally pausing: the engine as a slow consumer.
struct Sink {
    data: Vec<u8>,
    pause_every: Option<usize>,
    since_pause: usize,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.data.extend_from_slice(buf);
        if let Some(every) = self.pause_every {
            self.since_pause += buf.len();
            if self.since_pause >= every {
                self.since_pause = 0;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn sink() -> Sink {
    Sink {
        data: Vec::new(),
        pause_every: None,
        since_pause: 0,
    }
}

/// Runs `scenario` over `input` and checks that the child succeeded and copied it exactly.
fn expect_copy(
    client: &Client,
    scenario: &str,
    options: &RunOptions,
    mut input: Choppy<'_>,
    mut output: Sink,
) -> Result<(), String> {
    let expected = input.data;
    let report = run(client.command(scenario), options, &mut input, &mut output)?;
    clean_exit(&report, options.output_ring)?;
    same_bytes(expected, &output.data)
}

fn clean_exit(report: &RunReport, output_ring: bool) -> Result<(), String> {
    if report.timed_out {
        return Err("hung: stopped by the watchdog".into());
    }
    if !report.attached {
        return Err(format!("never attached ({})", report.status));
    }
    if !report.status.success() {
        return Err(format!("child failed: {}", report.status));
    }
    if report.unread != 0 {
        return Err(format!("{} bytes of input unread", report.unread));
    }
    if output_ring && !report.output_closed {
        return Err("the output ring was not closed".into());
    }
    Ok(())
}

fn same_bytes(expected: &[u8], got: &[u8]) -> Result<(), String> {
    if expected == got {
        return Ok(());
    }
    let at = expected
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(got.len()));
    Err(format!(
        "output differs at byte {at}: expected {} bytes, got {}",
        expected.len(),
        got.len()
    ))
}

fn cases(client: &Client) -> Vec<Case> {
    let n = client.records;
    let mut cases = vec![
        case("copy, 4 KiB ring, records up to twice the ring", move |c| {
            let data = records(n, 8192, 1);
            let input = Choppy::new(&data, 3 * 4096);
            expect_copy(c, "copy", &options(4096), input, sink())
        }),
        case("lines, 4 KiB ring", move |c| {
            let data = records(n / 2, 8192, 2);
            expect_copy(c, "lines", &options(4096), Choppy::new(&data, 9000), sink())
        }),
        case("copy, 1 MiB ring, records larger than the ring", move |c| {
            let mut data = records(n / 4, 4096, 3);
            for (i, len) in [(1 << 20) + 1, 3 << 20, 5000].into_iter().enumerate() {
                data.extend(std::iter::repeat_n(b'A' + i as u8, len));
                data.push(b'\n');
            }
            let input = Choppy::new(&data, 4 << 20);
            expect_copy(c, "copy", &options(1 << 20), input, sink())
        }),
        case("slow child reader", move |c| {
            let data = records(n / 20, 4096, 4);
            let input = Choppy::new(&data, 65536);
            expect_copy(c, "slow-reader", &options(65536), input, sink())
        }),
        case("slow child writer", move |c| {
            let data = records(n / 20, 4096, 5);
            let input = Choppy::new(&data, 65536);
            expect_copy(c, "slow-writer", &options(65536), input, sink())
        }),
        case("slow engine producer", move |c| {
            let data = records(n / 20, 4096, 6);
            let mut input = Choppy::new(&data, 65536);
            input.pause_every = Some(64 * 1024);
            expect_copy(c, "copy", &options(65536), input, sink())
        }),
        case("slow engine consumer", move |c| {
            let data = records(n / 20, 4096, 7);
            let mut output = sink();
            output.pause_every = Some(64 * 1024);
            expect_copy(
                c,
                "copy",
                &options(65536),
                Choppy::new(&data, 65536),
                output,
            )
        }),
        case("input ring only, output on stdout", move |c| {
            let data = records(n / 10, 4096, 8);
            let options = RunOptions {
                output_ring: false,
                ..options(16384)
            };
            expect_copy(c, "lines", &options, Choppy::new(&data, 20000), sink())
        }),
        case("output ring only, input on stdin", move |c| {
            let data = records(n / 10, 4096, 9);
            let options = RunOptions {
                input_ring: false,
                ..options(16384)
            };
            expect_copy(c, "copy", &options, Choppy::new(&data, 20000), sink())
        }),
        case("empty input", |c| {
            expect_copy(c, "lines", &options(4096), Choppy::new(&[], 1), sink())
        }),
        case("a child that dies mid-record", |c| {
            let data = records(20_000, 200, 10);
            let mut output = sink();
            let report = run(
                c.command("die"),
                &options(4096),
                &mut Choppy::new(&data, 4096),
                &mut output,
            )?;
            if report.timed_out {
                return Err("hung: stopped by the watchdog".into());
            }
            if report.status.code() != Some(7) {
                return Err(format!("expected exit status 7, got {}", report.status));
            }
            // What it wrote before dying arrives intact; the engine sees its input unread.
            same_bytes(&data[..1000], &output.data)?;
            if report.unread == 0 {
                return Err("the engine did not notice the unread input".into());
            }
            if report.output_closed {
                return Err("a child that died is reported as having closed its output".into());
            }
            Ok(())
        }),
        case("same output over plain pipes (no shm)", move |c| {
            let data = records(n / 10, 4096, 11);
            let got = over_pipes(c.command("lines"), &data)?;
            same_bytes(&data, &got)
        }),
    ];
    cases.extend(handshake_cases(n));
    if client.name == "rust" {
        cases.push(case("a child that exits without closing", |c| {
            let data = records(20_000, 200, 13);
            let mut output = sink();
            let report = run(
                c.command("no-close"),
                &options(4096),
                &mut Choppy::new(&data, 4096),
                &mut output,
            )?;
            if !report.status.success() || report.timed_out {
                return Err(format!("expected a clean exit, got {}", report.status));
            }
            // Everything it published arrives; the engine can tell that the end was not marked.
            same_bytes(&data, &output.data)?;
            if report.output_closed {
                return Err("reported as closed".into());
            }
            Ok(())
        }));
    }
    if client.can_corrupt {
        cases.push(case("a child that corrupts the region", |c| {
            let data = records(20_000, 200, 12);
            let started = Instant::now();
            let outcome = run(
                c.command("garbage"),
                &options(4096),
                &mut Choppy::new(&data, 4096),
                &mut sink(),
            );
            match outcome {
                Err(message) if message.contains("shm protocol violation") => {
                    // The child sleeps for 10 s after corrupting: the engine must not wait for it.
                    if started.elapsed() > Duration::from_secs(8) {
                        return Err(format!(
                            "noticed the violation only after {:?}",
                            started.elapsed()
                        ));
                    }
                    Ok(())
                }
                Err(message) => Err(format!("failed, but not as a violation: {message}")),
                Ok(report) => Err(format!(
                    "the corruption went unnoticed (child {}, timed out: {})",
                    report.status, report.timed_out
                )),
            }
        }));
    }
    cases
}

/// Runs `command` over ordinary pipes, without any shared memory.
fn over_pipes(mut command: Command, input: &[u8]) -> Result<Vec<u8>, String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut got = Vec::new();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let _ = stdin.write_all(input);
        });
        stdout.read_to_end(&mut got)
    })
    .map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("child failed over pipes: {status}"));
    }
    Ok(got)
}

/// The Rust client's conformance child: the same scenarios as `tests/shm/conform.c`.
fn rust_child(scenario: &str) -> ExitCode {
    match rust_scenario(scenario) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conform (rust): {e}");
            ExitCode::from(1)
        }
    }
}

fn rust_scenario(scenario: &str) -> io::Result<()> {
    let mut channel = match sluice_shm::Channel::open() {
        Ok(channel) => channel,
        Err(e) => {
            eprintln!("conform (rust): cannot attach: {e}");
            std::process::exit(2);
        }
    };
    const SIZES: [usize; 5] = [1, 7, 4096, 65536, 300_000];
    let mut buf = vec![0u8; 300_000];
    let pause = Duration::from_millis(2);
    match scenario {
        "copy" | "slow-reader" | "slow-writer" => {
            let (mut read_since, mut written_since) = (0, 0);
            for size in SIZES.iter().cycle() {
                let n = channel.read(&mut buf[..*size])?;
                if n == 0 {
                    break;
                }
                read_since += n;
                if scenario == "slow-reader" && read_since >= 65536 {
                    read_since = 0;
                    std::thread::sleep(pause);
                }
                channel.write_all(&buf[..n])?;
                written_since += n;
                if scenario == "slow-writer" && written_since >= 65536 {
                    written_since = 0;
                    channel.flush()?;
                    std::thread::sleep(pause);
                }
            }
        }
        "lines" => {
            let mut line = Vec::new();
            while channel.read_until(b'\n', &mut line)? > 0 {
                channel.write_all(&line)?;
                line.clear();
            }
        }
        "die" => {
            let mut got = 0;
            while got < 100_000 {
                let n = channel.read(&mut buf[got..100_000])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            channel.write_all(&buf[..got.min(1000)])?;
            channel.flush()?;
            // No close and no destructors: the engine must cope with a half-finished child.
            std::process::exit(7);
        }
        "no-close" => {
            let mut line = Vec::new();
            while channel.read_until(b'\n', &mut line)? > 0 {
                channel.write_all(&line)?;
                line.clear();
            }
            channel.flush()?;
            // A success, but no close: `exit` runs no destructors.
            std::process::exit(0);
        }
        other => return Err(io::Error::other(format!("unknown scenario {other}"))),
    }
    channel.close()
}

/// The environment Hadoop Streaming gives a mapper fed by sluice's plugin.
const PLUGIN_MAPPER: [(&str, &str); 2] = [
    ("mapreduce_task_ismap", "true"),
    (
        "stream_map_input_writer_class",
        sluice_shm::handshake::WRITER_CLASS,
    ),
];

/// `client`'s scenario as Hadoop Streaming starts it, with `env` added.
fn under_hadoop(client: &Client, scenario: &str, env: &[(&str, &str)]) -> Command {
    let mut command = client.command(scenario);
    command.envs(env.iter().copied());
    command
}

fn handshake_ok(report: &HandshakeReport, expected: &[u8]) -> Result<(), String> {
    not_hung(report)?;
    if !report.status.success() {
        return Err(format!("child failed: {}", report.status));
    }
    same_bytes(expected, &report.output)
}

fn not_hung(report: &HandshakeReport) -> Result<(), String> {
    if report.timed_out {
        return Err("hung: stopped by the watchdog".into());
    }
    Ok(())
}

/// The program refused what the engine answered, as a client does an attach line it cannot
/// follow: exit status 2.
fn handshake_refused(report: &HandshakeReport) -> Result<(), String> {
    not_hung(report)?;
    match report.status.code() {
        Some(2) => Ok(()),
        _ => Err(format!("expected exit status 2, got {}", report.status)),
    }
}

/// The handshake under Hadoop Streaming (`docs/shm-protocol.md`): the program offers only
/// when the plugin feeds it, attaches when answered with the attach line, and otherwise reads
/// the engine's first line as its first record.
fn handshake_cases(n: usize) -> Vec<Case> {
    vec![
        case("handshake: attach, both rings", move |c| {
            let data = records(n / 10, 4096, 21);
            let report = run_handshake(
                under_hadoop(c, "copy", &PLUGIN_MAPPER),
                Answer::Attach { output_ring: true },
                &data,
                WATCHDOG,
            )?;
            if !report.offered || !report.attached {
                return Err(format!(
                    "offered {}, attached {}",
                    report.offered, report.attached
                ));
            }
            handshake_ok(&report, &data)
        }),
        case("handshake: attach, output on stdout", move |c| {
            let data = records(n / 10, 4096, 22);
            let report = run_handshake(
                under_hadoop(c, "lines", &PLUGIN_MAPPER),
                Answer::Attach { output_ring: false },
                &data,
                WATCHDOG,
            )?;
            if !report.attached {
                return Err("never attached".into());
            }
            handshake_ok(&report, &data)
        }),
        case("handshake: attach, empty input", |c| {
            let report = run_handshake(
                under_hadoop(c, "lines", &PLUGIN_MAPPER),
                Answer::Attach { output_ring: true },
                &[],
                WATCHDOG,
            )?;
            handshake_ok(&report, &[])
        }),
        case(
            "handshake: answered with records, stays on pipes",
            move |c| {
                // The first record starts like the hello and the attach line, then differs.
                let mut data = b"\x01sluice-shm hello 1\n\x01sluice-shm attac\n".to_vec();
                data.extend(records(n / 10, 4096, 23));
                let report = run_handshake(
                    under_hadoop(c, "lines", &PLUGIN_MAPPER),
                    Answer::Records,
                    &data,
                    WATCHDOG,
                )?;
                if !report.offered {
                    return Err("did not offer".into());
                }
                handshake_ok(&report, &data)
            },
        ),
        case("handshake: answered with a 3 MB first line", |c| {
            let mut data = vec![b'x'; 3 << 20];
            data.extend_from_slice(b"\nlast\n");
            let report = run_handshake(
                under_hadoop(c, "copy", &PLUGIN_MAPPER),
                Answer::Records,
                &data,
                WATCHDOG,
            )?;
            handshake_ok(&report, &data)
        }),
        case(
            "handshake: an over-long attach line is refused, never read as a record",
            |c| {
                // Starts as an attach line, and runs on for 3 MB: the program must fail
                // (status 2, as for any attach line it cannot follow), in any client.
                let mut data = b"\x01sluice-shm attach 1 /proc/self/fd/".to_vec();
                data.resize(3 << 20, b'9');
                data.extend_from_slice(b"\nrecord\n");
                let report = run_handshake(
                    under_hadoop(c, "copy", &PLUGIN_MAPPER),
                    Answer::Records,
                    &data,
                    WATCHDOG,
                )?;
                handshake_refused(&report)
            },
        ),
        case("handshake: answered with the end of the input", |c| {
            let report = run_handshake(
                under_hadoop(c, "lines", &PLUGIN_MAPPER),
                Answer::Records,
                &[],
                WATCHDOG,
            )?;
            if !report.offered {
                return Err("did not offer".into());
            }
            handshake_ok(&report, &[])
        }),
        case(
            "handshake: no offer when Hadoop's own writer feeds it",
            move |c| {
                let data = records(n / 20, 4096, 24);
                for env in [
                    &[
                        ("mapreduce_task_ismap", "true"),
                        (
                            "stream_map_input_writer_class",
                            "org.apache.hadoop.streaming.io.TextInputWriter",
                        ),
                    ][..],
                    // A combiner in a map task uses the reduce side's (stock) writer.
                    &[
                        PLUGIN_MAPPER[0],
                        PLUGIN_MAPPER[1],
                        ("stream_combine_streamprocessor", "cat"),
                    ][..],
                    &[][..],
                ] {
                    let report = run_handshake(
                        under_hadoop(c, "lines", env),
                        Answer::Attach { output_ring: true },
                        &data,
                        WATCHDOG,
                    )?;
                    if report.offered {
                        return Err(format!("offered with {env:?}"));
                    }
                    handshake_ok(&report, &data)?;
                }
                Ok(())
            },
        ),
    ]
}
