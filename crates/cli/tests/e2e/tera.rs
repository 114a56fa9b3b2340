//! `sluice run teragen` / `teravalidate`: the files are Hadoop's, checked against what Hadoop's
//! own TeraGen wrote for the same rows (its checksum, recorded from a Hadoop 3.4.2 run in
//! `crates/hadoop/tests/tera_vectors/`), and the validator catches what it must.

use std::fs;
use std::path::Path;

use crate::util::sluice;

/// The checksum Hadoop's TeraGen and TeraValidate report for rows 0..1000 (TeraValidate's
/// `checksum` line; TeraGen's CHECKSUM counter shows 2173251765740).
const HADOOP_CHECKSUM_1000: &str = "1f9ffe645ec";

/// Runs teragen for 1000 rows (`rows` spells that number) and returns the part files' bytes
/// in order.
fn teragen(dir: &Path, rows: &str, maps: &str, name: &str) -> Vec<u8> {
    let out = dir.join(name);
    let run = sluice(
        &[
            "run",
            "teragen",
            "--rows",
            rows,
            "--maps",
            maps,
            "--output",
            out.to_str().unwrap(),
        ],
        None,
    );
    run.assert_code(0, "teragen");
    // Every caller asks for rows 0..1000, whose checksum Hadoop recorded.
    assert!(
        run.stderr
            .contains(&format!("checksum {HADOOP_CHECKSUM_1000}")),
        "{}",
        run.stderr
    );
    let mut parts: Vec<_> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("part-m-"))
        .collect();
    parts.sort();
    assert!(out.join("_SUCCESS").is_file());
    parts
        .iter()
        .flat_map(|p| fs::read(out.join(p)).unwrap())
        .collect()
}

fn validate(dir: &Path, input: &Path, name: &str) -> (crate::util::Outcome, String) {
    let report = dir.join(name);
    let run = sluice(
        &[
            "run",
            "teravalidate",
            "--input",
            input.to_str().unwrap(),
            "--output",
            report.to_str().unwrap(),
        ],
        None,
    );
    let text = fs::read_to_string(report.join("part-r-00000")).unwrap_or_default();
    (run, text)
}

/// Rows sorted by their 10-byte keys, stably: an independent sort of the generated rows.
fn sorted_rows(rows: &[u8]) -> Vec<u8> {
    let mut chunks: Vec<&[u8]> = rows.chunks(100).collect();
    chunks.sort_by(|a, b| a[..10].cmp(&b[..10]));
    chunks.concat()
}

#[test]
fn teragen_writes_hadoops_rows_in_any_number_of_files() {
    let dir = tempfile::tempdir().unwrap();
    let one = teragen(dir.path(), "1000", "1", "one");
    let three = teragen(dir.path(), "1k", "3", "three");
    assert_eq!(one.len(), 100_000);
    assert_eq!(
        one, three,
        "the rows do not depend on how they are split into files"
    );
    // Hadoop's row 0 begins with its generator's first key, "JimGrayRIP".
    assert_eq!(&one[..10], b"JimGrayRIP");
    assert_eq!(&one[10..12], &[0x00, 0x11]);
    assert_eq!(&one[12..44], b"00000000000000000000000000000000");
}

#[test]
fn teravalidate_accepts_sorted_rows_and_reports_hadoops_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let rows = teragen(dir.path(), "1000", "1", "gen");
    let sorted = sorted_rows(&rows);
    let input = dir.path().join("sorted");
    fs::create_dir(&input).unwrap();
    // Two part files that together are in order.
    fs::write(input.join("part-r-00000"), &sorted[..40_000]).unwrap();
    fs::write(input.join("part-r-00001"), &sorted[40_000..]).unwrap();
    fs::write(input.join("_SUCCESS"), b"").unwrap();
    let (run, report) = validate(dir.path(), &input, "report");
    run.assert_code(0, "teravalidate of sorted rows");
    assert_eq!(report, format!("checksum\t{HADOOP_CHECKSUM_1000}\n"));
    assert!(
        run.stderr.contains("read 1000 rows in 2 files"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("0 duplicate keys"), "{}", run.stderr);
}

#[test]
fn teravalidate_reports_misorder_partitioning_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let rows = teragen(dir.path(), "1000", "1", "gen");
    let sorted = sorted_rows(&rows);

    // Unsorted input: misorders, exit 1.
    let (run, report) = validate(dir.path(), &dir.path().join("gen"), "r1");
    run.assert_code(1, "teravalidate of unsorted rows");
    assert!(report.starts_with(&format!(
        "checksum\t{HADOOP_CHECKSUM_1000}\nerror\tmisorder in part-m-00000 between "
    )));

    // Each file sorted, but the files in the wrong order: bad key partitioning.
    let swapped = dir.path().join("swapped");
    fs::create_dir(&swapped).unwrap();
    fs::write(swapped.join("part-r-00000"), &sorted[50_000..]).unwrap();
    fs::write(swapped.join("part-r-00001"), &sorted[..50_000]).unwrap();
    let (run, report) = validate(dir.path(), &swapped, "r2");
    run.assert_code(1, "teravalidate of misplaced files");
    let hex = |k: &[u8]| {
        k.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let expected = format!(
        "error\tbad key partitioning:\n  file part-r-00000:end key {}\n  file part-r-00001:begin key {}\n",
        hex(&sorted[99_900..99_910]),
        hex(&sorted[..10])
    );
    assert!(report.ends_with(&expected), "{report}");

    // A repeated row: still sorted, one duplicate key, a checksum that differs from teragen's.
    let with_duplicate: Vec<u8> = [&sorted[..500], &sorted[400..500], &sorted[500..]].concat();
    let dup = dir.path().join("dup");
    fs::create_dir(&dup).unwrap();
    fs::write(dup.join("part-r-00000"), &with_duplicate).unwrap();
    let (run, report) = validate(dir.path(), &dup, "r3");
    run.assert_code(0, "teravalidate of rows with a duplicate");
    assert!(run.stderr.contains("1001 rows"), "{}", run.stderr);
    assert!(run.stderr.contains("1 duplicate keys"), "{}", run.stderr);
    assert!(!report.contains(HADOOP_CHECKSUM_1000), "{report}");
}

#[test]
fn teravalidate_refuses_a_partial_row() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cut");
    fs::create_dir(&input).unwrap();
    fs::write(input.join("part-r-00000"), vec![b'x'; 150]).unwrap();
    let (run, _) = validate(dir.path(), &input, "report");
    run.assert_code(1, "teravalidate of a cut file");
    assert!(
        run.stderr.contains("partial row of 50 bytes"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("report").exists());
}

/// The files of directory `dir` and their bytes, by name.
fn dir_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    crate::util::list_dir(dir)
        .into_iter()
        .map(|name| {
            let bytes = fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

/// teragen, teravalidate and gen text write the same files whether their locations are plain
/// paths, `file:` URIs, or plain paths on a default file system that is the local one.
#[test]
fn plain_paths_and_file_uris_give_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let rows = teragen(dir.path(), "1000", "1", "gen");
    let sorted = dir.path().join("sorted");
    fs::create_dir(&sorted).unwrap();
    fs::write(sorted.join("part-r-00000"), sorted_rows(&rows)).unwrap();
    let sorted = sorted.to_str().unwrap().to_string();

    // Each form: its name, whether it spells the output as a `file:` URI, and its settings.
    let forms = [
        ("plain", false, ""),
        ("uri", true, ""),
        ("default-fs", false, "-D fs.defaultFS=file:///"),
    ];
    let words =
        |text: &str| -> Vec<String> { text.split_whitespace().map(str::to_string).collect() };
    // Each command (its arguments but the output), and its output's name.
    let commands = [
        (words("run teragen --rows 1k --maps 3"), "tg"),
        (
            [words("run teravalidate --input"), vec![sorted]].concat(),
            "tv",
        ),
        (words("gen text --size 100KiB --files 2 --seed 3"), "text"),
    ];
    let mut written = Vec::new();
    for (form, as_uri, defines) in forms {
        for (command, name) in &commands {
            let mut args = command.clone();
            args.extend(words(defines));
            args.extend(words("--quiet --output"));
            let output = dir.path().join(format!("{name}-{form}"));
            let output = output.to_str().unwrap();
            args.push(if as_uri {
                format!("file://{output}")
            } else {
                output.to_string()
            });
            sluice(&args, None).assert_code(0, &format!("{form}: {}", args.join(" ")));
        }
        written.push(
            ["tg", "tv", "text"].map(|name| dir_bytes(&dir.path().join(format!("{name}-{form}")))),
        );
    }
    let [tg, tv, text] = &written[0];
    assert_eq!(
        tg.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["_SUCCESS", "part-m-00000", "part-m-00001", "part-m-00002"]
    );
    let joined: Vec<u8> = tg.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(
        joined, rows,
        "teragen's rows do not depend on the number of files"
    );
    assert_eq!(
        tv,
        &[
            ("_SUCCESS".to_string(), Vec::new()),
            (
                "part-r-00000".to_string(),
                format!("checksum\t{HADOOP_CHECKSUM_1000}\n").into_bytes()
            )
        ]
    );
    assert_eq!(text.len(), 3, "two parts and _SUCCESS");
    for (form, other) in written.iter().enumerate().skip(1) {
        assert!(other == &written[0], "form {form} wrote other bytes");
    }
    crate::util::assert_no_debris(dir.path());
}

/// An output that exists is refused before anything is written, and left as it was.
#[test]
fn an_existing_output_is_refused_without_touching_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("part-m-00000"), b"earlier rows").unwrap();
    let out_text = out.to_str().unwrap();
    let uri = format!("file://{out_text}");
    let runs: [&[&str]; 4] = [
        &["run", "teragen", "--rows", "1000", "--output", out_text],
        &["run", "teragen", "--rows", "1000", "--output", &uri],
        &[
            "run",
            "teravalidate",
            "--input",
            out_text,
            "--output",
            out_text,
        ],
        &["gen", "text", "--size", "1KiB", "--output", &uri],
    ];
    for args in runs {
        let run = sluice(args, None);
        run.assert_code(1, &args.join(" "));
        assert!(run.stderr.contains("already exists"), "{}", run.stderr);
        assert_eq!(
            dir_bytes(&out),
            [("part-m-00000".to_string(), b"earlier rows".to_vec())]
        );
        assert_eq!(crate::util::list_dir(dir.path()), ["out"]);
    }
}
