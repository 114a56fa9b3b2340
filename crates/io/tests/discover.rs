//! Input discovery: Hadoop's hidden-file filter, recursion, globs, sorting and errors.

use std::fs;
use std::path::{Path, PathBuf};

use sluice_io::{discover_inputs, Compression, IoError};

mod common;

/// A tree with visible and hidden entries at several depths.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("in");
    for (name, contents) in [
        ("b.txt", "bb\n"),
        ("a.txt", "a\n"),
        ("_SUCCESS", ""),
        (".a.txt.crc", "crc"),
        ("sub/c.gz", "not really gzip"),
        ("sub/deeper/d.txt", "dddd\n"),
        ("sub/deeper/_x", "hidden"),
        ("sub/_tmp/inner.txt", "hidden"),
        ("sub/.git/inner.txt", "hidden"),
        ("_logs/history.txt", "hidden"),
    ] {
        let path = root.join(name);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, contents).expect("write");
    }
    dir
}

fn paths(args: &[PathBuf]) -> Vec<PathBuf> {
    discover_inputs(args)
        .expect("discover")
        .into_iter()
        .map(|f| f.path)
        .collect()
}

fn visible(root: &Path) -> Vec<PathBuf> {
    ["a.txt", "b.txt", "sub/c.gz", "sub/deeper/d.txt"]
        .iter()
        .map(|p| root.join(p))
        .collect()
}

#[test]
fn directories_are_walked_without_hidden_entries() {
    let dir = tree();
    let root = dir.path().join("in");
    let files = discover_inputs(std::slice::from_ref(&root)).expect("discover");
    let found: Vec<_> = files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(found, visible(&root));
    assert_eq!(files[1].len, 3);
    assert_eq!(files[2].compression, Compression::Gzip);
    assert_eq!(files[3].compression, Compression::None);
}

#[test]
fn paths_keep_the_spelling_of_the_argument() {
    let dir = tree();
    let mut arg = dir.path().join("in").into_os_string();
    arg.push("/");
    let found = paths(&[PathBuf::from(&arg)]);
    let mut expected = PathBuf::from(&arg);
    expected.push("a.txt");
    assert_eq!(found[0].as_os_str(), expected.as_os_str());
}

#[test]
fn named_hidden_paths_are_refused_as_hadoop_refuses_them() {
    let dir = tree();
    let root = dir.path().join("in");
    for hidden in [
        root.join("_SUCCESS"),
        root.join(".a.txt.crc"),
        root.join("_logs"),
        root.join("sub/_tmp"),
        root.join("sub/.git"),
    ] {
        match discover_inputs(std::slice::from_ref(&hidden)) {
            Err(IoError::HiddenInput { path }) => assert_eq!(path, hidden),
            other => panic!("{}: expected HiddenInput, got {other:?}", hidden.display()),
        }
    }
    // Only the last name counts: a visible file below a hidden directory is read when named,
    // and so is what a glob finds inside a hidden directory.
    assert_eq!(
        paths(&[root.join("sub/.git/inner.txt")]),
        vec![root.join("sub/.git/inner.txt")]
    );
    assert_eq!(
        paths(&[root.join("_logs/*")]),
        vec![root.join("_logs/history.txt")]
    );
}

/// `.` is the current directory, which is refused when its own name is hidden.
#[test]
fn the_current_directory_counts_by_its_own_name() {
    let dir = tree();
    let hidden = dir.path().join("in/sub/_tmp");
    let child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "current_directory_probe", "--nocapture"])
        .env("SLUICE_PROBE_DIR", &hidden)
        .output()
        .expect("run the probe");
    assert!(
        child.status.success(),
        "{}",
        String::from_utf8_lossy(&child.stdout)
    );
}

/// Run by [`the_current_directory_counts_by_its_own_name`] in a process of its own, since it
/// changes the current directory.
#[test]
fn current_directory_probe() {
    let Some(dir) = std::env::var_os("SLUICE_PROBE_DIR") else {
        return;
    };
    std::env::set_current_dir(&dir).expect("cd");
    assert!(matches!(
        discover_inputs(&[PathBuf::from(".")]),
        Err(IoError::HiddenInput { .. })
    ));
}

/// Files come in the order of the inputs (as Hadoop lists them, so map tasks and map-only part
/// files follow it), each input's files sorted by bytes; a file two inputs name is there for
/// each, as Hadoop reads it twice.
#[test]
fn output_follows_the_inputs_each_sorted_by_bytes() {
    let dir = tree();
    let root = dir.path().join("in");
    let found = paths(&[
        root.join("sub"),
        root.join("b.txt"),
        root.clone(),
        root.join("a.txt"),
        root.join("sub/deeper/d.txt"),
    ]);
    assert_eq!(
        found,
        [
            "sub/c.gz",
            "sub/deeper/d.txt",
            "b.txt",
            "a.txt",
            "b.txt",
            "sub/c.gz",
            "sub/deeper/d.txt",
            "a.txt",
            "sub/deeper/d.txt"
        ]
        .map(|p| root.join(p))
    );
    // Byte order: uppercase before lowercase, `-` before `.`.
    let other = dir.path().join("order");
    fs::create_dir(&other).expect("mkdir");
    for name in ["b", "B", "a.txt", "a-txt", "a"] {
        fs::write(other.join(name), "x").expect("write");
    }
    let names: Vec<_> = paths(std::slice::from_ref(&other))
        .into_iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["B", "a", "a-txt", "a.txt", "b"]);
}

#[test]
fn globs_expand_and_filter_hidden_matches() {
    let dir = tree();
    let root = dir.path().join("in");
    assert_eq!(
        paths(&[root.join("*.txt")]),
        vec![root.join("a.txt"), root.join("b.txt")]
    );
    // `*` matches directories too (walked) but not hidden names (`_SUCCESS`, `_logs`, `.a.txt.crc`).
    assert_eq!(paths(&[root.join("*")]), visible(&root));
    assert_eq!(
        paths(&[root.join("s?b/deeper/*")]),
        vec![root.join("sub/deeper/d.txt")]
    );
    // Globs that overlap: what both match is read for each, as in Hadoop.
    assert_eq!(
        paths(&[root.join("[ab].txt"), root.join("a.*")]),
        vec![root.join("a.txt"), root.join("b.txt"), root.join("a.txt")]
    );
}

#[test]
fn glob_matching_nothing_or_only_hidden_files_matches_0_files() {
    let dir = tree();
    let root = dir.path().join("in");
    for pattern in [root.join("*.csv"), root.join("_*"), root.join("nope/*")] {
        match discover_inputs(std::slice::from_ref(&pattern)) {
            Err(e @ IoError::PatternMatchesNothing { .. }) => {
                assert!(e.is_not_found());
                assert_eq!(
                    e.to_string(),
                    format!("input pattern {} matches 0 files", pattern.display())
                );
            }
            other => panic!("{}: expected no match, got {other:?}", pattern.display()),
        }
    }
}

/// Hadoop reads a `\` as an escape even where a path has no wildcard: `a\.txt` names `a.txt`,
/// and one that names nothing is a missing path, not a pattern matching 0 files.
#[test]
fn an_escape_without_a_wildcard_names_the_plain_path() {
    let dir = tree();
    let root = dir.path().join("in");
    assert_eq!(paths(&[root.join("a\\.txt")]), vec![root.join("a.txt")]);
    assert_eq!(
        paths(&[root.join("su\\b/c.gz")]),
        vec![root.join("sub/c.gz")]
    );
    // An escape Hadoop's pattern compiler refuses is refused, not read in another sense.
    for refused in ["x\\y", "a\\"] {
        match discover_inputs(&[root.join(refused)]) {
            Err(IoError::BadPattern { detail, .. }) => {
                assert!(
                    detail.contains("escape") || detail.contains("backslash"),
                    "{detail}"
                )
            }
            other => panic!("{refused}: expected a bad pattern, got {other:?}"),
        }
    }
    let missing = root.join("x\\.y");
    match discover_inputs(std::slice::from_ref(&missing)) {
        Err(IoError::InputNotFound { path }) => assert_eq!(path, missing),
        other => panic!("expected not found, got {other:?}"),
    }
}

#[test]
fn malformed_glob_is_a_bad_pattern() {
    let dir = tree();
    let pattern = dir.path().join("in/[a");
    match discover_inputs(&[pattern]) {
        Err(IoError::BadPattern { pattern, .. }) => assert!(pattern.ends_with("in/[a")),
        other => panic!("expected a bad pattern, got {other:?}"),
    }
}

/// Hadoop's `{a,b}`: each alternative's files, hidden ones left out as from a glob; an
/// alternative that names nothing is no error while another names something.
#[test]
fn brace_groups_stand_for_each_alternative() {
    let dir = tree();
    let root = dir.path().join("in");
    assert_eq!(
        paths(&[root.join("{a,b}.txt")]),
        vec![root.join("a.txt"), root.join("b.txt")]
    );
    assert_eq!(
        paths(&[root.join("{a.txt,missing,_SUCCESS,sub/deeper}")]),
        vec![root.join("a.txt"), root.join("sub/deeper/d.txt")]
    );
    // Nested groups, globs inside alternatives, and a group holding `/`.
    assert_eq!(
        paths(&[root.join("{b,sub/{c,deeper/d}}*")]),
        vec![
            root.join("b.txt"),
            root.join("sub/c.gz"),
            root.join("sub/deeper/d.txt")
        ]
    );
    let none = root.join("{x,y}.txt");
    match discover_inputs(std::slice::from_ref(&none)) {
        Err(IoError::PatternMatchesNothing { path }) => assert_eq!(path, none),
        other => panic!("expected not found, got {other:?}"),
    }
    match discover_inputs(&[root.join("{a,b.txt")]) {
        Err(IoError::BadPattern { detail, .. }) => {
            assert!(detail.contains("not closed"), "{detail}")
        }
        other => panic!("expected a bad pattern, got {other:?}"),
    }
}

#[test]
fn missing_path_is_not_found() {
    let dir = tree();
    let missing = dir.path().join("in/missing.txt");
    match discover_inputs(&[dir.path().join("in/a.txt"), missing.clone()]) {
        Err(IoError::InputNotFound { path }) => assert_eq!(path, missing),
        other => panic!("expected not found, got {other:?}"),
    }
}

#[test]
fn empty_directory_gives_no_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).expect("mkdir");
    assert_eq!(discover_inputs(&[empty]).expect("discover"), vec![]);
    assert_eq!(discover_inputs(&[]).expect("discover"), vec![]);
}

#[test]
fn symlinks_are_followed_and_cycles_do_not_hang() {
    let dir = tree();
    let root = dir.path().join("in");
    let links = dir.path().join("links");
    fs::create_dir(&links).expect("mkdir");
    std::os::unix::fs::symlink(root.join("a.txt"), links.join("file")).expect("symlink");
    std::os::unix::fs::symlink(root.join("sub/deeper"), links.join("dir")).expect("symlink");
    std::os::unix::fs::symlink(&links, links.join("loop")).expect("symlink");
    std::os::unix::fs::symlink(root.join("gone"), links.join("dangling")).expect("symlink");
    let files = discover_inputs(std::slice::from_ref(&links)).expect("discover");
    let found: Vec<_> = files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(found, vec![links.join("dir/d.txt"), links.join("file")]);
    assert_eq!(files[1].len, 2, "the length of the target, not of the link");
}

#[test]
fn unreadable_directory_is_a_read_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tree();
    let locked = dir.path().join("in/sub/deeper");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).expect("chmod");
    let result =
        common::with_permissions_enforced(dir.path(), || discover_inputs(&[dir.path().join("in")]));
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).expect("chmod");
    match result {
        Err(IoError::Read { path, .. }) => assert_eq!(path, locked),
        other => panic!("expected a read error, got {other:?}"),
    }
}

/// Hadoop's `**` is two `*`s: it matches within one directory level, never across levels
/// (the `glob` crate's recursive `**` would read every depth).
#[test]
fn a_double_star_matches_one_level_as_in_hadoop() {
    let dir = tree();
    let root = dir.path().join("in");
    assert_eq!(paths(&[root.join("**/c.gz")]), vec![root.join("sub/c.gz")]);
    assert_eq!(
        paths(&[root.join("s**b/c.gz")]),
        vec![root.join("sub/c.gz")]
    );
    assert!(matches!(
        discover_inputs(&[root.join("**/d.txt")]),
        Err(IoError::PatternMatchesNothing { .. })
    ));
}
