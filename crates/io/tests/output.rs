//! The output committer: all or nothing, never overwriting.

use std::fs;
use std::io::Write;
use std::path::Path;

use sluice_io::{IoError, OutputCommitter};

mod common;

/// Names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_exists_error(result: Result<OutputCommitter, IoError>, output: &Path) {
    match result {
        Err(IoError::OutputExists { path }) => assert_eq!(path, output),
        Err(other) => panic!("expected OutputExists, got {other}"),
        Ok(_) => panic!("accepted an existing output {}", output.display()),
    }
}

#[test]
fn existing_output_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let as_dir = dir.path().join("d");
    fs::create_dir(&as_dir).expect("mkdir");
    assert_exists_error(OutputCommitter::create(&as_dir), &as_dir);
    let as_file = dir.path().join("f");
    fs::write(&as_file, "x").expect("write");
    assert_exists_error(OutputCommitter::create(&as_file), &as_file);
    let dangling = dir.path().join("l");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).expect("symlink");
    assert_exists_error(OutputCommitter::create(&dangling), &dangling);
    assert_eq!(
        listing(dir.path()),
        ["d", "f", "l"],
        "no temporary directory left"
    );
}

#[test]
fn commit_moves_files_into_place_with_success_marker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("out");
    let committer = OutputCommitter::create(&output).expect("create");
    let temp = committer.temp_dir().to_path_buf();
    assert_eq!(temp.parent(), Some(dir.path()));
    assert_eq!(
        temp.file_name().and_then(|n| n.to_str()),
        Some(format!(".out.sluice-tmp-{}", std::process::id()).as_str())
    );
    assert_eq!(committer.final_dir(), output);
    for name in ["part-00000", "part-00001"] {
        let mut file = committer.create_file(name).expect("create_file");
        writeln!(file, "{name} data").expect("write");
    }
    assert!(!output.exists(), "nothing visible before commit");
    let committed = committer.commit().expect("commit");
    assert_eq!(committed, output);
    assert_eq!(listing(&output), ["_SUCCESS", "part-00000", "part-00001"]);
    assert_eq!(fs::read(output.join("_SUCCESS")).expect("read"), b"");
    assert_eq!(
        fs::read_to_string(output.join("part-00001")).expect("read"),
        "part-00001 data\n"
    );
    assert!(!temp.exists());
    assert_eq!(listing(dir.path()), ["out"]);
}

#[test]
fn drop_without_commit_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("out");
    {
        let committer = OutputCommitter::create(&output).expect("create");
        committer.create_file("part-00000").expect("create_file");
        assert!(committer.temp_dir().exists());
    }
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn abort_removes_the_temporary_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let committer = OutputCommitter::create(&dir.path().join("out")).expect("create");
    committer.create_file("part-00000").expect("create_file");
    committer.abort().expect("abort");
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn missing_parents_are_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("a/b/out");
    let committer = OutputCommitter::create(&output).expect("create");
    assert_eq!(
        committer.temp_dir().parent(),
        Some(dir.path().join("a/b").as_path())
    );
    committer.create_file("part-00000").expect("create_file");
    committer.commit().expect("commit");
    assert_eq!(listing(&output), ["_SUCCESS", "part-00000"]);
}

#[test]
fn output_appearing_before_commit_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("out");
    for intruder_is_dir in [true, false] {
        let committer = OutputCommitter::create(&output).expect("create");
        committer.create_file("part-00000").expect("create_file");
        if intruder_is_dir {
            fs::create_dir(&output).expect("mkdir");
        } else {
            fs::write(&output, "someone else's").expect("write");
        }
        match committer.commit() {
            Err(IoError::OutputExists { path }) => assert_eq!(path, output),
            other => panic!("expected OutputExists, got {other:?}"),
        }
        assert_eq!(listing(dir.path()), ["out"], "temporary directory removed");
        if intruder_is_dir {
            assert!(listing(&output).is_empty(), "intruder untouched");
            fs::remove_dir(&output).expect("cleanup");
        } else {
            assert_eq!(fs::read(&output).expect("read"), b"someone else's");
            fs::remove_file(&output).expect("cleanup");
        }
    }
}

#[test]
fn file_names_must_be_plain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let committer = OutputCommitter::create(&dir.path().join("out")).expect("create");
    for name in ["", ".", "..", "../escape", "a/b", "/abs"] {
        match committer.create_file(name) {
            Err(IoError::Write { .. }) => {}
            other => panic!("{name:?}: expected a write error, got {other:?}"),
        }
    }
    assert!(!dir.path().join("escape").exists());
}

#[test]
fn unwritable_parent_is_refused_naming_the_output() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let parent = dir.path().join("ro");
    fs::create_dir(&parent).expect("mkdir");
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o555)).expect("chmod");
    let result = common::with_permissions_enforced(dir.path(), || {
        OutputCommitter::create(&parent.join("out")).map(|_| ())
    });
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o755)).expect("chmod");
    match result {
        Err(IoError::CreateOutput { path, made, .. }) => {
            assert_eq!(path, parent.join("out"));
            assert!(made.starts_with(&parent), "{}", made.display());
        }
        Err(other) => panic!("expected a create-output error, got {other}"),
        Ok(()) => panic!("created output under a read-only parent"),
    }
}

#[test]
fn an_output_of_many_files_commits_whole() {
    // More than the committer syncs one by one: the whole file system is synced instead.
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("out");
    let committer = OutputCommitter::create(&output).expect("create");
    let names: Vec<String> = (0..1000).map(|i| format!("part-r-{i:05}")).collect();
    for name in &names {
        let mut file = committer.create_file(name).expect("create part");
        writeln!(file, "{name}").expect("write");
    }
    assert_eq!(committer.commit().expect("commit"), output);
    let mut expected = names.clone();
    expected.push("_SUCCESS".into());
    expected.sort();
    assert_eq!(listing(&output), expected);
    for name in &names {
        assert_eq!(
            fs::read_to_string(output.join(name)).expect("read"),
            format!("{name}\n")
        );
    }
}

/// An output whose name takes the 255 bytes a name may have commits: its staging directory's
/// name is cut to fit, with a hash of the whole, so that two long names with the same start
/// stage apart.
#[test]
fn an_output_of_the_longest_name_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    for last in ["a", "b"] {
        let name = format!("{}{last}", "o".repeat(254));
        let output = dir.path().join(&name);
        let committer = OutputCommitter::create(&output).expect("create");
        let staged = committer.temp_dir().file_name().expect("name").len();
        assert!(staged <= 255, "a staging name of {staged} bytes");
        let mut file = committer.create_file("part-00000").expect("create_file");
        writeln!(file, "{last}").expect("write");
        drop(file);
        committer.commit().expect("commit");
        assert_eq!(listing(&output), ["_SUCCESS", "part-00000"]);
    }
    let a = sluice_io::staging_prefix(format!("{}a", "o".repeat(254)).as_bytes());
    let b = sluice_io::staging_prefix(format!("{}b", "o".repeat(254)).as_bytes());
    assert_ne!(a, b);
    // A name that fits is kept whole.
    assert_eq!(sluice_io::staging_prefix(b"out"), b".out.sluice-tmp-");
}
