//! Comparing what the two systems did with a case, and saying readably how they differ.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use sluice_testkit::console::{counter_blocks, Counters, FRAMEWORK_GROUP, RECORD_COUNTERS};

use crate::case::{Case, Expect};
use crate::decode;
use crate::hadoop::Run;

/// Checks that Hadoop did what the case says it should, so a wrong case is reported as such
/// rather than as a sluice bug.
pub(crate) fn check_hadoop(case: &Case, hadoop: &Run) -> Vec<String> {
    let mut problems = Vec::new();
    let e = &case.expect;
    let ok = hadoop.exit == Some(0);
    if ok != e.success {
        problems.push(format!(
            "Hadoop itself exited {}, but the case expects {}; the case is wrong\n{}",
            code(hadoop.exit),
            if e.success { "success" } else { "failure" },
            tail("Hadoop log", &hadoop.log, 25)
        ));
    }
    if let Some(want) = e.exit_code {
        if hadoop.exit != Some(want) {
            problems.push(format!(
                "Hadoop itself exited {}, but the case expects exit code {want}; the case is wrong",
                code(hadoop.exit)
            ));
        }
    }
    if let Some(marker) = &e.stderr {
        if !hadoop.log.contains(marker.as_str()) {
            problems.push(format!(
                "Hadoop's log lacks the stderr marker {marker:?}; the case is wrong\n{}",
                tail("Hadoop log", &hadoop.log, 25)
            ));
        }
    }
    for group in &e.counters {
        if job_counters(&hadoop.log).group(group).is_none() {
            problems.push(format!(
                "Hadoop's log has no counter group {group:?}; the case is wrong"
            ));
        }
    }
    problems
}

/// Everything in which sluice's run differs from Hadoop's, as readable paragraphs.
pub(crate) fn compare(expect: &Expect, hadoop: &Run, sluice: &Run) -> Vec<String> {
    let mut problems = Vec::new();
    let codes = format!(
        "exit codes: Hadoop {}, sluice {}",
        code(hadoop.exit),
        code(sluice.exit)
    );
    let h_ok = hadoop.exit == Some(0);
    let s_ok = sluice.exit == Some(0);
    if h_ok != s_ok {
        problems.push(format!(
            "{codes}\n{}\n{}",
            tail("Hadoop log", &hadoop.log, 15),
            tail("sluice stderr", &sluice.log, 15)
        ));
        return problems;
    }
    if h_ok {
        if expect.sequence_file {
            problems.extend(compare_sequence_files(&hadoop.output, &sluice.output));
        } else {
            problems.extend(compare_dirs(
                &hadoop.output,
                &sluice.output,
                expect.sort_values,
                expect.decompress,
            ));
        }
    } else {
        for (who, run) in [("Hadoop", hadoop), ("sluice", sluice)] {
            if run.output.join("_SUCCESS").exists() {
                problems.push(format!("{who} failed ({codes}) yet wrote _SUCCESS"));
            }
        }
        if let Some(marker) = &expect.stderr {
            if !sluice.log.contains(marker.as_str()) {
                problems.push(format!(
                    "sluice's stderr does not quote the failing program's stderr {marker:?}"
                ));
            }
        }
    }
    if let Some(want) = expect.exit_code {
        if sluice.exit != Some(want) {
            problems.push(format!("sluice must exit {want} as Hadoop does ({codes})"));
        }
    }
    let h_counters = job_counters(&hadoop.log);
    let s_counters = job_counters(&sluice.log);
    if h_ok {
        problems.extend(compare_record_counters(&h_counters, &s_counters));
    }
    for group in &expect.counters {
        let h = h_counters.group(group);
        let s = s_counters.group(group);
        if h != s {
            problems.push(format!(
                "counter group {group:?} differs\n  Hadoop: {}\n  sluice: {}",
                show_group(h),
                show_group(s)
            ));
        }
    }
    if !problems.is_empty() {
        problems.push(format!(
            "{codes}\n{}",
            tail("sluice stderr", &sluice.log, 10)
        ));
    }
    problems
}

fn code(c: Option<i32>) -> String {
    c.map_or_else(|| "none (signal or timeout)".to_string(), |c| c.to_string())
}

fn show_group(g: Option<&[(String, u64)]>) -> String {
    g.map_or_else(
        || "(absent)".to_string(),
        |counters| {
            let shown: Vec<String> = counters.iter().map(|(n, v)| format!("{n}={v}")).collect();
            shown.join(", ")
        },
    )
}

/// The last `n` lines of `text`, indented, under a heading.
///
/// Indented lines other than stack frames are left out: in a job log they are the framework's
/// counters, which would crowd out the lines that explain a failure.
pub(crate) fn tail(what: &str, text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('\t') || l.starts_with("\tat ") || l.starts_with("\t..."))
        .collect();
    let start = lines.len().saturating_sub(n);
    let mut out = format!("  --- {what} (last {} lines)", lines.len() - start);
    for l in &lines[start..] {
        write!(out, "\n  | {}", l.chars().take(300).collect::<String>()).unwrap();
    }
    out
}

/// The visible entries of an output directory (Hadoop's local file system also writes hidden
/// `.crc` files, which are not part of the output). Directories get a trailing `/`.
pub(crate) fn visible_entries(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                return None;
            }
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            Some(if is_dir { format!("{name}/") } else { name })
        })
        .collect();
    names.sort();
    names
}

/// Compares two output directories: the same visible names, every file byte for byte (with
/// `decompress`, what each compressed file decodes to).
pub(crate) fn compare_dirs(
    hadoop: &Path,
    sluice: &Path,
    sort_values: bool,
    decompress: bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    let h_names = visible_entries(hadoop);
    let s_names = visible_entries(sluice);
    if h_names != s_names {
        problems.push(format!(
            "output files differ\n  Hadoop: {h_names:?}\n  sluice: {s_names:?}"
        ));
    }
    for name in h_names.iter().filter(|n| s_names.contains(n)) {
        if name.ends_with('/') {
            continue;
        }
        let h = fs::read(hadoop.join(name)).unwrap();
        let s = fs::read(sluice.join(name)).unwrap();
        let (h, s) = if decompress {
            match (decode::decompress(name, &h), decode::decompress(name, &s)) {
                (Ok(h), Ok(s)) => (h, s),
                (h, s) => {
                    for (who, result) in [("Hadoop", h), ("sluice", s)] {
                        if let Err(e) = result {
                            problems.push(format!("{who}'s file {name} does not decode: {e}"));
                        }
                    }
                    continue;
                }
            }
        } else {
            (h, s)
        };
        let (h, s) = if sort_values {
            (sort_within_keys(&h), sort_within_keys(&s))
        } else {
            (h, s)
        };
        if let Some(diff) = first_difference(&h, &s) {
            let note = match (decompress, sort_values) {
                (true, true) => " (decompressed, lines sorted within runs of equal keys)",
                (true, false) => " (decompressed)",
                (false, true) => " (after sorting lines within runs of equal keys)",
                (false, false) => "",
            };
            problems.push(format!("file {name} differs{note}: {diff}"));
        }
    }
    problems
}

/// Compares two output directories of SequenceFiles: the same visible names, and each part
/// file with the same header (classes, compression, codec, metadata) and records.
pub(crate) fn compare_sequence_files(hadoop: &Path, sluice: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let h_names = visible_entries(hadoop);
    let s_names = visible_entries(sluice);
    if h_names != s_names {
        problems.push(format!(
            "output files differ\n  Hadoop: {h_names:?}\n  sluice: {s_names:?}"
        ));
    }
    for name in h_names.iter().filter(|n| s_names.contains(n)) {
        if !name.starts_with("part-") {
            continue;
        }
        let h = decode::sequence_file(&fs::read(hadoop.join(name)).unwrap());
        let s = decode::sequence_file(&fs::read(sluice.join(name)).unwrap());
        match (h, s) {
            (Ok(h), Ok(s)) => {
                if let Some(diff) = first_difference(&h, &s) {
                    problems.push(format!(
                        "SequenceFile {name} differs (header line, then records): {diff}"
                    ));
                }
            }
            (h, s) => {
                for (who, result) in [("Hadoop", h), ("sluice", s)] {
                    if let Err(e) = result {
                        problems.push(format!("{who}'s {name} is not a SequenceFile: {e}"));
                    }
                }
            }
        }
    }
    problems
}

/// Where two files first differ, by line, or `None` if they are identical.
pub(crate) fn first_difference(a: &[u8], b: &[u8]) -> Option<String> {
    if a == b {
        return None;
    }
    let a_lines: Vec<&[u8]> = a.split_inclusive(|&c| c == b'\n').collect();
    let b_lines: Vec<&[u8]> = b.split_inclusive(|&c| c == b'\n').collect();
    let i = a_lines
        .iter()
        .zip(&b_lines)
        .position(|(x, y)| x != y)
        .unwrap_or(a_lines.len().min(b_lines.len()));
    let show = |lines: &[&[u8]]| match lines.get(i) {
        Some(l) => {
            let escaped = l.escape_ascii().to_string();
            if escaped.len() > 200 {
                format!("\"{}...\"", &escaped[..200])
            } else {
                format!("\"{escaped}\"")
            }
        }
        None => "(end of file)".to_string(),
    };
    Some(format!(
        "first difference at line {} ({} vs {} bytes, {} vs {} lines)\n  Hadoop: {}\n  sluice: {}",
        i + 1,
        a.len(),
        b.len(),
        a_lines.len(),
        b_lines.len(),
        show(&a_lines),
        show(&b_lines)
    ))
}

/// Sorts the lines within each run of consecutive lines with the same key (the bytes before
/// the first tab), for reducers whose input value order Hadoop does not specify.
pub(crate) fn sort_within_keys(data: &[u8]) -> Vec<u8> {
    let key = |l: &[u8]| -> Vec<u8> {
        l.split(|&c| c == b'\t' || c == b'\n')
            .next()
            .unwrap()
            .to_vec()
    };
    let lines: Vec<&[u8]> = data.split_inclusive(|&c| c == b'\n').collect();
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < lines.len() {
        let k = key(lines[i]);
        let mut j = i + 1;
        while j < lines.len() && key(lines[j]) == k {
            j += 1;
        }
        let mut run: Vec<&[u8]> = lines[i..j].to_vec();
        run.sort();
        for l in run {
            out.extend_from_slice(l);
        }
        i = j;
    }
    out
}

/// The [`RECORD_COUNTERS`] that differ between the two jobs' `Map-Reduce Framework` groups.
fn compare_record_counters(hadoop: &Counters, sluice: &Counters) -> Vec<String> {
    RECORD_COUNTERS
        .iter()
        .filter_map(|name| {
            let h = hadoop.get(FRAMEWORK_GROUP, name)?;
            let s = sluice.get(FRAMEWORK_GROUP, name);
            (s != Some(h)).then(|| {
                format!(
                    "counter {name:?} differs: Hadoop {h}, sluice {}",
                    s.map_or_else(|| "(not printed)".to_string(), |s| s.to_string())
                )
            })
        })
        .collect()
}

/// The counters of a streaming job's log: its one counter block (the last, should there be
/// more); empty when it printed none.
pub(crate) fn job_counters(log: &str) -> Counters {
    counter_blocks(log).pop().unwrap_or_default()
}
