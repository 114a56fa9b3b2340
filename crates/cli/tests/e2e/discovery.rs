//! Input discovery as seen in the output: directory walking with Hadoop's hidden-name filter
//! at any depth, explicitly named hidden files, globs, comma-separated `--input`, duplicates read
//! once, and paths in the inverted index spelled exactly as given on the command line.

use std::fs;
use std::path::Path;

use crate::corpus::{messy_corpus, HIDDEN_WORDS};
use crate::util::{counter, gen_text, Case, JobRun};

/// The lines of a file, as byte strings.
fn lines(path: &Path) -> Vec<Vec<u8>> {
    fs::read(path)
        .unwrap()
        .split(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn has_line_starting(lines: &[Vec<u8>], prefix: &str) -> bool {
    lines.iter().any(|l| l.starts_with(prefix.as_bytes()))
}

/// No word of a hidden file (`_x`, `.x`, `_SUCCESS`, `_logs/`, `.git/`) reaches the output of a
/// directory walk; the reference agrees on everything else.
#[test]
fn hidden_names_are_skipped_at_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = messy_corpus(dir.path(), false);
    Case::new("wordcount", &[&corpus]).check(dir.path(), "reference");
    let out = dir.path().join("out");
    JobRun::new("wordcount")
        .input(&corpus)
        .output(&out)
        .run_ok();
    let words = lines(&out.join("part-r-00000"));
    for hidden in HIDDEN_WORDS {
        assert!(
            !has_line_starting(&words, &format!("{hidden}\t")),
            "{hidden} (from a hidden file) was counted"
        );
    }
    assert!(has_line_starting(&words, "dfs.replication\t1"));
}

/// A hidden file named outright is refused as missing, as Hadoop's input formats refuse it
/// (`FileInputFormat` filters the named path itself, not only what a walk finds).
#[test]
fn explicitly_named_hidden_files_are_refused_as_hadoop_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = messy_corpus(dir.path(), false);
    for hidden in [corpus.join("_hidden.txt"), corpus.join(".dotfile")] {
        assert!(hidden.is_file(), "{}", hidden.display());
        let out = dir.path().join("out");
        let outcome = JobRun::new("invertedindex")
            .input(&corpus)
            .input(&hidden)
            .output(&out)
            .run();
        assert_ne!(outcome.code(), Some(0), "{}", outcome.stderr);
        assert!(
            outcome.stderr.contains("does not exist")
                && outcome.stderr.contains(&hidden.display().to_string())
                && outcome.stderr.contains("hidden"),
            "{}",
            outcome.stderr
        );
        assert!(!out.exists(), "no output for a refused job");
    }
}

/// Paths of the inverted index are the `--input` spelling joined with the relative path:
/// `./corpus/` gives `./corpus/sub/deep/c.txt` (run in the corpus's parent directory). A `..`
/// after a name is resolved by the text, as Hadoop's `Path` resolves it: `./corpus/x/../sub`
/// gives `./corpus/sub/deep/c.txt`.
#[test]
fn index_paths_keep_the_input_spelling() {
    let dir = tempfile::tempdir().unwrap();
    messy_corpus(dir.path(), false);
    let out = dir.path().join("out");
    JobRun::new("invertedindex")
        .input("./corpus/nowhere/../sub")
        .output(&out)
        .cwd(dir.path())
        .run_ok();
    let index = lines(&out.join("part-r-00000"));
    let expected = "dfs.replication\t./corpus/sub/deep/c.txt";
    assert!(
        index.contains(&expected.as_bytes().to_vec()),
        "no line {expected:?}"
    );
    fs::remove_dir_all(&out).unwrap();
    for spelling in ["./corpus/", "corpus", "./corpus/sub"] {
        let case = Case::new("invertedindex", &[Path::new(spelling)])
            .reducers(2)
            .cwd(dir.path());
        case.check(dir.path(), "reference");
        let out = dir.path().join("out");
        JobRun::new("invertedindex")
            .input(spelling)
            .output(&out)
            .args(&["--reducers", "2"])
            .cwd(dir.path())
            .run_ok();
        let mut index = lines(&out.join("part-r-00000"));
        index.extend(lines(&out.join("part-r-00001")));
        let base = spelling.trim_end_matches('/');
        let expected = if spelling.ends_with("/sub") {
            format!("dfs.replication\t{base}/deep/c.txt")
        } else {
            format!("dfs.replication\t{base}/sub/deep/c.txt")
        };
        assert!(
            index.contains(&expected.clone().into_bytes()),
            "{spelling}: no line {expected:?}"
        );
        fs::remove_dir_all(&out).unwrap();
    }
}

/// Globs (`*`, `?`, `[...]`; matches with hidden names dropped, matched directories walked) and
/// comma-separated `--input` values.
#[test]
fn globs_and_comma_separated_inputs() {
    let dir = tempfile::tempdir().unwrap();
    messy_corpus(dir.path(), false);
    // `corpus/*.txt` matches _hidden.txt too, which must be dropped; `corpus/s?b` is a directory.
    let joined = "corpus/[ab]*.txt,corpus/s?b,corpus/*.txt";
    let separate = ["corpus/[ab]*.txt", "corpus/s?b", "corpus/*.txt"];
    let case = Case::new("invertedindex", &[Path::new(joined)])
        .cwd(dir.path())
        .reference_inputs(&separate);
    case.check(dir.path(), "reference");
    let out = dir.path().join("out");
    JobRun::new("invertedindex")
        .input(joined)
        .output(&out)
        .cwd(dir.path())
        .run_ok();
    let index = lines(&out.join("part-r-00000"));
    assert!(index.contains(&b"dfs.replication\tcorpus/sub/deep/c.txt".to_vec()));
    assert!(index.contains(&b"hello\tcorpus/a.txt".to_vec()));
    assert!(!has_line_starting(&index, "HIDDENWORD\t"));
    assert!(!has_line_starting(&index, "HIDDENLOGS\t"));
}

/// A file reached twice (by name and through its directory) is read each time, as Hadoop
/// reads it: its words count twice, its lines are sorted in twice.
#[test]
fn duplicate_inputs_are_read_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = messy_corpus(dir.path(), false);
    let a = corpus.join("a.txt");
    let sub = corpus.join("sub");
    Case::new("wordcount", &[&corpus, &a, &sub, &corpus]).check(dir.path(), "wordcount");
    Case::new("sort", &[&a, &corpus, &a]).check(dir.path(), "sort");
}

/// An input of thousands of small files: word count and grep read them in a few map tasks
/// (combined splits of up to the split size), sort and the inverted index in a task per file;
/// every output matches the reference.
#[test]
fn thousands_of_small_files_are_read_by_few_map_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("small");
    // 1,200 files of about 1 KiB.
    gen_text(&corpus, "1200KiB", 1200, 11);
    let files = fs::read_dir(&corpus)
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('_')
        })
        .count();
    assert_eq!(files, 1200);
    for (job, combined) in [
        ("wordcount", true),
        ("grep", true),
        ("sort", false),
        ("invertedindex", false),
    ] {
        let c = Case::new(job, &[&corpus])
            .reducers(2)
            .engine(&["--threads", "2", "--split-size", "64KiB"])
            .check(dir.path(), job);
        let tasks = counter(&c.report, "map_tasks");
        if job == "wordcount" {
            // Every line of every file read once, the files' ends included.
            let lines = c.stats["lines"].as_u64().unwrap();
            assert_eq!(counter(&c.report, "map_input_records"), lines);
        }
        if combined {
            // 1,200 KiB in splits closed at 64 KiB: about 19.
            assert!((15..=20).contains(&tasks), "{job}: {tasks} map tasks");
        } else {
            assert_eq!(tasks, 1200, "{job}: a task per file");
        }
    }
}
