//! The variables a cluster sets in the tasks' environment from `mapreduce.map.env`,
//! `mapreduce.reduce.env`, `mapred.child.env` and `mapreduce.admin.user.env`: `sluice
//! streaming` must give its programs what Hadoop's tasks on YARN get. The reference is
//! `tests/yarn/streaming-task-env/expected`, the output of that case's job on Hadoop 3.4's
//! `MiniMRYarnCluster` (checked there by `crates/jni/tests/plugin_yarn.rs`: Hadoop's local
//! mode starts no process per task and ignores these keys, so the differential cases of
//! `tests/streaming.rs` cannot show it).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sluice_testkit::Workers;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// The case's directory.
fn case() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/yarn/streaming-task-env")
}

/// The case's arguments (one per line), with its places filled in for local files.
fn case_arguments(output: &Path) -> Vec<String> {
    let case = case();
    fs::read_to_string(case.join("args"))
        .unwrap()
        .lines()
        .map(|line| {
            line.replace("{case}", &case.display().to_string())
                .replace("{input}", &case.join("input").display().to_string())
                .replace("{output}", &output.display().to_string())
        })
        .collect()
}

/// Runs `sluice ARGS` in `cwd` with `env` set, and without the `LD_LIBRARY_PATH` the test
/// runner may have (a YARN container's has only its directory and what the job adds).
fn sluice(args: &[String], cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(SLUICE);
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("LD_LIBRARY_PATH");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {:?}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn part(output: &Path) -> String {
    fs::read_to_string(output.join("part-00000")).unwrap()
}

fn write_script(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_programs_get_the_variables_hadoops_tasks_get_on_yarn() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let mut args = vec!["streaming".to_string()];
    args.extend(case_arguments(&output));
    assert_ok(&sluice(&args, dir.path(), &[]), "the case");
    let expected = fs::read_to_string(case().join("expected")).unwrap();
    assert_eq!(part(&output), expected);
}

#[test]
fn on_workers_the_programs_get_the_same_variables_expanded_from_the_workers_environment() {
    let dir = tempfile::tempdir().unwrap();
    let workers = Workers::start(Path::new(SLUICE), &dir.path().join("w"), 2, "256MiB", |c| {
        c.env("SLUICE_WORKER_ONLY", "from the worker")
            .env_remove("LD_LIBRARY_PATH");
    });
    let output = dir.path().join("out");
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(case_arguments(&output));
    assert_ok(&sluice(&args, dir.path(), &[]), "the case on workers");
    let expected = fs::read_to_string(case().join("expected")).unwrap();
    assert_eq!(part(&output), expected);

    // `$NAME` is the task's own environment: the worker's, not the submitter's.
    write_script(
        &dir.path().join("print.sh"),
        "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' \"$W\"\n",
    );
    let output = dir.path().join("out2");
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    for a in [
        "-D",
        "mapreduce.map.env=W=[$SLUICE_WORKER_ONLY]",
        "-files",
        "print.sh",
        "-input",
    ] {
        args.push(a.to_string());
    }
    args.push(case().join("input").display().to_string());
    for a in ["-mapper", "print.sh", "-reducer", "NONE", "-output"] {
        args.push(a.to_string());
    }
    args.push(output.display().to_string());
    let out = sluice(
        &args,
        dir.path(),
        &[("SLUICE_WORKER_ONLY", "from the submitter")],
    );
    assert_ok(&out, "a job expanding a worker's variable");
    // A line without a tab is a key with an empty value, which Hadoop's output writes after a tab.
    assert_eq!(part(&output), "[from the worker]\t\n");
    assert!(workers.scratch_is_empty());
}

#[test]
fn a_path_the_variables_set_is_where_the_programs_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    write_script(
        &bin.join("only-in-here"),
        "#!/bin/sh\ncat >/dev/null\necho found\n",
    );
    let input = case().join("input").display().to_string();
    let run = |settings: &[String], out: &str| {
        let mut args = vec!["streaming".to_string()];
        args.extend(settings.iter().cloned());
        for a in [
            "-input",
            &input,
            "-mapper",
            "only-in-here",
            "-reducer",
            "NONE",
        ] {
            args.push(a.to_string());
        }
        args.extend(["-output".to_string(), out.to_string()]);
        sluice(&args, dir.path(), &[])
    };
    let setting = format!("mapreduce.map.env=PATH={}:$PATH", bin.display());
    let out = run(&["-D".to_string(), setting], "found");
    assert_ok(&out, "a mapper on the PATH the variables set");
    assert_eq!(part(&dir.path().join("found")), "found\t\n");

    // A relative directory of that PATH is in the task's working directory, as on YARN:
    // `tools` shipped with -files.
    let tools = dir.path().join("tools");
    fs::create_dir(&tools).unwrap();
    write_script(
        &tools.join("in-tools"),
        "#!/bin/sh\ncat >/dev/null\necho from tools\n",
    );
    let mut args = vec!["streaming".to_string()];
    for a in [
        "-D",
        "mapreduce.map.env=PATH=tools:$PATH",
        "-files",
        &tools.display().to_string(),
        "-input",
        &input,
        "-mapper",
        "in-tools",
        "-reducer",
        "NONE",
        "-output",
        "from-tools",
    ] {
        args.push(a.to_string());
    }
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let out = sluice(&args, &elsewhere, &[]);
    assert_ok(
        &out,
        "a mapper on a relative PATH directory shipped with -files",
    );
    assert_eq!(part(&elsewhere.join("from-tools")), "from tools\t\n");

    // Without the setting the program is nowhere to be found: the job fails.
    let out = run(&[], "not-found");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only-in-here"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_variable_key_without_a_variable_name_is_refused_before_the_job_starts() {
    let dir = tempfile::tempdir().unwrap();
    let input = case().join("input").display().to_string();
    let args: Vec<String> = [
        "streaming",
        "-D",
        "mapreduce.reduce.env.NOT.A.NAME=1",
        "-input",
        &input,
        "-output",
        "out",
        "-mapper",
        "cat",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = sluice(&args, dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mapreduce.reduce.env.NOT.A.NAME") && stderr.contains("'NOT.A.NAME'"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists());
}

/// A C++ or C mapper linked against a library shipped beside it with `-files` runs, as on
/// YARN, where the container's directory starts `LD_LIBRARY_PATH` (the loader finds no
/// library there otherwise: the program is built without a run path).
#[test]
fn a_program_finds_a_library_shipped_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let build = dir.path().join("build");
    fs::create_dir(&build).unwrap();
    fs::write(
        build.join("greet.c"),
        "const char *greeting(void) { return \"hello from the library\"; }\n",
    )
    .unwrap();
    fs::write(
        build.join("mapper.c"),
        "#include <stdio.h>\nconst char *greeting(void);\n\
         int main(void) { char line[256]; while (fgets(line, sizeof line, stdin)) {} \
         printf(\"%s\\n\", greeting()); return 0; }\n",
    )
    .unwrap();
    let cc = |args: &[&str]| {
        let status = Command::new("cc")
            .args(args)
            .current_dir(&build)
            .status()
            .unwrap_or_else(|e| panic!("cannot run cc (a C compiler is needed): {e}"));
        assert!(status.success(), "cc {args:?}");
    };
    cc(&["-shared", "-fPIC", "-o", "libgreet.so", "greet.c"]);
    cc(&["-o", "mapper", "mapper.c", "-L.", "-lgreet"]);
    let input = case().join("input").display().to_string();
    let files = format!(
        "{},{}",
        build.join("libgreet.so").display(),
        build.join("mapper").display()
    );
    let args: Vec<String> = [
        "streaming",
        "-files",
        &files,
        "-input",
        &input,
        "-mapper",
        "mapper",
        "-reducer",
        "NONE",
        "-output",
        "out",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = sluice(&args, dir.path(), &[]);
    assert_ok(&out, "a mapper with a shipped library");
    assert_eq!(part(&dir.path().join("out")), "hello from the library\t\n");
}
