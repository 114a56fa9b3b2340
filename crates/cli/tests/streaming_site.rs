//! `HADOOP_CONF_DIR`'s `mapred-site.xml` and a streaming job: Hadoop's job reads the file
//! beneath everything the command line sets (its `-conf` files cannot change what the site
//! file marks final; its `-D` settings can), and so does `sluice streaming`, on one machine
//! and on workers (the submitter's file, not the workers'). How `-conf` files and `-D`
//! settings stack is compared with Hadoop by the differential case
//! `conf-files-beneath-the-command-line` (`tests/streaming.rs`); the site file is the first of
//! those files.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use sluice_testkit::Workers;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn write_site(dir: &Path, properties: &[(&str, &str, bool)]) {
    fs::create_dir_all(dir).unwrap();
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value, final_) in properties {
        xml.push_str(&format!(
            "  <property><name>{name}</name><value>{value}</value>{}</property>\n",
            if *final_ { "<final>true</final>" } else { "" }
        ));
    }
    xml.push_str("</configuration>\n");
    fs::write(dir.join("mapred-site.xml"), xml).unwrap();
}

/// A job in `dir` whose mapper prints the variables that show the site's keys; `extra` come
/// first (generic options).
fn job(dir: &Path, conf_dir: &Path, extra: &[&str], output: &str) -> Output {
    let print = dir.join("print.sh");
    if !print.exists() {
        fs::write(
            &print,
            "#!/bin/sh\ncat >/dev/null\n\
             printf '%s\\n' \"site=$my_site_key locked=$locked_key var=$SITE_VAR\"\n",
        )
        .unwrap();
        fs::set_permissions(&print, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(dir.join("in.txt"), "a\n").unwrap();
    }
    let mut args: Vec<String> = vec!["streaming".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    for a in [
        "-input",
        "in.txt",
        "-mapper",
        "./print.sh",
        "-reducer",
        "cat",
        "-output",
        output,
    ] {
        args.push(a.to_string());
    }
    Command::new(SLUICE)
        .args(&args)
        .current_dir(dir)
        .env("HADOOP_CONF_DIR", conf_dir)
        .output()
        .unwrap()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every part file's lines, sorted, and how many part files there are.
fn lines(output: &Path) -> (Vec<String>, usize) {
    let mut parts = 0;
    let mut lines = Vec::new();
    for entry in fs::read_dir(output).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with("part-") {
            parts += 1;
            let text = fs::read_to_string(entry.path()).unwrap();
            lines.extend(text.lines().map(str::to_string));
        }
    }
    lines.sort();
    (lines, parts)
}

const SITE: &[(&str, &str, bool)] = &[
    ("my.site.key", "site", false),
    ("locked.key", "site", true),
    ("mapreduce.job.reduces", "3", false),
    ("mapreduce.map.env", "SITE_VAR=from-site", false),
    // What Hadoop 3 clusters' files hold, and a job must not trip on.
    ("mapreduce.framework.name", "yarn", false),
    (
        "mapreduce.application.classpath",
        "$HADOOP_MAPRED_HOME/share/hadoop/mapreduce/*",
        false,
    ),
    (
        "yarn.app.mapreduce.am.env",
        "HADOOP_MAPRED_HOME=/opt/hadoop",
        false,
    ),
];

#[test]
fn the_site_files_keys_lie_beneath_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("conf");
    write_site(&site, SITE);
    fs::write(
        dir.path().join("user.xml"),
        "<configuration>\
         <property><name>locked.key</name><value>user-file</value></property>\
         <property><name>my.site.key</name><value>user-file</value></property>\
         </configuration>",
    )
    .unwrap();

    let out = job(dir.path(), &site, &[], "plain");
    assert_ok(&out);
    let (found, parts) = lines(&dir.path().join("plain"));
    assert_eq!(found, ["site=site locked=site var=from-site\t"]);
    assert_eq!(parts, 3, "mapreduce.job.reduces of the site file");

    // A -conf file changes what the site file leaves open, not what it marks final.
    let out = job(dir.path(), &site, &["-conf", "user.xml"], "with-conf");
    assert_ok(&out);
    assert_eq!(
        lines(&dir.path().join("with-conf")).0,
        ["site=user-file locked=site var=from-site\t"]
    );

    // -D changes both.
    let out = job(
        dir.path(),
        &site,
        &["-D", "locked.key=dash-D", "-D", "mapreduce.job.reduces=1"],
        "dash-d",
    );
    assert_ok(&out);
    assert_eq!(
        lines(&dir.path().join("dash-d")),
        (
            vec!["site=site locked=dash-D var=from-site\t".to_string()],
            1
        )
    );

    // Without the file nothing is read.
    let out = job(dir.path(), &dir.path().join("elsewhere"), &[], "none");
    assert_ok(&out);
    assert_eq!(
        lines(&dir.path().join("none")),
        (vec!["site= locked= var=\t".to_string()], 1)
    );
}

#[test]
fn a_refused_key_in_the_site_file_is_named_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("conf");
    write_site(
        &site,
        &[(
            "mapreduce.input.linerecordreader.line.maxlength",
            "1000",
            false,
        )],
    );
    let out = job(dir.path(), &site, &[], "refused");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = site.join("mapred-site.xml");
    assert!(
        stderr.contains(&format!(
            "{} sets mapreduce.input.linerecordreader.line.maxlength=1000",
            file.display()
        )),
        "{stderr}"
    );
    assert!(!dir.path().join("refused").exists());
    // A key refused whatever its value: the way out is the file.
    write_site(&site, &[("mapreduce.job.cache.files", "hdfs:///x", false)]);
    let out = job(dir.path(), &site, &[], "refused");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mapreduce.job.cache.files=hdfs:///x")
            && stderr.contains("(remove it from the file)"),
        "{stderr}"
    );
    // A task variable's key without a variable name: named with its file too.
    write_site(&site, &[("mapreduce.reduce.env.NOT.A.NAME", "1", false)]);
    let out = job(dir.path(), &site, &[], "refused");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} sets mapreduce.reduce.env.NOT.A.NAME=1",
            file.display()
        )),
        "{stderr}"
    );
    assert!(!dir.path().join("refused").exists());
    // The message's way out works.
    write_site(
        &site,
        &[(
            "mapreduce.input.linerecordreader.line.maxlength",
            "1000",
            false,
        )],
    );
    let out = job(
        dir.path(),
        &site,
        &[
            "-D",
            "mapreduce.input.linerecordreader.line.maxlength=2147483647",
        ],
        "accepted",
    );
    assert_ok(&out);
}

#[test]
fn on_workers_the_submitters_site_file_counts() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("conf");
    write_site(&site, SITE);
    let theirs = dir.path().join("workers-conf");
    write_site(
        &theirs,
        &[
            ("my.site.key", "worker", true),
            ("mapreduce.map.env", "SITE_VAR=from-worker", true),
        ],
    );
    let workers = Workers::start(Path::new(SLUICE), &dir.path().join("w"), 2, "256MiB", |c| {
        c.env("HADOOP_CONF_DIR", &theirs);
    });
    let args = workers.args();
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = job(dir.path(), &site, &extra, "cluster");
    assert_ok(&out);
    assert_eq!(
        lines(&dir.path().join("cluster")),
        (vec!["site=site locked=site var=from-site\t".to_string()], 3)
    );
    assert!(workers.scratch_is_empty());
}

#[test]
fn a_site_file_that_does_not_parse_fails_jobs_naming_it_but_not_the_usage() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("conf");
    fs::create_dir_all(&site).unwrap();
    fs::write(site.join("mapred-site.xml"), "<configuration><property>").unwrap();
    let help = Command::new(SLUICE)
        .args(["streaming", "-help"])
        .env("HADOOP_CONF_DIR", &site)
        .output()
        .unwrap();
    assert_ok(&help);
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("Usage: sluice streaming"));

    let out = job(dir.path(), &site, &[], "out");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&site.join("mapred-site.xml").display().to_string())
            && stderr.contains("HADOOP_CONF_DIR"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn spill_directories_from_the_site_file_that_cannot_be_used_are_named_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("conf");
    // A file where a directory would have to be: it can be neither made nor written to.
    let blocker = dir.path().join("not-a-dir");
    fs::write(&blocker, "").unwrap();
    let spill = blocker.join("local").display().to_string();
    write_site(&site, &[("mapreduce.cluster.local.dir", &spill, false)]);
    let out = job(dir.path(), &site, &[], "out");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("from {}", site.join("mapred-site.xml").display()))
            && stderr.contains("no directory can be used"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists());
}
