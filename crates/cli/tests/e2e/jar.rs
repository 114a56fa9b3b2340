//! `sluice jar hadoop-mapreduce-examples*.jar PROGRAM ARGS`: scripts written for `hadoop jar`
//! run unchanged. Hadoop's positional arguments and generic options reach the job: the outputs
//! are checked against the Python references and against the rows Hadoop's TeraGen writes
//! (its checksum), never against another sluice run.

use std::fs;
use std::path::Path;

use crate::util::{assert_same_output, gen_text, sluice, Reference, SLUICE};

/// Where Hadoop installs its examples jar; sluice reads nothing there.
const EXAMPLES_JAR: &str = "/opt/hadoop/share/hadoop/mapreduce/hadoop-mapreduce-examples-3.4.3.jar";

/// The checksum Hadoop's TeraGen and TeraValidate report for rows 0..1000 (as in `tera.rs`).
const HADOOP_CHECKSUM_1000: &str = "1f9ffe645ec";

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn examples_jar_wordcount_and_grep_take_hadoops_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    gen_text(&corpus, "300KiB", 3, 11);
    let first = corpus.join("part-00000.txt");
    let rest = corpus.join("part-00001.txt");
    assert!(
        first.is_file() && rest.is_file(),
        "gen text wrote other names"
    );

    // Several inputs before the output, reducers from -D, as Hadoop's WordCount takes them.
    let out = dir.path().join("wc");
    let run = sluice(
        &[
            "jar",
            EXAMPLES_JAR,
            "wordcount",
            "-D",
            "mapreduce.job.reduces=3",
            path(&first),
            path(&rest),
            path(&out),
        ],
        None,
    );
    run.assert_code(0, "jar wordcount");
    let expected = dir.path().join("wc-ref");
    Reference::new("wordcount", &expected)
        .args(&["--reducers", "3"])
        .input(&first)
        .input(&rest)
        .run();
    assert_same_output(&out, &expected, "jar wordcount");

    // Grep's regex and group follow the directories; `-Dkey=value` is a generic option too.
    let out = dir.path().join("grep");
    let run = sluice(
        &[
            "jar",
            EXAMPLES_JAR,
            "grep",
            "-Dmapreduce.job.reduces=2",
            path(&corpus),
            path(&out),
            "([a-z]+)ing",
            "1",
        ],
        None,
    );
    run.assert_code(0, "jar grep");
    let expected = dir.path().join("grep-ref");
    Reference::new("grep", &expected)
        .args(&["--pattern", "([a-z]+)ing", "--group", "1"])
        .input(&corpus)
        .run();
    assert_same_output(&out, &expected, "jar grep");
}

#[test]
fn examples_jar_teragen_terasort_teravalidate_take_hadoops_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("gen");
    let sorted = dir.path().join("sorted");
    let report = dir.path().join("report");
    let gen_uri = format!("file://{}", path(&generated));

    let run = sluice(
        &[
            "jar",
            EXAMPLES_JAR,
            "teragen",
            "-D",
            "mapreduce.job.maps=3",
            "1000",
            &gen_uri,
        ],
        None,
    );
    run.assert_code(0, "jar teragen");
    let mut parts: Vec<String> = fs::read_dir(&generated)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("part-m-"))
        .collect();
    parts.sort();
    assert_eq!(parts, ["part-m-00000", "part-m-00001", "part-m-00002"]);
    let rows: Vec<u8> = parts
        .iter()
        .flat_map(|p| fs::read(generated.join(p)).unwrap())
        .collect();
    assert_eq!(rows.len(), 100_000);

    let run = sluice(
        &["jar", EXAMPLES_JAR, "terasort", &gen_uri, path(&sorted)],
        None,
    );
    run.assert_code(0, "jar terasort");
    let mut expected: Vec<&[u8]> = rows.chunks(100).collect();
    expected.sort_by(|a, b| a[..10].cmp(&b[..10]));
    let mut names: Vec<String> = fs::read_dir(&sorted)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("part-r-"))
        .collect();
    names.sort();
    let got: Vec<u8> = names
        .iter()
        .flat_map(|p| fs::read(sorted.join(p)).unwrap())
        .collect();
    assert!(
        got == expected.concat(),
        "terasort's rows are not the sorted rows"
    );

    let run = sluice(
        &[
            "jar",
            EXAMPLES_JAR,
            "teravalidate",
            path(&sorted),
            path(&report),
        ],
        None,
    );
    run.assert_code(0, "jar teravalidate");
    let text = fs::read_to_string(report.join("part-r-00000")).unwrap();
    assert_eq!(text.trim_end(), format!("checksum\t{HADOOP_CHECKSUM_1000}"));
}

#[test]
fn examples_jar_refuses_what_sluice_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Exit status: sluice's refusal 1, a usage error Hadoop's 2.
    for (args, says, code) in [
        (vec!["pi", "2", "10"], "not pi", 1),
        (
            vec!["terasort", path(dir.path())],
            "Usage: terasort <input dir> <output dir>",
            2,
        ),
        (
            vec![
                "wordcount",
                "-libjars",
                "x.jar",
                path(dir.path()),
                path(&out),
            ],
            "-libjars is not supported",
            1,
        ),
    ] {
        let mut all = vec!["jar", EXAMPLES_JAR];
        all.extend(args);
        let run = sluice(&all, None);
        run.assert_code(code, says);
        assert!(run.stderr.contains(says), "{}", run.stderr);
        assert!(!out.exists());
    }
    let run = sluice(
        &["jar", "/opt/app/my-job-1.0.jar", "com.example.Main"],
        None,
    );
    run.assert_code(1, "another jar");
    assert!(run.stderr.contains("Java code"), "{}", run.stderr);
}

/// What `sluice ARGS` writes to a pseudo-terminal (through util-linux's `script`), as a
/// wrapper run from a terminal that logs the console sees it.
fn on_a_terminal(args: &[&str]) -> String {
    let quoted: Vec<String> = std::iter::once(SLUICE)
        .chain(args.iter().copied())
        .map(|arg| format!("'{}'", arg.replace('\'', r"'\''")))
        .collect();
    let out = std::process::Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env_remove("SLUICE_PROGRESS")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux's script runs the command on a pseudo-terminal");
    assert!(out.status.success(), "{args:?} on a terminal: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A wrapper that builds `hadoop jar` lines reads and logs their console: an examples job run
/// through `sluice jar` prints Hadoop's job client records (the job id, `completed
/// successfully`, the counters) and no progress bar, whose escape codes would land in the log,
/// while the same job run as `sluice run` on the terminal draws one.
#[test]
fn examples_jar_jobs_print_hadoops_console_and_no_progress_bar() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "a b\nb c\n").unwrap();

    let direct = dir.path().join("direct");
    let console = on_a_terminal(&[
        "run",
        "wordcount",
        "--input",
        path(&input),
        "--output",
        path(&direct),
    ]);
    assert!(
        console.contains("\x1b["),
        "sluice run drew no bar on the terminal, so this test checks nothing: {console:?}"
    );

    let through_jar = dir.path().join("jar");
    let console = on_a_terminal(&[
        "jar",
        EXAMPLES_JAR,
        "wordcount",
        path(&input),
        path(&through_jar),
    ]);
    assert!(
        !console.contains('\x1b'),
        "escape codes in the console of a jar job: {console:?}"
    );
    let words = fs::read_to_string(through_jar.join("part-r-00000")).unwrap();
    assert_eq!(words, "a\t1\nb\t2\nc\t1\n");

    // What a wrapper looks for, as Hadoop's job client prints it: every record in log4j's
    // layout, the id of the running job completed, and the counters of the 2 lines read.
    let console = console.replace("\r\n", "\n");
    let records: Vec<&str> = console.lines().filter(|l| !l.starts_with('\t')).collect();
    for record in &records {
        let fields: Vec<&str> = record.splitn(4, ' ').collect();
        assert!(
            fields.len() == 4
                && fields[0].len() == 10
                && fields[1].len() == 12
                && ["INFO", "WARN", "ERROR"].contains(&fields[2])
                && fields[3].contains(": "),
            "not a log record: {record:?} in {console}"
        );
    }
    let running = records
        .iter()
        .find_map(|r| r.split_once("INFO mapreduce.Job: Running job: "))
        .map(|(_, id)| id.to_string())
        .unwrap_or_else(|| panic!("no running job: {console}"));
    assert!(running.starts_with("job_"), "{running}");
    // Hadoop's job client says next whether the job runs in uber mode.
    let next = records
        .iter()
        .skip_while(|r| !r.contains("INFO mapreduce.Job: Running job: "))
        .nth(1);
    assert!(
        next.is_some_and(|r| r.ends_with(&format!(
            "INFO mapreduce.Job: Job {running} running in uber mode : false"
        ))),
        "{console}"
    );
    assert!(
        console.contains(&format!(
            "INFO mapreduce.Job: Job {running} completed successfully\n"
        )),
        "{console}"
    );
    assert!(console.contains(" map 100% reduce 100%\n"), "{console}");
    for counter in [
        "\t\tMap input records=2\n",
        "\t\tMap output records=4\n",
        "\t\tMap output bytes=24\n",
        "\t\tReduce input groups=3\n",
        "\t\tReduce output records=3\n",
        "\t\tBytes Read=8\n",
        "\t\tBytes Written=12\n",
    ] {
        assert!(console.contains(counter), "{counter:?} missing: {console}");
    }

    // A failing job says so in the same layout and exits non-zero with nothing written.
    let bad = dir.path().join("bad.gz");
    fs::write(&bad, "not gzip").unwrap();
    let failed = dir.path().join("failed");
    let run = sluice(
        &["jar", EXAMPLES_JAR, "wordcount", path(&bad), path(&failed)],
        None,
    );
    run.assert_code(1, "jar wordcount of a broken gzip file");
    assert!(
        run.stderr
            .contains("failed with state FAILED due to: Task failed task_"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(" ERROR sluice.Job: job wordcount failed"),
        "{}",
        run.stderr
    );
    assert!(!failed.exists());
}

/// `Map output bytes` counts the map output pairs as Hadoop serializes them, whatever form
/// sluice holds them in. The numbers are what Hadoop 3.4.2's own examples printed in local mode
/// for the same inputs: WordCount's Text words and IntWritable counts (four pairs of a
/// two-byte Text and four bytes), Grep's Text matches and LongWritable counts (three of a
/// two-byte Text and eight bytes), TeraSort's ten-byte and ninety-byte Texts (102 bytes a row).
#[test]
fn examples_jar_jobs_count_map_output_bytes_as_hadoop_does() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "a b\nb c\n").unwrap();
    let rows = dir.path().join("rows");
    sluice(&["jar", EXAMPLES_JAR, "teragen", "1000", path(&rows)], None).assert_code(0, "teragen");
    let jobs: [(&[&str], &str); 3] = [
        (&["wordcount", path(&input)], "24"),
        (&["grep", path(&input)], "30"),
        (&["terasort", path(&rows)], "102000"),
    ];
    for (n, (job, bytes)) in jobs.into_iter().enumerate() {
        let out = dir.path().join(format!("out-{n}"));
        let mut args = vec!["jar", EXAMPLES_JAR];
        args.extend_from_slice(job);
        args.push(path(&out));
        if job[0] == "grep" {
            args.push("b|c");
        }
        let run = sluice(&args, None);
        run.assert_code(0, job[0]);
        let want = format!("\t\tMap output bytes={bytes}\n");
        assert!(
            run.stderr.contains(&want),
            "{job:?}: no {want:?} in {}",
            run.stderr
        );
    }
}

/// HiBench's sort through the examples jar: `randomtextwriter` sized by `-D`, then `sort` with
/// the input's classes, as its scripts give them. Without `-outKey`, Hadoop's sort expects
/// BytesWritable and fails on Text; so does sluice's, with no output left. (The records and
/// counters are compared with Hadoop's own in `examples_hadoop.rs`.)
#[test]
fn examples_jar_sort_and_randomtextwriter_take_hadoops_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rtw");
    sluice(
        &[
            "jar",
            EXAMPLES_JAR,
            "randomtextwriter",
            "-D",
            "mapreduce.randomtextwriter.totalbytes=60000",
            "-D",
            "mapreduce.randomtextwriter.bytespermap=20000",
            path(&input),
        ],
        None,
    )
    .assert_code(0, "randomtextwriter");
    let files: Vec<_> = fs::read_dir(&input)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("part-m-"))
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");

    let untyped = dir.path().join("untyped");
    let run = sluice(
        &[
            "jar",
            EXAMPLES_JAR,
            "sort",
            "-r",
            "1",
            path(&input),
            path(&untyped),
        ],
        None,
    );
    run.assert_code(1, "sort without -outKey");
    assert!(
        run.stderr
            .contains("Type mismatch in key from map: expected org.apache.hadoop.io.BytesWritable"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("sets it from -outKey"),
        "{}",
        run.stderr
    );
    assert!(!untyped.exists());

    // The map output setting is the user's own, not the example's: no word of -outKey.
    let run = sluice(
        &[
            "run",
            "sort",
            "-D",
            "mapreduce.map.output.key.class=org.apache.hadoop.io.IntWritable",
            "--input-format",
            "sequencefile",
            "--input",
            path(&input),
            "--output",
            path(&untyped),
        ],
        None,
    );
    run.assert_code(1, "sort with a map output key class");
    assert!(
        run.stderr.contains(
            "(-D mapreduce.map.output.key.class): Hadoop fails such a job (\"Type mismatch in \
             key from map: expected org.apache.hadoop.io.IntWritable, received \
             org.apache.hadoop.io.Text\")"
        ),
        "{}",
        run.stderr
    );
    assert!(!untyped.exists());

    let sorted = dir.path().join("sorted");
    let text = "org.apache.hadoop.io.Text";
    let run = sluice(
        &[
            "jar",
            EXAMPLES_JAR,
            "sort",
            "-outKey",
            text,
            "-outValue",
            text,
            "-r",
            "2",
            path(&input),
            path(&sorted),
        ],
        None,
    );
    run.assert_code(0, "sort -outKey Text -outValue Text");
    assert!(
        run.stderr.contains("completed successfully"),
        "{}",
        run.stderr
    );
    for part in ["part-r-00000", "part-r-00001", "_SUCCESS"] {
        assert!(sorted.join(part).is_file(), "no {part}");
    }
}

/// A job refused before it starts (its output exists, its input is missing) prints no job
/// lines: no `Running job:`, no `failed with state`, no counters of a job that never ran; only
/// the error, and exit 255. Hadoop's job client refuses such jobs at submission, before any
/// of those lines, with an exception its driver turns into 255 (`examples_hadoop.rs` checks
/// Hadoop's side).
#[test]
fn examples_jar_jobs_refused_at_submission_print_no_job_lines() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "a b\n").unwrap();
    let existing = dir.path().join("existing");
    fs::create_dir(&existing).unwrap();
    let missing = dir.path().join("missing");
    let fresh = dir.path().join("fresh");
    let cases: [(&[&str], &str); 4] = [
        (
            &["wordcount", path(&input), path(&existing)],
            "already exists",
        ),
        (
            &["wordcount", path(&missing), path(&fresh)],
            "does not exist",
        ),
        (&["teragen", "10", path(&existing)], "already exists"),
        (
            &["terasort", path(&input), path(&existing)],
            "already exists",
        ),
    ];
    for (job, says) in cases {
        let mut args = vec!["jar", EXAMPLES_JAR];
        args.extend_from_slice(job);
        let run = sluice(&args, None);
        run.assert_code(255, job[0]);
        assert!(run.stderr.contains(says), "{job:?}: {}", run.stderr);
        for line in ["Running job:", "failed with state", "Counters:"] {
            assert!(!run.stderr.contains(line), "{job:?}: {}", run.stderr);
        }
        assert!(!fresh.exists());
        assert_eq!(fs::read_dir(&existing).unwrap().count(), 0);
    }
    // A job that runs prints them all, its first percentages included.
    let run = sluice(
        &["jar", EXAMPLES_JAR, "wordcount", path(&input), path(&fresh)],
        None,
    );
    run.assert_code(0, "wordcount");
    let running = run.stderr.find("Running job: job_").unwrap();
    let first = run.stderr.find(" map 0% reduce 0%").unwrap();
    let done = run.stderr.find("completed successfully").unwrap();
    assert!(running < first && first < done, "{}", run.stderr);
}

/// A TSV file whose header starts with `SEQ` (`SEQ_ID<TAB>...`) is text: Hadoop's WordCount
/// reads it as lines, and so do `sluice jar ... wordcount` and `sluice run wordcount`, which
/// take a file for a SequenceFile only when `SEQ` is followed by a version byte.
#[test]
fn a_text_file_starting_with_seq_is_counted_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("samples.tsv");
    let mut text = String::from("SEQ_ID\tsample\tread\n");
    for i in 0..2000 {
        text.push_str(&format!("seq{i}\tsample {}\tACGT{}\n", i % 7, i % 13));
    }
    fs::write(&input, text).unwrap();
    let expected = dir.path().join("wc-ref");
    Reference::new("wordcount", &expected).input(&input).run();
    for (how, args) in [
        ("jar", vec!["jar", EXAMPLES_JAR, "wordcount"]),
        ("run", vec!["run", "wordcount", "-q", "--input"]),
    ] {
        let out = dir.path().join(format!("wc-{how}"));
        let mut args = args;
        if how == "run" {
            args.extend([path(&input), "--output", path(&out)]);
        } else {
            args.extend([path(&input), path(&out)]);
        }
        sluice(&args, None).assert_code(0, how);
        assert_same_output(&out, &expected, how);
    }
}

/// A `-D` setting that makes Hadoop's wordcount write another output (another separator, part
/// file name, partitioner) is refused, naming it, instead of being ignored: a wrapper never
/// gets an output that differs from Hadoop's without a word.
#[test]
fn settings_that_would_change_hadoops_output_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "a b a\n").unwrap();
    for setting in [
        "mapreduce.output.textoutputformat.separator=,",
        "mapreduce.output.basename=result",
        "mapreduce.fileoutputcommitter.marksuccessfuljobs=false",
    ] {
        let out = dir.path().join("out");
        let run = sluice(
            &[
                "jar",
                EXAMPLES_JAR,
                "wordcount",
                "-D",
                setting,
                path(&input),
                path(&out),
            ],
            None,
        );
        assert_ne!(run.code(), Some(0), "{setting}: {}", run.stderr);
        let key = setting.split('=').next().unwrap();
        assert!(run.stderr.contains(key), "{setting}: {}", run.stderr);
        assert!(!out.exists(), "{setting}: output written");
    }
}
