//! The job commit protocol on the local file system: committed output appears whole with
//! `_SUCCESS`, aborted or abandoned output leaves nothing.

use std::fs;
use std::io::Write;
use std::path::Path;

use sluice_io::{
    discover, IoError, JobCommitter, LocalRenameCommitter, LocalStorage, Location, PartAttempt,
};

/// Names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn write_part(committer: &dyn JobCommitter, part: PartAttempt<'_>, text: &str) {
    let mut writer = committer.create_part(part, 8192).expect("create part");
    writer.write_all(text.as_bytes()).expect("write");
    writer.finish().expect("finish");
}

#[test]
fn a_committed_output_appears_whole_with_success() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let location = Location::from_path(&output);
    let mut committer: Box<dyn JobCommitter> =
        Box::new(LocalRenameCommitter::new(&location).unwrap());
    assert_eq!(committer.output(), &location);
    committer.setup_job().unwrap();
    assert!(!output.exists(), "nothing is visible before the commit");

    // Task 0: one attempt, committed.
    write_part(
        committer.as_ref(),
        PartAttempt::new("part-00000", 0),
        "zero\n",
    );
    committer
        .commit_task(PartAttempt::new("part-00000", 0))
        .unwrap();
    // Task 1: the first attempt fails halfway and is aborted; the second is committed.
    let failed = PartAttempt::new("part-00001", 0);
    let mut half = committer.create_part(failed, 8192).unwrap();
    half.write_all(b"half a li").unwrap();
    drop(half);
    committer.abort_task(failed).unwrap();
    write_part(
        committer.as_ref(),
        PartAttempt::new("part-00001", 1),
        "one\n",
    );
    committer
        .commit_task(PartAttempt::new("part-00001", 1))
        .unwrap();
    // Task 2: a committed attempt, and a straggling copy that is never committed.
    write_part(
        committer.as_ref(),
        PartAttempt::new("part-00002", 0),
        "two\n",
    );
    committer
        .commit_task(PartAttempt::new("part-00002", 0))
        .unwrap();
    write_part(
        committer.as_ref(),
        PartAttempt::new("part-00002", 1),
        "stale\n",
    );
    assert!(!output.exists());

    committer.commit_job().unwrap();
    assert_eq!(
        listing(&output),
        ["_SUCCESS", "part-00000", "part-00001", "part-00002"]
    );
    assert_eq!(
        fs::read_to_string(output.join("part-00000")).unwrap(),
        "zero\n"
    );
    assert_eq!(
        fs::read_to_string(output.join("part-00001")).unwrap(),
        "one\n"
    );
    assert_eq!(
        fs::read_to_string(output.join("part-00002")).unwrap(),
        "two\n"
    );
    assert_eq!(fs::metadata(output.join("_SUCCESS")).unwrap().len(), 0);
    // No staging directory is left beside the output.
    assert_eq!(listing(dir.path()), ["out"]);
    // The output reads back as a job's input: the part files and nothing else.
    let found = discover(&LocalStorage::new(), &[location]).unwrap();
    assert_eq!(found.len(), 3);

    // A finished job cannot be committed or aborted again.
    assert!(matches!(committer.commit_job(), Err(IoError::Write { .. })));
    assert!(matches!(committer.abort_job(), Err(IoError::Write { .. })));
    assert!(output.join("_SUCCESS").exists());
}

#[test]
fn an_aborted_output_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let mut committer = LocalRenameCommitter::new(&Location::from_path(&output)).unwrap();
    committer.setup_job().unwrap();
    let temp = committer.temp_dir().expect("set up").to_path_buf();
    assert!(temp.exists());
    write_part(&committer, PartAttempt::new("part-00000", 0), "zero\n");
    committer
        .commit_task(PartAttempt::new("part-00000", 0))
        .unwrap();
    write_part(&committer, PartAttempt::new("part-00001", 0), "one\n");
    committer.abort_job().unwrap();
    assert!(!output.exists());
    assert!(!temp.exists());
    assert!(listing(dir.path()).is_empty());
    // Aborting again is harmless; committing is refused.
    committer.abort_job().unwrap();
    assert!(committer.commit_job().is_err());
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn a_committer_dropped_without_commit_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("nested/out");
    {
        let mut committer = LocalRenameCommitter::new(&Location::from_path(&output)).unwrap();
        committer.setup_job().unwrap();
        write_part(&committer, PartAttempt::new("part-00000", 0), "zero\n");
        committer
            .commit_task(PartAttempt::new("part-00000", 0))
            .unwrap();
    }
    assert!(!output.exists());
    assert!(listing(&dir.path().join("nested")).is_empty());
}

#[test]
fn misuse_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken");
    fs::create_dir(&taken).unwrap();
    let mut committer = LocalRenameCommitter::new(&Location::from_path(&taken)).unwrap();
    // Nothing is set up yet: no task may write, and aborting is harmless.
    assert!(matches!(
        committer.create_part(PartAttempt::new("part-00000", 0), 8192),
        Err(IoError::Write { .. })
    ));
    match committer.setup_job() {
        Err(IoError::OutputExists { path }) => assert_eq!(path, taken),
        other => panic!("expected OutputExists, got {other:?}"),
    }
    committer.abort_job().unwrap();

    let output = dir.path().join("out");
    let mut committer = LocalRenameCommitter::new(&Location::from_path(&output)).unwrap();
    committer.setup_job().unwrap();
    assert!(committer.setup_job().is_err(), "set up twice");
    for name in ["", ".", "..", "a/b", "/abs"] {
        assert!(
            matches!(
                committer.create_part(PartAttempt::new(name, 0), 8192),
                Err(IoError::Write { .. })
            ),
            "{name:?}"
        );
    }
    // An attempt that wrote nothing cannot be committed; aborting it is fine.
    assert!(committer
        .commit_task(PartAttempt::new("part-00000", 3))
        .is_err());
    committer
        .abort_task(PartAttempt::new("part-00000", 3))
        .unwrap();
    committer.commit_job().unwrap();
    assert_eq!(listing(&output), ["_SUCCESS"]);
}
