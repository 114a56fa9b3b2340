//! What `sluice streaming` says and leaves behind: Hadoop's console layout and exit statuses,
//! sluice's own layout on request, task logs removed on success and kept on failure, stale
//! scratch directories of killed jobs cleaned, Ctrl-C, help, and commands written for a shell.

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::harness::{finish, Scratch};

/// A log4j record of Hadoop's console layout: `yyyy-MM-dd HH:mm:ss,SSS LEVEL logger: message`.
fn is_record(line: &str) -> bool {
    let bytes = line.as_bytes();
    let stamp = bytes.len() > 24
        && bytes[..23].iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            10 => *b == b' ',
            13 | 16 => *b == b':',
            19 => *b == b',',
            _ => b.is_ascii_digit(),
        });
    stamp && {
        let rest = &line[24..];
        let mut parts = rest.splitn(3, ' ');
        let level = parts.next().unwrap_or("");
        let logger = parts.next().unwrap_or("");
        ["INFO", "WARN", "ERROR"].contains(&level) && logger.ends_with(':')
    }
}

/// The messages of the records logged by `logger`.
fn messages<'s>(stderr: &'s str, logger: &str) -> Vec<&'s str> {
    let tag = format!(" {logger}: ");
    stderr
        .lines()
        .filter(|l| is_record(l))
        .filter_map(|l| l.split_once(&tag).map(|(_, m)| m))
        .collect()
}

#[test]
fn a_successful_job_prints_what_hadoop_prints_in_its_order() {
    let s = Scratch::new();
    let input = s.write("in.txt", "b\t1\na\t2\n");
    let run = s.run(&[
        "streaming",
        "-input",
        &input,
        "-output",
        "out",
        "-mapper",
        "cat",
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert_eq!(run.stdout, "");
    let job = messages(&run.stderr, "mapreduce.Job");
    let running = job
        .iter()
        .position(|m| m.starts_with("Running job: job_"))
        .unwrap();
    let done = job
        .iter()
        .position(|m| m.ends_with("completed successfully"))
        .unwrap();
    let counters = job
        .iter()
        .position(|m| m.starts_with("Counters: "))
        .unwrap();
    assert!(running < done && done < counters, "{}", run.stderr);
    let id = job[running].strip_prefix("Running job: ").unwrap();
    assert_eq!(
        job[running + 1],
        format!("Job {id} running in uber mode : false")
    );
    assert_eq!(job[done - 1], " map 100% reduce 100%");
    assert_eq!(
        messages(&run.stderr, "streaming.StreamJob"),
        ["Output directory: out"]
    );
    // Every line is a record or a line of the counters block.
    for line in run.stderr.lines() {
        assert!(
            is_record(line) || line.starts_with('\t'),
            "stray line {line:?}"
        );
    }
    assert!(run
        .stderr
        .contains("\n\tMap-Reduce Framework\n\t\tMap input records=2\n"));
}

#[test]
fn a_map_only_job_ends_at_reduce_0_percent_with_no_reduce_task() {
    let s = Scratch::new();
    let input = s.write("in.txt", "x\n");
    let run = s.run(&[
        "streaming",
        "-input",
        &input,
        "-output",
        "out",
        "-mapper",
        "cat",
        "-reducer",
        "NONE",
    ]);
    run.assert_success();
    assert!(messages(&run.stderr, "mapreduce.Job").contains(&" map 100% reduce 0%"));
    run.assert_says("1 map tasks, 0 reduce tasks");
}

#[test]
fn launch_errors_and_usage_errors_exit_as_hadoop_does() {
    let s = Scratch::new();
    let input = s.write("in.txt", "x\n");
    fs::create_dir(s.path("exists")).unwrap();
    for (args, code, says) in [
        (
            vec!["-input", "missing", "-output", "o", "-mapper", "cat"],
            5,
            "Error Launching job : input path does not exist",
        ),
        (
            vec![
                "-input",
                input.as_str(),
                "-output",
                "exists",
                "-mapper",
                "cat",
            ],
            5,
            "Error Launching job : output directory",
        ),
        (
            vec!["-input", input.as_str(), "-output", "o", "-bogus"],
            1,
            "Unrecognized option: -bogus",
        ),
    ] {
        let mut all = vec!["streaming"];
        all.extend(args);
        let run = s.run(&all);
        assert_eq!(run.code, Some(code), "{run:#?}");
        assert!(
            messages(&run.stderr, "streaming.StreamJob")[0].contains(says),
            "{run:#?}"
        );
        assert!(
            run.stderr.ends_with("Streaming Command Failed!\n"),
            "{run:#?}"
        );
    }
}

#[test]
fn sluice_layout_on_request_and_progress_off() {
    let s = Scratch::new();
    let input = s.write("in.txt", "x\n");
    let run = s.run(&[
        "streaming",
        "-D",
        "sluice.console=sluice",
        "-input",
        &input,
        "-output",
        "o1",
        "-mapper",
        "cat",
    ]);
    run.assert_success();
    assert!(!run.stderr.lines().any(is_record), "{}", run.stderr);
    run.assert_says("sluice: job streaming completed successfully");
    run.assert_says("\tMap-Reduce Framework\n");

    let run = s.run(&[
        "streaming",
        "-D",
        "sluice.console=fancy",
        "-input",
        &input,
        "-output",
        "o2",
        "-mapper",
        "cat",
    ]);
    assert_eq!(run.code, Some(1));
    run.assert_says("sluice.console=fancy: expected hadoop or sluice");

    // Without progress only the final percentages are printed.
    let slow = s.script("slow.sh", "#!/bin/sh\nsleep 1.5\ncat\n");
    for (how, args) in [
        (
            "env",
            vec!["-input", &input, "-output", "o4", "-mapper", &slow],
        ),
        (
            "key",
            vec![
                "-D",
                "sluice.progress=false",
                "-input",
                &input,
                "-output",
                "o5",
                "-mapper",
                &slow,
            ],
        ),
    ] {
        let mut all = vec!["streaming"];
        all.extend(args);
        let mut command = s.command(&all);
        if how == "env" {
            command.env("SLUICE_PROGRESS", "0");
        }
        let run = finish(command);
        run.assert_success();
        let progress: Vec<&str> = messages(&run.stderr, "mapreduce.Job")
            .into_iter()
            .filter(|m| m.starts_with(" map "))
            .collect();
        assert_eq!(progress, [" map 100% reduce 100%"], "{how}: {}", run.stderr);
    }
}

#[test]
fn task_logs_go_on_success_and_stay_named_on_failure() {
    let s = Scratch::new();
    let input = s.write("in.txt", "x\n");
    let noisy = s.script("noisy.sh", "#!/bin/sh\necho chatter >&2\ncat\n");
    s.run(&[
        "streaming",
        "-input",
        &input,
        "-output",
        "o1",
        "-mapper",
        &noisy,
    ])
    .assert_success();
    assert_eq!(
        s.entries("sluice-"),
        Vec::<String>::new(),
        "logs left on success"
    );

    let run = s.run(&[
        "streaming",
        "-D",
        "sluice.keep.logs=true",
        "-input",
        &input,
        "-output",
        "o2",
        "-mapper",
        &noisy,
    ]);
    run.assert_success();
    let kept = s.entries("sluice-job_");
    assert_eq!(kept.len(), 1, "sluice.keep.logs=true kept nothing");
    let logs = s.path(&kept[0]).join("logs");
    run.assert_says(&format!("the programs' stderr is in {}", logs.display()));
    assert!(!s.path(&kept[0]).join("work").exists());
    fs::remove_dir_all(s.path(&kept[0])).unwrap();

    let failing = s.script("failing.sh", "#!/bin/sh\necho failing-marker >&2\nexit 2\n");
    let run = s.run(&[
        "streaming",
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        "o3",
        "-mapper",
        &failing,
    ]);
    assert_eq!(run.code, Some(1));
    let kept = s.entries("sluice-job_");
    assert_eq!(kept.len(), 1, "a failed job's logs must stay");
    let log = s
        .path(&kept[0])
        .join("logs")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(fs::read_to_string(&log).unwrap(), "failing-marker\n");
    run.assert_says(&log.display().to_string());
}

#[test]
fn a_killed_jobs_scratch_directory_is_cleaned_by_a_later_run() {
    let s = Scratch::new();
    let input = s.write("in.txt", "x\n");
    // What a job killed with SIGKILL leaves: its directory, with a lock file nobody holds,
    // made a while ago.
    let stale = s.path("sluice-job_1000000000000_0001");
    fs::create_dir_all(stale.join("work")).unwrap();
    fs::create_dir_all(stale.join("logs")).unwrap();
    fs::write(stale.join("lock"), "").unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(stale.join("lock"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    // A failed job's kept logs have no lock file and stay.
    let kept = s.path("sluice-job_1000000000001_0001");
    fs::create_dir_all(kept.join("logs")).unwrap();
    s.run(&[
        "streaming",
        "-input",
        &input,
        "-output",
        "out",
        "-mapper",
        "cat",
    ])
    .assert_success();
    assert!(!stale.exists(), "the killed job's directory is still there");
    assert!(kept.join("logs").is_dir(), "kept logs were removed");
}

/// Sends SIGINT to a running sluice once `ready` holds; returns how it ended.
fn interrupt(s: &Scratch, args: &[&str], ready: impl Fn() -> bool) -> Option<i32> {
    let mut child = s
        .command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never got ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    status.code()
}

#[test]
fn ctrl_c_exits_130() {
    let s = Scratch::new();
    let input = s.write("in.txt", "x\n");
    let started = s.path("started");
    let mapper = s.script(
        "wait.sh",
        &format!("#!/bin/sh\ntouch {}\nexec sleep 60\n", started.display()),
    );
    let code = interrupt(
        &s,
        &[
            "streaming",
            "-input",
            &input,
            "-output",
            "out",
            "-mapper",
            &mapper,
        ],
        || started.exists(),
    );
    assert_eq!(code, Some(130));
    assert!(!s.path("out").exists());

    // A built-in job on a corpus that takes it a while with one thread.
    s.run(&[
        "gen", "text", "--quiet", "--size", "256MiB", "--output", "corpus",
    ])
    .assert_success();
    let code = interrupt(
        &s,
        &[
            "run",
            "wordcount",
            "--quiet",
            "--threads",
            "1",
            "--input",
            "corpus",
            "--output",
            "counts",
        ],
        || {
            std::thread::sleep(Duration::from_millis(300));
            true
        },
    );
    assert_eq!(code, Some(130));
    assert!(!s.path("counts").exists());
}

#[test]
fn help_streaming_is_streaming_help() {
    let s = Scratch::new();
    let help = s.run(&["help", "streaming"]);
    help.assert_success();
    let own = s.run(&["streaming", "-help"]);
    assert_eq!(help.stdout, own.stdout);
    assert!(help.stdout.contains("-mapper <cmd|class>"));
}

#[test]
fn a_shell_pipeline_is_refused_with_the_way_to_run_it() {
    let s = Scratch::new();
    let input = s.write("in.txt", "x\n");
    let run = s.run(&[
        "streaming",
        "-input",
        &input,
        "-output",
        "out",
        "-mapper",
        "cut -f1 | sort",
    ]);
    assert_eq!(run.code, Some(1));
    run.assert_says("there is no shell");
    run.assert_says("bash -c");
    // Quoted, the same character is an argument like any other.
    let run = s.run(&[
        "streaming",
        "-input",
        &input,
        "-output",
        "out",
        "-mapper",
        "tr 'x' '|'",
    ]);
    run.assert_success();
}

/// On a terminal, `sluice run` draws one bar per phase once its numbers are known: never a bar
/// of `0/0`, never the planning phase drawn as a bar.
#[test]
fn the_progress_bar_starts_with_real_numbers() {
    let s = Scratch::new();
    s.run(&[
        "gen", "text", "--quiet", "--size", "64MiB", "--output", "corpus",
    ])
    .assert_success();
    // Python's pty module runs sluice on a pseudo-terminal and copies what it draws.
    let script = "import pty, sys; pty.spawn(sys.argv[1:])";
    let run = finish({
        let mut command = std::process::Command::new("python3");
        command
            .args(["-c", script, super::harness::SLUICE, "run", "wordcount"])
            .args(["--threads", "1", "--input", "corpus", "--output", "counts"])
            .current_dir(s.dir.path())
            .env("TMPDIR", s.dir.path())
            .env_remove("SLUICE_PROGRESS");
        command
    });
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout.contains("    map ["),
        "no map bar drawn: {run:#?}"
    );
    assert!(!run.stdout.contains(" 0/0"), "a bar of 0/0: {}", run.stdout);
    assert!(
        !run.stdout.contains("0 B/0 B"),
        "a bar of 0 B/0 B: {}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("planning ["),
        "planning drawn as a bar"
    );
}

/// A failed attempt that is tried again is told in both layouts: as Hadoop's `Task Id` record,
/// and as a `sluice:` line.
#[test]
fn a_retried_attempt_is_told_in_both_layouts() {
    for (layout, says) in [
        ("hadoop", "_m_000000_0, Status : FAILED\nError: mapper: "),
        (
            "sluice",
            "sluice: map task 0 (in.txt, bytes 0..2): attempt 1 of 4 failed, trying again",
        ),
    ] {
        let s = Scratch::new();
        s.write("in.txt", "x\n");
        let flag = s.path("failed-once");
        let flaky = s.script(
            "flaky.sh",
            &format!(
                "#!/bin/sh\nif [ ! -f {0} ]; then touch {0}; echo once-marker >&2; exit 1; fi\ncat\n",
                flag.display()
            ),
        );
        let console = format!("sluice.console={layout}");
        let run = s.run(&[
            "streaming",
            "-D",
            &console,
            "-input",
            "in.txt",
            "-output",
            "out",
            "-mapper",
            &flaky,
        ]);
        run.assert_success();
        run.assert_says(says);
        run.assert_says("once-marker");
    }
}
