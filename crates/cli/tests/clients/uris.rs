//! `file:` URIs, as tools that drive Hadoop pass every path: accepted by every option that
//! takes a path, in the three forms Hadoop's local file system accepts; other schemes refused.
//! The worst failure here is silent: output written somewhere else (a relative directory named
//! `file:`) while the job reports success, so every test also checks that nothing appeared in
//! the working directory.

use std::fs;

use super::harness::{output_text, Scratch};

/// Makes a URI of one form from an absolute path.
type UriForm = fn(&str) -> String;

/// The forms of a `file:` URI for an absolute path.
const FORMS: [(&str, UriForm); 3] = [
    ("file:///", |p| format!("file://{p}")),
    ("file:/", |p| format!("file:{p}")),
    ("file://localhost/", |p| format!("file://localhost{p}")),
];

/// Nothing but the test's own files in the scratch directory: no `file:` directory.
fn assert_no_stray_directory(s: &Scratch) {
    assert!(
        s.entries("file").is_empty(),
        "a path was taken for a relative directory: {:?}",
        s.entries("file")
    );
}

#[test]
fn streaming_takes_file_uris_for_every_path() {
    for (form, uri) in FORMS {
        let s = Scratch::new();
        s.write("in/a.txt", "x\t1\ny\t2\n");
        s.write("in/b.txt", "z\t3\n");
        let script = s.script("tools/tag.sh", "#!/bin/sh\nsed \"s/^/$(cat word.txt):/\"\n");
        let word = s.write("data/word.txt", "tagged\n");
        let conf = s.write(
            "job.xml",
            "<configuration><property><name>mapreduce.output.textoutputformat.separator</name>\
             <value>|</value></property></configuration>",
        );
        let output = s.arg("result/out");
        let run = s.run(&[
            "streaming",
            "-conf",
            &uri(&conf),
            "-files",
            &uri(&script),
            "-input",
            &uri(&s.arg("in")),
            "-output",
            &uri(&output),
            "-file",
            &uri(&word),
            "-mapper",
            "tag.sh",
            "-reducer",
            "cat",
        ]);
        run.assert_success();
        assert_eq!(run.stdout, "", "the console goes to stderr");
        assert_eq!(
            output_text(&s.path("result/out")),
            "tagged:x|1\ntagged:y|2\ntagged:z|3\n",
            "form {form}"
        );
        assert_no_stray_directory(&s);
    }
}

#[test]
fn run_jobs_take_file_uris_for_every_path() {
    for (form, uri) in FORMS {
        let s = Scratch::new();
        let input = s.write("in/words.txt", "b a b\nc b\n");
        fs::create_dir(s.path("spill")).unwrap();
        let run = s.run(&[
            "run",
            "wordcount",
            "--quiet",
            "--input",
            &uri(&input),
            "--output",
            &uri(&s.arg("counts")),
            "--spill-dir",
            &uri(&s.arg("spill")),
            "--report",
            &uri(&s.arg("report.json")),
        ]);
        run.assert_success();
        assert_eq!(
            output_text(&s.path("counts")),
            "a\t1\nb\t3\nc\t1\n",
            "form {form}"
        );
        assert!(s.path("report.json").is_file(), "form {form}");

        let tera = |args: &[&str]| {
            let mut all = vec!["run"];
            all.extend_from_slice(args);
            all.push("--quiet");
            s.run(&all).assert_success();
        };
        tera(&["teragen", "--rows", "1000", "--output", &uri(&s.arg("tg"))]);
        tera(&[
            "terasort",
            "--input",
            &uri(&s.arg("tg")),
            "--output",
            &uri(&s.arg("ts")),
        ]);
        tera(&[
            "teravalidate",
            "--input",
            &uri(&s.arg("ts")),
            "--output",
            &uri(&s.arg("tv")),
        ]);
        assert!(s.path("tv/_SUCCESS").is_file(), "form {form}");
        s.run(&[
            "gen",
            "text",
            "--quiet",
            "--size",
            "10KiB",
            "--output",
            &uri(&s.arg("corpus")),
        ])
        .assert_success();
        assert!(s.path("corpus").is_dir(), "form {form}");
        assert_no_stray_directory(&s);
    }
}

/// Hadoop's `{a,b}` in an `--input` list, as wrappers build date ranges: a comma inside a
/// group is the group's, not the list's, in every URI form.
#[test]
fn run_inputs_take_brace_alternatives_inside_comma_lists() {
    for (form, uri) in FORMS {
        let s = Scratch::new();
        s.write("logs/day-01/a.txt", "a b\n");
        s.write("logs/day-02/b.txt", "b c\n");
        s.write("logs/day-03/c.txt", "never read\n");
        let extra = s.write("extra.txt", "c d\n");
        let list = format!("{},{}", uri(&s.arg("logs/day-0{1,2,9}")), uri(&extra));
        s.run(&[
            "run",
            "wordcount",
            "--quiet",
            "--input",
            &list,
            "--output",
            &uri(&s.arg("counts")),
        ])
        .assert_success();
        assert_eq!(
            output_text(&s.path("counts")),
            "a\t1\nb\t2\nc\t2\nd\t1\n",
            "form {form}"
        );
        assert_no_stray_directory(&s);
    }
}

#[test]
fn other_schemes_and_hosts_are_refused_by_every_option() {
    let s = Scratch::new();
    let input = s.write("in.txt", "a\n");
    let out = s.arg("out");
    let remote = "hdfs://namenode:8020/data";
    let streaming = |option: &str, value: &str| -> Vec<String> {
        let mut args = vec!["streaming".to_string()];
        if option == "-conf" || option == "-files" {
            args.extend([option.to_string(), value.to_string()]);
        }
        for (name, default) in [("-input", input.as_str()), ("-output", out.as_str())] {
            args.push(name.into());
            args.push(if name == option { value } else { default }.into());
        }
        if option == "-file" {
            args.extend([option.to_string(), value.to_string()]);
        }
        args.extend(["-mapper", "cat", "-reducer", "NONE"].map(String::from));
        args
    };
    for option in ["-input", "-output", "-conf", "-files", "-file"] {
        // -input, -output and -files may be on HDFS or S3 (tested against real servers in
        // `stores`); -conf and -file may not.
        let remote_ok = matches!(option, "-input" | "-output" | "-files");
        for value in [
            remote,
            "s3a://bucket/key",
            "file://elsewhere/p",
            "file:relative",
        ]
        .into_iter()
        .filter(|v| !(remote_ok && v.contains("://") && !v.starts_with("file:")))
        {
            let args = streaming(option, value);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = s.run(&args);
            assert_eq!(run.code, Some(1), "{option} {value}: {run:#?}");
            run.assert_says(&format!("{option} {value}: "));
            assert!(!s.path("out").exists());
        }
    }
    // Spill files and reports stay on this machine.
    for option in ["--spill-dir", "--report"] {
        let mut args = vec!["run", "wordcount", "--input", &input, "--output", &out];
        args.extend([option, remote]);
        let run = s.run(&args);
        assert_eq!(run.code, Some(2), "{option}: {run:#?}");
        run.assert_says("hdfs:// locations are not supported here");
        assert!(!s.path("out").exists());
    }
    for (option, value) in [
        ("--input", "gs://bucket/in"),
        ("--output", "file://elsewhere/o"),
    ] {
        let mut args = vec!["run", "wordcount", "--input", &input, "--output", &out];
        match option {
            "--input" => args[3] = value,
            _ => args[5] = value,
        }
        let run = s.run(&args);
        assert_eq!(run.code, Some(2), "{option}: {run:#?}");
        run.assert_says(value);
        assert!(!s.path("out").exists());
    }
    assert_no_stray_directory(&s);
}
