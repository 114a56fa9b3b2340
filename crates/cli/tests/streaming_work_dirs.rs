//! Each run of a streaming program works in a directory of its own, as each of Hadoop's tasks
//! works in its container's directory: programs that run at once never see (or overwrite) each
//! other's scratch files, a run never finds what an earlier one left, and every run finds the
//! job's shipped files and the entries of the directory the job was started from.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use sluice_testkit::Workers;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn write_script(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn sluice(args: &[&str], cwd: &Path) -> Output {
    Command::new(SLUICE)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {:?}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every line of the part files in `output`, counted.
fn output_lines(output: &Path) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    for entry in fs::read_dir(output).unwrap() {
        let entry = entry.unwrap();
        if !entry.file_name().to_string_lossy().starts_with("part-") {
            continue;
        }
        for line in fs::read_to_string(entry.path()).unwrap().lines() {
            *lines
                .entry(line.trim_end_matches('\t').to_string())
                .or_default() += 1;
        }
    }
    lines
}

/// Eight input files of distinct numbers, and the count of each line they hold: what a job
/// whose programs pass their input through must write.
fn inputs(dir: &Path) -> BTreeMap<String, usize> {
    let input = dir.join("in");
    fs::create_dir(&input).unwrap();
    let mut expected = BTreeMap::new();
    for file in 0..8 {
        let text: String = (0..300).map(|i| format!("{}\n", file * 1000 + i)).collect();
        for line in text.lines() {
            *expected.entry(line.to_string()).or_default() += 1;
        }
        fs::write(input.join(format!("f{file}.txt")), text).unwrap();
    }
    expected
}

/// A program that keeps its input in a scratch file of a fixed name in its working directory,
/// waits, then writes the file back: with a directory shared among the programs running at
/// once, one overwrites another's file and the job writes the wrong lines with exit 0.
const THROUGH_A_SCRATCH_FILE: &str = "#!/bin/sh\ncat > scratch.txt\nsleep 0.2\ncat scratch.txt\n";

/// The same, keeping the file beside the script itself (`$0`'s directory), as scripts that
/// `cd "$(dirname "$0")"` do: the program must be found in the run's own directory.
const BESIDE_ITSELF: &str =
    "#!/bin/sh\nd=$(dirname \"$0\")\ncat > \"$d/beside.tmp\"\nsleep 0.2\ncat \"$d/beside.tmp\"\n";

fn runs_at_once_keep_their_scratch_files_apart(workers: Option<&Workers>) {
    let dir = tempfile::tempdir().unwrap();
    let expected = inputs(dir.path());
    write_script(&dir.path().join("through.sh"), THROUGH_A_SCRATCH_FILE);
    write_script(&dir.path().join("beside.sh"), BESIDE_ITSELF);
    let mut args = vec!["streaming"];
    let worker_args = workers.map(Workers::args).unwrap_or_default();
    args.extend(worker_args.iter().map(String::as_str));
    args.extend([
        "-D",
        "sluice.threads=4",
        "-files",
        "through.sh,beside.sh",
        "-input",
        "in",
        "-output",
        "out",
        "-mapper",
        "beside.sh",
        "-reducer",
        "through.sh",
        "-numReduceTasks",
        "4",
    ]);
    let out = sluice(&args, dir.path());
    assert_ok(&out, "the job");
    assert_eq!(output_lines(&dir.path().join("out")), expected);
}

#[test]
fn programs_running_at_once_keep_their_scratch_files_apart() {
    runs_at_once_keep_their_scratch_files_apart(None);
}

#[test]
fn on_workers_programs_running_at_once_keep_their_scratch_files_apart() {
    let dir = tempfile::tempdir().unwrap();
    let workers = Workers::start(
        Path::new(SLUICE),
        &dir.path().join("w"),
        2,
        "256MiB",
        |_| {},
    );
    runs_at_once_keep_their_scratch_files_apart(Some(&workers));
    assert!(workers.scratch_is_empty());
}

/// A run never finds what an earlier run left in its directory, even a run of the same job in
/// a directory used before; and each finds the shipped file, an archive-like directory, and
/// the entries of the start directory, however an earlier run changed its own links to them.
#[test]
fn a_run_finds_its_directory_as_new() {
    let dir = tempfile::tempdir().unwrap();
    let expected = inputs(dir.path());
    fs::write(dir.path().join("beside.txt"), "from the start directory\n").unwrap();
    fs::create_dir(dir.path().join("tree")).unwrap();
    fs::write(dir.path().join("tree/leaf.txt"), "leaf\n").unwrap();
    write_script(
        &dir.path().join("check.sh"),
        "#!/bin/sh\n\
         for left in leftover leftdir; do\n\
           if [ -e \"$left\" ]; then echo \"found $left\" >&2; exit 3; fi\n\
         done\n\
         grep -q 'from the start directory' beside.txt || exit 4\n\
         grep -q leaf tree/leaf.txt || exit 5\n\
         [ -x check.sh ] || exit 6\n\
         touch leftover; mkdir -p leftdir/deeper; touch leftdir/deeper/f\n\
         rm beside.txt; ln -sfn /nowhere tree\n\
         cat\n",
    );
    let out = sluice(
        &[
            "streaming",
            "-D",
            "sluice.threads=1",
            "-files",
            "check.sh",
            "-input",
            "in",
            "-output",
            "out",
            "-mapper",
            "check.sh",
            "-reducer",
            "NONE",
        ],
        dir.path(),
    );
    assert_ok(&out, "the job");
    assert_eq!(output_lines(&dir.path().join("out")), expected);
    // What the runs did to their own directories stayed there.
    assert!(dir.path().join("beside.txt").is_file());
    assert!(dir.path().join("tree/leaf.txt").is_file());
    assert!(!dir.path().join("leftover").exists());
}
