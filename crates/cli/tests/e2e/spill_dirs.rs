//! Spill files on several local disks: `--spill-dir A,B` of `sluice run`, and Hadoop's
//! `mapreduce.cluster.local.dir` of `sluice streaming`, whose directories that cannot be used
//! are passed over (as Hadoop's local directory allocator does) and none of which usable
//! fails the job before it starts.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use sluice_testkit::{spill_dirs, wait_until};

use crate::util::{list_dir, sluice, SLUICE};

/// Whether `disk` holds a job's spill directory.
fn spilling(disk: &Path) -> bool {
    !spill_dirs(disk).is_empty()
}

/// Four input files of `key\tvalue` lines; returns every line, sorted (what an identity job
/// writes, in some order of values within a key).
fn write_input(dir: &Path) -> Vec<String> {
    let input = dir.join("in");
    fs::create_dir_all(&input).unwrap();
    let mut lines = Vec::new();
    for f in 0..4 {
        let text: Vec<String> = (0..500)
            .map(|i| format!("k{:03}\tf{f} v{i}", i % 37))
            .collect();
        fs::write(input.join(format!("part-{f}.txt")), text.join("\n") + "\n").unwrap();
        lines.extend(text);
    }
    lines.sort();
    lines
}

/// Every line of an output directory's part files, sorted.
fn output_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for name in list_dir(dir) {
        if name.starts_with("part-") {
            let text = fs::read_to_string(dir.join(&name)).unwrap();
            lines.extend(text.lines().map(str::to_string));
        }
    }
    lines.sort();
    lines
}

/// Runs an identity streaming job over [`write_input`]'s files in `dir`, with `settings` as
/// `-D` values and a mapper slow enough (a second per task) for its spill directories to be
/// seen: asserts that every directory of `watched` held one while the job ran, that the job
/// succeeded with every input line in `output`, and that it left the directories empty.
/// Returns the job's standard error.
fn run_watched(dir: &Path, output: &str, settings: &[String], watched: &[&Path]) -> String {
    let slow = dir.join("slow.sh");
    fs::write(&slow, "#!/bin/sh\nsleep 1\nexec cat\n").unwrap();
    fs::set_permissions(&slow, fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = Command::new(SLUICE);
    command.arg("streaming");
    for setting in settings {
        command.args(["-D", setting]);
    }
    let child = command
        .args(["-files", "slow.sh", "-input", "in", "-output", output])
        .args(["-mapper", "./slow.sh", "-reducer", "cat"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let spilled = wait_until(Duration::from_secs(60), || {
        watched.iter().all(|disk| spilling(disk))
    });
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(spilled, "no spill directory in one of {watched:?}");
    assert_eq!(output_lines(&dir.join(output)), write_input(dir));
    for disk in watched {
        assert_eq!(list_dir(disk), Vec::<String>::new(), "{}", disk.display());
    }
    stderr
}

#[test]
fn streaming_spills_in_the_usable_directories_of_mapreduce_cluster_local_dir() {
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path());
    let disks = [dir.path().join("disk1"), dir.path().join("disk2")];
    // No directory can be made under a regular file.
    fs::write(dir.path().join("blocked"), "").unwrap();
    let blocked = dir.path().join("blocked/local");
    let local_dirs = format!(
        "mapreduce.cluster.local.dir={}, {},file://{}",
        disks[0].display(),
        blocked.display(),
        disks[1].display()
    );
    let stderr = run_watched(dir.path(), "out", &[local_dirs], &[&disks[0], &disks[1]]);
    let passed_over = format!("mapreduce.cluster.local.dir: {}", blocked.display());
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(&passed_over) && l.contains("not used")),
        "the unusable directory is not named: {stderr}"
    );
    assert!(!blocked.exists());

    // None usable: the job fails before it starts, and writes nothing.
    let none = format!("mapreduce.cluster.local.dir={}", blocked.display());
    let out = sluice(
        &[
            "streaming",
            "-D",
            &none,
            "-input",
            "in",
            "-output",
            "none",
            "-mapper",
            "cat",
            "-reducer",
            "cat",
        ],
        Some(dir.path()),
    );
    assert_ne!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("no directory can be used"),
        "{}",
        out.stderr
    );
    assert!(!dir.path().join("none").exists());
}

/// MR1-era scripts name the directories by their Hadoop 1 key, which Hadoop 3 still reads.
#[test]
fn streaming_spills_in_the_directories_of_the_old_name_mapred_local_dir() {
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path());
    let disk = dir.path().join("disk");
    fs::write(dir.path().join("blocked"), "").unwrap();
    let blocked = dir.path().join("blocked/local");
    let setting = format!("mapred.local.dir={},{}", disk.display(), blocked.display());
    let stderr = run_watched(dir.path(), "out", &[setting], &[&disk]);
    // Named as given.
    let passed_over = format!("mapred.local.dir: {}", blocked.display());
    assert!(
        stderr.lines().any(|l| l.contains(&passed_over)),
        "the unusable directory is not named under the key given: {stderr}"
    );
}

#[test]
fn streaming_spills_under_hadoop_tmp_dir_as_hadoop_does() {
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path());
    // Hadoop's default local directory: ${hadoop.tmp.dir}/mapred/local, with the variables
    // of the value substituted.
    let tmp = dir.path().join("hadoop-tmp");
    let mut settings = vec![
        format!("scratch.root={}", dir.path().display()),
        "hadoop.tmp.dir=${scratch.root}/hadoop-tmp".to_string(),
    ];
    run_watched(dir.path(), "out", &settings, &[&tmp.join("mapred/local")]);

    // mapreduce.cluster.local.dir, when set, is where spills go.
    let local = dir.path().join("local");
    settings.push(format!("mapreduce.cluster.local.dir={}", local.display()));
    fs::remove_dir_all(&tmp).unwrap();
    run_watched(dir.path(), "out2", &settings, &[&local]);
    assert!(!tmp.exists(), "hadoop.tmp.dir was used");
}

#[test]
fn a_built_in_job_uses_every_spill_dir_given() {
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path());
    let disks = [dir.path().join("disk1"), dir.path().join("disk2")];
    for disk in &disks {
        fs::create_dir(disk).unwrap();
    }
    let run = |output: &str, spill_dir: &str| {
        sluice(
            &[
                "run",
                "wordcount",
                "--quiet",
                "--memory",
                "4MiB",
                "--input",
                "in",
                "--output",
                output,
                "--spill-dir",
                spill_dir,
            ],
            Some(dir.path()),
        )
    };
    let one = dir.path().join("one");
    fs::create_dir(&one).unwrap();
    run("single", one.to_str().unwrap()).assert_code(0, "one spill directory");
    let both = format!("{},{}", disks[0].display(), disks[1].display());
    run("spread", &both).assert_code(0, "two spill directories");
    assert_eq!(
        fs::read(dir.path().join("spread/part-r-00000")).unwrap(),
        fs::read(dir.path().join("single/part-r-00000")).unwrap()
    );
    for disk in &disks {
        assert_eq!(list_dir(disk), Vec::<String>::new(), "{}", disk.display());
    }
    // Each directory is checked before the job starts: one that cannot be used fails it,
    // named, with nothing written.
    fs::write(dir.path().join("blocked"), "").unwrap();
    let bad = format!(
        "{},{}",
        disks[0].display(),
        dir.path().join("blocked/x").display()
    );
    let out = run("refused", &bad);
    assert_ne!(out.code(), Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("blocked/x"), "{}", out.stderr);
    assert!(!dir.path().join("refused").exists());
}

/// On a cluster, a built-in job's map task that fails on one worker (its only spill disk is
/// full) is tried again, on another worker, as Hadoop tries a failed attempt again: the job
/// succeeds with the output it has on one machine. (Built-in jobs are tried once on one
/// machine, where they would fail the same way again.)
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "mounts a tmpfs: needs root (cargo test --features test-root)"
)]
fn a_task_failing_on_a_worker_with_a_full_disk_runs_again_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    crate::util::gen_text(&input, "12MiB", 1, 3);
    let full = dir.path().join("full");
    let _mount = crate::util::Mount::tmpfs(&full, "1m");
    // Small budgets: every map task spills.
    let mut workers =
        sluice_testkit::Workers::start(Path::new(SLUICE), &dir.path().join("w"), 1, "8MiB", |_| {});
    workers.add(&dir.path().join("w/scratch-full"), |c| {
        c.arg("--spill-dirs").arg(&full);
    });
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let mut args = vec![
        "run".to_string(),
        "sort".into(),
        "--split-size".into(),
        "2MiB".into(),
        "--input".into(),
        path(&input),
        "--output".into(),
        path(&dir.path().join("cluster")),
    ];
    args.extend(workers.args());
    let run = sluice(&args, None);
    run.assert_code(0, "sort on two workers, one with a full disk");
    assert!(
        run.stderr.contains("No space left on device") && run.stderr.contains("trying again"),
        "no attempt failed on the full disk: {}",
        run.stderr
    );
    let local = dir.path().join("local");
    sluice(
        &[
            "run",
            "sort",
            "-q",
            "--input",
            &path(&input),
            "--output",
            &path(&local),
        ],
        None,
    )
    .assert_code(0, "sort on one machine");
    assert_eq!(
        fs::read(local.join("part-r-00000")).unwrap(),
        fs::read(dir.path().join("cluster/part-r-00000")).unwrap(),
        "the outputs differ"
    );
}

/// On a cluster, a worker whose disk is full cannot take its partitions' input, however often
/// the maps that made it run again: it is left out of the job, its partitions go to the
/// other worker, and the job writes what it writes on one machine. With no other worker, the
/// job fails with the worker's reason and no output, instead of trying for ever.
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "mounts a tmpfs: needs root (cargo test --features test-root)"
)]
fn a_worker_whose_disk_is_full_is_left_out_and_its_partitions_go_to_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    crate::util::gen_text(&input, "20MiB", 4, 5);
    let full = dir.path().join("full");
    let _mount = crate::util::Mount::tmpfs(&full, "3m");
    // Small budgets: received runs go to disk.
    let mut workers =
        sluice_testkit::Workers::start(Path::new(SLUICE), &dir.path().join("w"), 1, "8MiB", |_| {});
    // Its job directory, spills and received runs all on the full disk.
    let on_full = workers.add(&full, |_| {});
    let job = |name: &str, cluster: &[String]| {
        let output = dir.path().join(name);
        let mut args: Vec<String> = [
            "streaming",
            "-D",
            "mapreduce.job.reduces=2",
            "-input",
            input.to_str().unwrap(),
            "-output",
            output.to_str().unwrap(),
            "-mapper",
            "cat",
            "-reducer",
            "cat",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        args.splice(1..1, cluster.iter().cloned());
        let mut job = Command::new(SLUICE)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let ended = wait_until(Duration::from_secs(180), || {
            job.try_wait().unwrap().is_some()
        });
        if !ended {
            let _ = job.kill();
            let _ = job.wait();
            panic!("the job was still running after 180 s");
        }
        let out = job.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            output,
        )
    };
    let (code, stderr, output) = job("out", &workers.args());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("left out: it has no room") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    let (code, stderr, local) = job("local", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        output_lines(&output),
        output_lines(&local),
        "the outputs differ"
    );

    // The full worker alone: nowhere to go.
    let alone = vec![
        "--cluster".to_string(),
        format!("workers={}", workers.addrs()[on_full]),
        "--secret-file".to_string(),
        workers.secret().display().to_string(),
    ];
    let (code, stderr, output) = job("alone", &alone);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(!output.exists(), "output left behind");
}
