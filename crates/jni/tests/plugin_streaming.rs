//! Hadoop Streaming over shared memory inside Apache Hadoop 3.4.2: each case runs a streaming
//! job in local mode twice, as Hadoop runs it (`-io text`, pipes) and with sluice's resolver
//! and `-io shm` (`org.sluice.hadoop.streaming`), and the two runs must agree:
//!
//! * the same exit status, and byte-identical output files;
//! * programs that link a sluice client (C, Python, Rust) attached over shared memory in every
//!   task (the plugin's log line, counted), and programs without one, or whose offer came too
//!   late, stayed on pipes with the same output, never a failed task;
//! * a program killed mid-stream fails the job in both runs;
//! * no region is left in `/dev/shm` (the regions are memory files without a name).
//!
//! A second test runs every differential case of `sluice streaming` against Hadoop
//! (`crates/cli/tests/streaming/cases`, mostly programs without a client) again through Hadoop
//! Streaming with `-io shm` and the resolver: each must end exactly as over pipes (the same exit
//! code, markers, counters and output, compared as that suite compares), never a failed task.
//!
//! All jobs run in one JVM (`tests/plugin/ExamplesBatch.java` calling Hadoop Streaming's
//! `main`), from the jars `make hadoop` and `make plugin` put in `target/hadoop/lib` and
//! `target/plugin`; the C clients are compiled here, the Rust one is the `wc_map` example of
//! `sluice-shm` (built here unless `cargo test` of the workspace built it).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[allow(dead_code)] // Shared by the plugin tests; this one uses part of it.
mod common;
use common::*;

// The differential cases of `sluice streaming` and how that suite runs and compares them.
#[allow(dead_code)]
#[path = "../../cli/tests/streaming/case.rs"]
mod case;
#[allow(dead_code)]
#[path = "../../cli/tests/streaming/compare.rs"]
mod compare;
#[allow(dead_code)]
#[path = "../../cli/tests/streaming/decode.rs"]
mod decode;
#[allow(dead_code)]
#[path = "../../cli/tests/streaming/hadoop.rs"]
mod hadoop;

/// The log line of a task whose program attached over shared memory.
const ATTACHED: &str = "attached over shared memory";
/// The log lines of a task whose program stayed on pipes.
const PIPES: [&str; 3] = [
    "made no shared-memory offer",
    "no shared-memory offer from the streaming program within",
    "input ended before the handshake",
];

/// One streaming job.
struct Case {
    name: &'static str,
    mapper: String,
    reducer: Option<String>,
    /// Options after the generic ones (`-combiner`, `-inputformat`, ...).
    options: Vec<String>,
    /// Generic `-D` settings for the shm run only.
    settings: Vec<String>,
    input: &'static str,
    /// Tasks whose program must attach, and tasks that must stay on pipes.
    attached: usize,
    pipes: usize,
    /// Whether the job must fail (in both runs).
    fails: bool,
}

fn case(name: &'static str, mapper: String, reducer: Option<String>) -> Case {
    Case {
        name,
        mapper,
        reducer,
        options: Vec::new(),
        settings: Vec::new(),
        input: "in/text",
        attached: 0,
        pipes: 0,
        fails: false,
    }
}

/// The programs the cases run.
struct Programs {
    py_map: String,
    py_reduce: String,
    py_lines: String,
    c_map: String,
    c_reduce: String,
    rust_map: String,
    killed: String,
    header: String,
    late: String,
}

fn programs(root: &Path, scratch: &Path) -> Programs {
    let bin = scratch.join("bin");
    fs::create_dir_all(&bin).unwrap();
    for example in ["wc_map", "wc_reduce"] {
        let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(root.join("clients/c"))
            .arg(root.join("clients/c/sluice_shm.c"))
            .arg(root.join(format!("examples/shm/c/{example}.c")))
            .arg("-o")
            .arg(bin.join(example))
            .status()
            .unwrap();
        assert!(status.success(), "compiling {example}.c failed");
    }
    // `cargo test` of the whole workspace builds its examples next to the test binaries; a
    // test of this crate alone builds the one it needs, with the same profile.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let rust_map = profile_dir.join("examples/wc_map");
    if !rust_map.exists() {
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev",
            Some(name) => name,
            None => "release",
        };
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "build",
                "-p",
                "sluice-shm",
                "--example",
                "wc_map",
                "--profile",
                profile,
            ])
            .current_dir(root)
            .status()
            .unwrap();
        assert!(status.success(), "building the wc_map example failed");
    }
    assert!(rust_map.exists(), "{} is missing", rust_map.display());
    let client = root.join("clients/python");
    let script = |name: &str, text: String| {
        let path = bin.join(name);
        fs::write(&path, text).unwrap();
        format!("python3 {}", path.display())
    };
    let python = |name: &str| format!("python3 {}", root.join(name).display());
    Programs {
        py_map: python("examples/shm/python/wc_map.py"),
        py_reduce: python("examples/shm/python/wc_reduce.py"),
        py_lines: format!("{} lines", python("tests/shm/conform.py")),
        c_map: bin.join("wc_map").display().to_string(),
        c_reduce: bin.join("wc_reduce").display().to_string(),
        rust_map: rust_map.display().to_string(),
        // A client that copies 100 lines, then is killed.
        killed: script(
            "killed.py",
            format!(
                "import os, signal, sys\nsys.path.insert(0, {client:?})\nimport sluice_shm\n\
                 with sluice_shm.open() as ch:\n    for i, line in enumerate(ch):\n        \
                 ch.write(line)\n        if i == 100:\n            ch.flush()\n            \
                 os.kill(os.getpid(), signal.SIGKILL)\n",
                client = client.display().to_string()
            ),
        ),
        // No client, and output before any input.
        header: script(
            "header.py",
            "import sys\nsys.stdout.write('header\\n')\nsys.stdout.flush()\n\
             for line in sys.stdin:\n    sys.stdout.write(line)\n"
                .into(),
        ),
        // A client that offers only after the engine stopped waiting.
        late: script(
            "late.py",
            format!(
                "import sys, time\nsys.path.insert(0, {client:?})\nimport sluice_shm\n\
                 time.sleep(1.5)\nwith sluice_shm.open() as ch:\n    for line in ch:\n        \
                 ch.write(line)\n",
                client = client.display().to_string()
            ),
        ),
    }
}

fn cases(p: &Programs) -> Vec<Case> {
    let reduces = |n: usize| vec!["-numReduceTasks".to_string(), n.to_string()];
    // Two input files: two map tasks.
    vec![
        Case {
            options: reduces(2),
            attached: 4,
            ..case(
                "wordcount-python",
                p.py_map.clone(),
                Some(p.py_reduce.clone()),
            )
        },
        Case {
            options: reduces(2),
            attached: 4,
            ..case("wordcount-c", p.c_map.clone(), Some(p.c_reduce.clone()))
        },
        Case {
            options: reduces(1),
            attached: 3,
            ..case(
                "wordcount-rust-c",
                p.rust_map.clone(),
                Some(p.c_reduce.clone()),
            )
        },
        Case {
            options: [reduces(2), vec!["-combiner".into(), p.py_reduce.clone()]].concat(),
            // Maps, reduces and a combiner per partition of each map's spill.
            attached: 2 + 2 + 4,
            ..case(
                "wordcount-python-combiner",
                p.py_map.clone(),
                Some(p.py_reduce.clone()),
            )
        },
        Case {
            // TextInputFormat's offsets are dropped, as PipeMapper drops them.
            options: reduces(1),
            attached: 3,
            ..case(
                "identity-text-input",
                p.py_lines.clone(),
                Some(p.py_lines.clone()),
            )
        },
        Case {
            // KeyValueTextInputFormat's keys are written, as PipeMapper writes them.
            options: [
                reduces(1),
                vec![
                    "-inputformat".into(),
                    "org.apache.hadoop.mapred.KeyValueTextInputFormat".into(),
                ],
            ]
            .concat(),
            attached: 3,
            ..case(
                "identity-keyvalue-input",
                p.py_lines.clone(),
                Some(p.py_lines.clone()),
            )
        },
        Case {
            options: reduces(0),
            attached: 2,
            ..case("map-only", p.py_lines.clone(), None)
        },
        Case {
            options: reduces(1),
            input: "in/empty",
            // The map of the empty file attaches (Hadoop starts a map's writer before its
            // first record); the reduce without input starts it only after closing the
            // program's input, so that program stays on pipes.
            attached: 1,
            pipes: 1,
            ..case("empty-input", p.py_map.clone(), Some(p.py_reduce.clone()))
        },
        Case {
            options: reduces(2),
            settings: vec!["sluice.shm.handshake.timeout.ms=300".into()],
            pipes: 4,
            ..case("no-client", "cat".into(), Some("uniq -c".into()))
        },
        Case {
            options: reduces(1),
            // The default wait: a Python client's offer takes longer than 300 ms on a busy
            // machine, and each map must attach. The plain reduce waits it out once.
            attached: 2,
            pipes: 1,
            ..case(
                "client-map-plain-reduce",
                p.py_map.clone(),
                Some("uniq -c".into()),
            )
        },
        Case {
            options: reduces(1),
            attached: 1,
            pipes: 2,
            ..case(
                "output-before-input",
                p.header.clone(),
                Some(p.py_lines.clone()),
            )
        },
        Case {
            options: reduces(1),
            settings: vec!["sluice.shm.handshake.timeout.ms=200".into()],
            pipes: 3,
            ..case("offer-too-late", p.late.clone(), Some(p.late.clone()))
        },
        Case {
            options: reduces(1),
            fails: true,
            ..case(
                "killed-mid-stream",
                p.killed.clone(),
                Some(p.py_reduce.clone()),
            )
        },
    ]
}

fn write_inputs(scratch: &Path) {
    let text = scratch.join("in/text");
    fs::create_dir_all(&text).unwrap();
    fs::write(text.join("a.txt"), common::text(20_000, 9, 3000, 1)).unwrap();
    // Messy lines: CRLF, a tab, no final newline, an empty line, bytes that are not UTF-8.
    let mut messy = common::text(3_000, 5, 500, 2).into_bytes();
    messy
        .extend_from_slice(b"crlf line\r\nkey\twith tab\n\nlatin1 \xe9t\xe9\nlast without newline");
    fs::write(text.join("b.txt"), messy).unwrap();
    let empty = scratch.join("in/empty");
    fs::create_dir_all(&empty).unwrap();
    fs::write(empty.join("empty.txt"), "").unwrap();
}

fn arguments(c: &Case, scratch: &Path, run: &str, shm: bool) -> Vec<String> {
    let mut args = vec!["org.apache.hadoop.streaming.HadoopStreaming".to_string()];
    let mut set = |s: String| args.extend(["-D".to_string(), s]);
    set("mapreduce.framework.name=local".into());
    set("fs.defaultFS=file:///".into());
    set(format!(
        "hadoop.tmp.dir={}",
        scratch.join("tmp").join(run).display()
    ));
    if shm {
        set("stream.io.identifier.resolver.class=\
             org.sluice.hadoop.streaming.ShmIdentifierResolver"
            .into());
        for s in &c.settings {
            set(s.clone());
        }
    }
    if shm {
        args.extend(["-io".to_string(), "shm".to_string()]);
    }
    args.extend([
        "-input".to_string(),
        scratch.join(c.input).display().to_string(),
        "-output".to_string(),
        scratch.join("out").join(run).display().to_string(),
        "-mapper".to_string(),
        c.mapper.clone(),
    ]);
    if let Some(reducer) = &c.reducer {
        args.extend(["-reducer".to_string(), reducer.clone()]);
    }
    args.extend(c.options.iter().cloned());
    args
}

fn check(c: &Case, scratch: &Path) -> Result<(), String> {
    let result = |run: &str, file: &str| {
        fs::read_to_string(scratch.join("results").join(run).join(file)).unwrap_or_default()
    };
    let (stock, shm) = (format!("{}-stock", c.name), format!("{}-shm", c.name));
    let (stock_exit, shm_exit) = (result(&stock, "exit"), result(&shm, "exit"));
    let log = result(&shm, "log");
    if c.fails {
        if stock_exit.trim() == "0" || shm_exit.trim() == "0" {
            return Err(format!(
                "must fail in both runs: stock exit {stock_exit:?}, shm exit {shm_exit:?}\n{log}"
            ));
        }
        return Ok(());
    }
    if stock_exit.trim() != "0" || shm_exit.trim() != "0" {
        return Err(format!(
            "stock exit {stock_exit:?}, shm exit {shm_exit:?}; shm log:\n{log}"
        ));
    }
    let attached = log.matches(ATTACHED).count();
    let pipes: usize = PIPES.iter().map(|p| log.matches(p).count()).sum();
    if attached != c.attached || pipes != c.pipes {
        return Err(format!(
            "{attached} tasks attached and {pipes} stayed on pipes, expected {} and {}:\n{log}",
            c.attached, c.pipes
        ));
    }
    let out = |run: &str| outputs(&scratch.join("out").join(run));
    let (a, b) = (out(&stock), out(&shm));
    if a != b {
        let names: BTreeSet<_> = a.keys().chain(b.keys()).collect();
        let differing: Vec<_> = names
            .into_iter()
            .filter(|n| a.get(*n) != b.get(*n))
            .collect();
        return Err(format!("outputs differ in {differing:?}"));
    }
    if a.values().all(|v| v.is_empty()) && c.input != "in/empty" {
        return Err("no output at all".into());
    }
    Ok(())
}

/// The names in `/dev/shm`.
fn dev_shm() -> BTreeSet<PathBuf> {
    fs::read_dir("/dev/shm")
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Java 17, a C compiler, `make hadoop` and `make plugin` (the test-hadoop feature)"
)]
fn hadoop_streaming_over_shared_memory_gives_the_pipes_output() {
    require(&[
        (
            "target/hadoop/lib/.complete",
            "`make hadoop` (tests/hadoop/fetch.sh)",
        ),
        ("target/plugin/sluice-plugin.jar", "`make plugin`"),
    ]);
    let root = root();
    let scratch_dir = tempfile::Builder::new()
        .prefix("plugin-streaming")
        .tempdir_in(root.join("target"))
        .unwrap();
    let scratch = scratch_dir.path();
    write_inputs(scratch);
    let programs = programs(&root, scratch);
    let only = std::env::var("SLUICE_PLUGIN_CASES").ok();
    let cases: Vec<Case> = cases(&programs)
        .into_iter()
        .filter(|c| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|n| n == c.name))
        })
        .collect();
    assert!(!cases.is_empty(), "SLUICE_PLUGIN_CASES names no case");
    let mut manifest = String::new();
    for c in &cases {
        for shm in [false, true] {
            let run = format!("{}-{}", c.name, if shm { "shm" } else { "stock" });
            let args = arguments(c, scratch, &run, shm);
            common::case(
                &mut manifest,
                &run,
                &scratch.join("results").join(&run),
                &args,
            );
        }
    }
    fs::write(scratch.join("manifest"), manifest).unwrap();

    let classes = scratch.join("classes");
    let classpath = format!(
        "{}:{}:{}:{}/*",
        classes.display(),
        root.join("tests/plugin").display(),
        root.join("target/plugin/sluice-plugin.jar").display(),
        root.join("target/hadoop/lib").display()
    );
    compile_driver(&classes, &classpath);
    let before = dev_shm();
    let status = run_driver(
        &classpath,
        &[],
        &[&scratch.join("manifest")],
        scratch,
        Stdio::inherit(),
    );
    assert!(status.success(), "the Java driver failed: {status}");
    let after = dev_shm();

    let mut failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(c, scratch).err().map(|e| format!("{}: {e}", c.name)))
        .collect();
    let left: Vec<_> = after.difference(&before).collect();
    if !left.is_empty() {
        failures.push(format!("left in /dev/shm: {left:?}"));
    }
    if !failures.is_empty() {
        let kept = scratch_dir.keep();
        panic!("{}\n\n(kept in {})", failures.join("\n\n"), kept.display());
    }
}

/// Whether a differential case can run with `-io shm` added: not when it chooses its own
/// identifiers (`-io`, `stream.{map,reduce}.{input,output}=`), nor when a Java class or
/// `aggregate` stands for a program (any `-io` then gives the job the identifier's output
/// classes instead of its configured ones, which is what such a case is about).
/// Cases whose programs leave a process writing their output after they exit: over an output
/// ring the output ends when the program exits (the README says so), so their output differs
/// from the pipes' by design.
const OUTPUT_AFTER_EXIT: &[&str] = &["background-child-writes-after-the-program-exits"];

fn takes_shm(case: &case::Case) -> bool {
    if OUTPUT_AFTER_EXIT.contains(&case.name.as_str()) {
        return false;
    }
    let java = case.args.windows(2).any(|w| {
        matches!(w[0].as_str(), "-mapper" | "-reducer" | "-combiner")
            && (w[1].eq_ignore_ascii_case("aggregate") || w[1].starts_with("org."))
    });
    if java {
        return false;
    }
    let directions = [
        "stream.map.input=",
        "stream.map.output=",
        "stream.reduce.input=",
        "stream.reduce.output=",
    ];
    !case
        .args
        .iter()
        .any(|a| a == "-io" || directions.iter().any(|d| a.starts_with(d)))
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Java 17, `make hadoop` and `make plugin` (the test-hadoop feature)"
)]
fn streaming_differential_cases_end_as_over_pipes_with_io_shm() {
    require(&[
        (
            "target/hadoop/lib/.complete",
            "`make hadoop` (tests/hadoop/fetch.sh)",
        ),
        ("target/plugin/sluice-plugin.jar", "`make plugin`"),
    ]);
    let layout = hadoop::Layout::new();
    let root = root();
    let mut cases = case::load_all(&layout.cases(), &layout.salt()).unwrap();
    cases.retain(takes_shm);
    if let Ok(only) = std::env::var("SLUICE_STREAMING_CASES") {
        cases.retain(|c| only.split(',').any(|n| n.trim() == c.name));
    }
    assert!(!cases.is_empty(), "no differential case takes -io shm");
    let scratch_dir = tempfile::Builder::new()
        .prefix("plugin-streaming-cases")
        .tempdir_in(root.join("target"))
        .unwrap();
    let scratch = scratch_dir.path();
    let cwd = scratch.join("cwd");
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join(".streaming-batch-cwd"), "").unwrap();

    // Each case twice, with `-io text` (pipes) and with `-io shm`: any `-io` changes how
    // Hadoop picks the job's output classes (a Java reducer's included), so the pipes run says
    // `-io text` rather than nothing.
    let mut manifest = String::new();
    let mut add = |c: &case::Case, shm: bool| {
        let run = format!("{}-{}", c.name, if shm { "shm" } else { "pipes" });
        let result = scratch.join("results").join(&run);
        let copy = result.join("case");
        c.materialize(&copy).unwrap();
        let mut args = hadoop::local_mode_args(&scratch.join("tmp").join(&run));
        if shm {
            args.extend([
                "-D".to_string(),
                "stream.io.identifier.resolver.class=\
                 org.sluice.hadoop.streaming.ShmIdentifierResolver"
                    .to_string(),
                // Programs without a client cost this per task.
                "-D".to_string(),
                "sluice.shm.handshake.timeout.ms=100".to_string(),
            ]);
        }
        args.extend(c.resolve_args(&copy, &result.join("output")));
        let io = if shm { "shm" } else { "text" };
        args.extend(["-io".to_string(), io.to_string()]);
        common::case(&mut manifest, &run, &result, &args);
        result
    };
    let runs: Vec<(PathBuf, PathBuf)> = cases
        .iter()
        .map(|c| (add(c, false), add(c, true)))
        .collect();
    fs::write(scratch.join("manifest"), manifest).unwrap();
    let classpath = format!(
        "{}:{}:{}/*",
        layout.driver_dir().display(),
        root.join("target/plugin/sluice-plugin.jar").display(),
        layout.lib().display()
    );
    let before = dev_shm();
    let out = Command::new("java")
        .arg("-Djava.security.manager=allow")
        .arg("-cp")
        .arg(&classpath)
        .arg(layout.driver_dir().join("StreamingBatch.java"))
        .arg(scratch.join("manifest"))
        .current_dir(&cwd)
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(
        out.status.success(),
        "the Hadoop driver failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let after = dev_shm();
    let read = |dir: &Path| hadoop::Run {
        exit: fs::read_to_string(dir.join("exit"))
            .ok()
            .and_then(|e| e.trim().parse().ok()),
        output: dir.join("output"),
        log: fs::read_to_string(dir.join("log")).unwrap_or_default(),
    };
    let mut failures: Vec<String> = cases
        .iter()
        .zip(&runs)
        .filter_map(|(c, (pipes, shm))| {
            let problems = compare::compare(&c.expect, &read(pipes), &read(shm));
            (!problems.is_empty()).then(|| {
                format!(
                    "=== {} (\"Hadoop\" is over pipes, \"sluice\" with -io shm)\n{}",
                    c.name,
                    problems.join("\n")
                )
            })
        })
        .collect();
    let left: Vec<_> = after.difference(&before).collect();
    if !left.is_empty() {
        failures.push(format!("left in /dev/shm: {left:?}"));
    }
    if !failures.is_empty() {
        let kept = scratch_dir.keep();
        panic!(
            "{} of {} case(s) end otherwise with -io shm:\n\n{}\n\n(kept in {})",
            failures.len(),
            cases.len(),
            failures.join("\n\n"),
            kept.display()
        );
    }
    eprintln!(
        "{} differential case(s) end as over pipes with -io shm",
        cases.len()
    );
}
