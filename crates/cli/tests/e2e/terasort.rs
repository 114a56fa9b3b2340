//! `sluice run terasort`: the output must be the input rows, each unchanged, in the order an
//! independent sort gives (by key, then by the rest of the row), spread over the part files so
//! that they concatenate into that order; teravalidate must accept it and print the checksum
//! teragen printed. Covered: 0, 1 and many rows, record-aligned splits cut anywhere, equal
//! keys, keys sharing long prefixes, several reducers, budgets so small that there are hundreds
//! of runs and multi-pass merges (with the peak RSS checked), and a partial row.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{assert_no_debris, counter, read_report, report_u64, sluice, JobRun};

const ROW: usize = 100;

/// Writes `rows` rows of teragen into `dir/name` (in `maps` files) and returns the directory
/// and the checksum teragen printed.
fn teragen(dir: &Path, name: &str, rows: u64, maps: usize) -> (PathBuf, String) {
    let out = dir.join(name);
    let run = sluice(
        &[
            "run",
            "teragen",
            "--rows",
            &rows.to_string(),
            "--maps",
            &maps.to_string(),
            "--output",
            out.to_str().unwrap(),
        ],
        None,
    );
    run.assert_code(0, "teragen");
    (out, checksum_in(&run.stderr, "checksum "))
}

/// The hex number following `marker` in `text`.
fn checksum_in(text: &str, marker: &str) -> String {
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {text}"))
        + marker.len();
    text[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect()
}

/// The bytes of every non-hidden file of `dir`, in name order.
fn read_parts(dir: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('_') && !n.starts_with('.'))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| fs::read(dir.join(n)).unwrap())
        .collect()
}

/// The reference: the rows of `input`, sorted as whole 100-byte rows.
fn sorted_rows(input: &Path) -> Vec<u8> {
    let all = read_parts(input).concat();
    assert_eq!(all.len() % ROW, 0, "the test input must be whole rows");
    let mut rows: Vec<&[u8]> = all.chunks(ROW).collect();
    rows.sort();
    rows.concat()
}

/// Runs terasort with `args` and returns its outcome, checking that it succeeded.
fn terasort(input: &Path, output: &Path, args: &[&str]) -> crate::util::Outcome {
    let run = JobRun::new("terasort")
        .input(input)
        .output(output)
        .args(args)
        .run();
    run.assert_code(0, "terasort");
    run
}

/// Checks that `output` has `reducers` part files `part-r-NNNNN` plus `_SUCCESS`, that they
/// concatenate into the sorted rows of `input`, and that teravalidate accepts them with the
/// checksum `expected_checksum` (when given). Returns the part files' sizes in rows.
fn check_sorted(
    input: &Path,
    output: &Path,
    reducers: usize,
    expected_checksum: Option<&str>,
) -> Vec<usize> {
    let mut names: Vec<String> = fs::read_dir(output)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut expected_names: Vec<String> = (0..reducers).map(|r| format!("part-r-{r:05}")).collect();
    expected_names.insert(0, "_SUCCESS".into());
    assert_eq!(names, expected_names);
    let parts = read_parts(output);
    let sorted = sorted_rows(input);
    let actual = parts.concat();
    assert_eq!(actual.len(), sorted.len(), "row count differs");
    assert!(
        actual == sorted,
        "terasort output differs from a plain sort of the rows"
    );

    let report = output.with_extension("validate");
    let run = sluice(
        &[
            "run",
            "teravalidate",
            "--input",
            output.to_str().unwrap(),
            "--output",
            report.to_str().unwrap(),
        ],
        None,
    );
    run.assert_code(0, "teravalidate");
    if let Some(checksum) = expected_checksum {
        let text = fs::read_to_string(report.join("part-r-00000")).unwrap();
        assert_eq!(text, format!("checksum\t{checksum}\n"));
    }
    parts.iter().map(|p| p.len() / ROW).collect()
}

#[test]
fn terasort_sorts_teragen_rows_and_keeps_the_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let (input, checksum) = teragen(dir.path(), "in", 20_000, 3);
    for (reducers, split_size) in [(1, "32MiB"), (4, "150001"), (7, "99")] {
        let output = dir.path().join(format!("out-{reducers}"));
        let run = JobRun::new("terasort")
            .input(&input)
            .output(&output)
            .args(&[
                "--reducers",
                &reducers.to_string(),
                "--split-size",
                split_size,
            ])
            .args(&["--threads", "2"])
            .run();
        run.assert_code(0, "terasort");
        let sizes = check_sorted(&input, &output, reducers, Some(&checksum));
        // Sampled boundaries give every reducer a share of the random keys.
        let fair = 20_000 / reducers;
        assert!(
            sizes.iter().all(|&n| n > fair / 2 && n < fair * 2),
            "unbalanced part files {sizes:?}"
        );
        // Without --quiet the job prints the checksum of the rows it read.
        let loud = sluice(
            &[
                "run",
                "terasort",
                "--input",
                input.to_str().unwrap(),
                "--output",
                dir.path()
                    .join(format!("loud-{reducers}"))
                    .to_str()
                    .unwrap(),
            ],
            None,
        );
        loud.assert_code(0, "terasort");
        assert_eq!(checksum_in(&loud.stderr, "rows read: "), checksum);
    }
    assert_no_debris(dir.path());
}

#[test]
fn zero_and_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join("rows"), b"").unwrap();
    let output = dir.path().join("out-empty");
    terasort(&empty, &output, &["--reducers", "3"]);
    assert_eq!(check_sorted(&empty, &output, 3, None), vec![0, 0, 0]);
    // Like Hadoop's TeraValidate, no rows give an empty report (not even a checksum line).
    let report = output.with_extension("validate").join("part-r-00000");
    assert_eq!(fs::read(report).unwrap(), b"");

    let (one, checksum) = teragen(dir.path(), "one", 1, 1);
    let output = dir.path().join("out-one");
    terasort(&one, &output, &["--reducers", "2"]);
    let sizes = check_sorted(&one, &output, 2, Some(&checksum));
    assert_eq!(sizes.iter().sum::<usize>(), 1);
}

/// Rows from `keys`, each followed by its number in decimal and filler, so that every row is
/// different even where keys are equal.
fn rows_with_keys(keys: &[[u8; 10]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(keys.len() * ROW);
    for (i, key) in keys.iter().enumerate() {
        let mut row = [b'.'; ROW];
        row[..10].copy_from_slice(key);
        let number = format!("{:020}", (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        row[10..30].copy_from_slice(number.as_bytes());
        out.extend_from_slice(&row);
    }
    out
}

#[test]
fn equal_keys_are_divided_among_reducers() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    fs::write(input.join("rows"), rows_with_keys(&[[0xAB; 10]; 8000])).unwrap();
    let output = dir.path().join("out");
    terasort(
        &input,
        &output,
        &["--reducers", "4", "--split-size", "100000"],
    );
    let sizes = check_sorted(&input, &output, 4, None);
    assert!(
        sizes.iter().all(|&n| n > 1000),
        "one key should still be spread over the reducers: {sizes:?}"
    );
}

#[test]
fn keys_sharing_long_prefixes_sort_by_their_last_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    // Keys equal in their first 7, 8 or 9 bytes, some of them equal altogether, in an order
    // that is neither sorted nor reversed.
    let mut keys = Vec::new();
    for i in 0..3000u32 {
        let mut key = [0x41u8; 10];
        let spread = i.wrapping_mul(2_654_435_761);
        match i % 3 {
            0 => key[9] = (spread >> 24) as u8,
            1 => key[8..].copy_from_slice(&((spread >> 16) as u16).to_be_bytes()),
            _ => key[7] = (spread >> 28) as u8,
        }
        keys.push(key);
    }
    fs::write(input.join("rows"), rows_with_keys(&keys)).unwrap();
    let output = dir.path().join("out");
    terasort(
        &input,
        &output,
        &["--reducers", "3", "--split-size", "65536"],
    );
    check_sorted(&input, &output, 3, None);
}

/// 200 MB under an 8 MiB budget: hundreds of spilled runs, merges in several passes, the same
/// sorted output, the budget respected by the reservations and (with an allowance for code,
/// stacks and fixed buffers) by the measured peak RSS.
#[test]
fn hundreds_of_runs_in_a_small_budget() {
    const BUDGET: u64 = 8 << 20;
    const RSS_ALLOWANCE: u64 = 40 << 20;
    let dir = tempfile::tempdir().unwrap();
    let (input, checksum) = teragen(dir.path(), "in", 2_000_000, 4);
    let output = dir.path().join("out");
    let report_path = dir.path().join("report.json");
    let (run, rss) = JobRun::new("terasort")
        .input(&input)
        .output(&output)
        .args(&["--memory", "8MiB", "--threads", "2", "--reducers", "3"])
        .args(&["--report", report_path.to_str().unwrap()])
        .run_timed(dir.path());
    run.assert_code(0, "terasort");
    let report = read_report(&report_path);
    let runs = counter(&report, "spilled_runs");
    let passes = counter(&report, "merge_passes");
    println!("terasort 200 MB in 8 MiB: {runs} runs, {passes} merge passes, peak RSS {rss:?}");
    assert!(runs >= 100, "only {runs} spilled runs");
    assert!(passes >= 1, "no intermediate merge pass");
    assert_eq!(report_u64(&report, "forced_memory"), 0);
    assert!(report_u64(&report, "peak_memory_reserved") <= BUDGET);
    if let Some(rss) = rss.or(report["peak_rss_bytes"].as_u64()) {
        assert!(
            rss < BUDGET + RSS_ALLOWANCE,
            "peak RSS {rss} exceeds the budget + allowance"
        );
    }
    check_sorted(&input, &output, 3, Some(&checksum));
}

/// On a file system without `O_DIRECT` (tmpfs) the spill and part files fall back to ordinary
/// writes of the same chunks, with the same result.
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "mounts a tmpfs, which needs root: cargo test --features test-root"
)]
fn output_and_spills_on_a_file_system_without_direct_io() {
    let dir = tempfile::tempdir().unwrap();
    let (input, checksum) = teragen(dir.path(), "in", 50_000, 2);
    let mount = crate::util::Mount::tmpfs(&dir.path().join("tmpfs"), "64m");
    let output = mount.0.join("out");
    let spills = mount.0.to_str().unwrap();
    terasort(
        &input,
        &output,
        &["--reducers", "2", "--memory", "4MiB", "--spill-dir", spills],
    );
    check_sorted(&input, &output, 2, Some(&checksum));
}

#[test]
fn a_partial_row_fails_the_job_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    let mut bytes = rows_with_keys(&[[1; 10], [2; 10]]);
    bytes.extend_from_slice(&[3; 50]);
    fs::write(input.join("short-rows"), bytes).unwrap();
    let output = dir.path().join("out");
    let run = JobRun::new("terasort").input(&input).output(&output).run();
    run.assert_code(1, "terasort");
    assert!(run.stderr.contains("short-rows"), "{}", run.stderr);
    assert!(
        run.stderr.contains("50 of 100 bytes at byte 200"),
        "{}",
        run.stderr
    );
    assert!(!output.exists());
    assert_no_debris(dir.path());
}
