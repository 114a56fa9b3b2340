//! The job commit protocol on the local file system: committed output appears whole with
//! `_SUCCESS`, aborted or abandoned output leaves nothing.

use std::fs;
use std::io::Write;
use std::path::Path;

use sluice_io::{
    discover, IoError, JobCommitter, LocalRenameCommitter, LocalStorage, Location, PartAttempt,
    Stores,
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

/// The directory a local staging location names.
fn local_dir(staging: &Location) -> std::path::PathBuf {
    staging.as_local_path().expect("local").to_path_buf()
}

#[test]
fn an_attached_committer_writes_the_tasks_the_owner_commits() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let location = Location::from_path(&output);
    let stores = Stores::local();
    let mut owner = stores.committer(&location).unwrap();
    assert_eq!(owner.staging(), None, "nothing is staged before set-up");
    owner.setup_job().unwrap();
    let staging = owner.staging().expect("staged once set up");
    let staging_dir = local_dir(&staging);
    assert!(staging_dir.is_dir());
    assert_eq!(staging_dir.parent(), Some(dir.path()));

    let mut attached = stores.attach_committer(&location, &staging).unwrap();
    assert_eq!(attached.output(), &location);
    assert_eq!(attached.staging(), Some(staging.clone()));
    // Attempt 7 of part 0 is written and committed where the owner's would be.
    let seventh = PartAttempt::new("part-00000", 7);
    write_part(attached.as_ref(), seventh, "seven\n");
    assert!(staging_dir.join("_temporary/part-00000.7").is_file());
    attached.commit_task(seventh).unwrap();
    assert_eq!(
        fs::read_to_string(staging_dir.join("part-00000")).unwrap(),
        "seven\n"
    );
    // Another attempt is written and aborted: its file is gone.
    let failed = PartAttempt::new("part-00001", 2);
    write_part(attached.as_ref(), failed, "failed\n");
    attached.abort_task(failed).unwrap();
    assert!(listing(&staging_dir.join("_temporary")).is_empty());

    // The job is not the attached committer's to set up, commit or abort.
    for result in [attached.setup_job(), attached.commit_job()] {
        match result {
            Err(e @ IoError::Write { .. }) => assert!(
                std::error::Error::source(&e)
                    .is_some_and(|s| s.to_string().contains("process that set it up")),
                "{e:?}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    attached.abort_job().unwrap();
    drop(attached);
    assert_eq!(listing(&staging_dir), ["_temporary", "part-00000"]);
    assert!(!output.exists());

    owner.commit_job().unwrap();
    assert_eq!(owner.staging(), None, "nothing is staged once committed");
    assert_eq!(listing(&output), ["_SUCCESS", "part-00000"]);
    assert_eq!(
        fs::read_to_string(output.join("part-00000")).unwrap(),
        "seven\n"
    );
    assert_eq!(listing(dir.path()), ["out"]);
}

#[test]
fn an_owner_abort_discards_what_attached_committers_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let location = Location::from_path(&output);
    let mut owner = LocalRenameCommitter::new(&location).unwrap();
    owner.setup_job().unwrap();
    let staging = owner.staging().expect("set up");
    let first = LocalRenameCommitter::attach(&location, &staging).unwrap();
    write_part(&first, PartAttempt::new("part-00000", 0), "zero\n");
    first
        .commit_task(PartAttempt::new("part-00000", 0))
        .unwrap();
    let second = LocalRenameCommitter::attach(&location, &staging).unwrap();
    write_part(&second, PartAttempt::new("part-00001", 0), "one\n");

    owner.abort_job().unwrap();
    assert!(listing(dir.path()).is_empty());
    // A worker late for the aborted job writes nothing: the staging directory is not
    // recreated.
    assert!(second
        .create_part(PartAttempt::new("part-00001", 1), 8192)
        .is_err());
    assert!(second
        .commit_task(PartAttempt::new("part-00001", 0))
        .is_err());
    drop((first, second));
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn attaching_to_anything_but_the_outputs_staging_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = Location::from_path(dir.path().join("out"));
    let pid = std::process::id();
    let elsewhere = [
        // The output itself, and a directory inside it.
        dir.path().join("out"),
        dir.path().join(format!("out/.out.sluice-tmp-{pid}")),
        // A staging directory's name, in another directory.
        dir.path().join(format!("other/.out.sluice-tmp-{pid}")),
        // Another output's staging directory, and names that are not a staging directory's.
        dir.path().join(format!(".other.sluice-tmp-{pid}")),
        dir.path().join(format!("out.sluice-tmp-{pid}")),
        dir.path().join(".out.sluice-tmp-"),
        dir.path().join(".out.sluice-tmp-12x"),
        dir.path().join(format!(".out.sluice-tmp-{pid}/_temporary")),
        dir.path().join(format!(".out.sluice-tmp-{pid}/..")),
        dir.path().to_path_buf(),
    ];
    for staging in elsewhere {
        let staging = Location::from_path(staging);
        assert!(
            matches!(
                LocalRenameCommitter::attach(&output, &staging),
                Err(IoError::Write { .. })
            ),
            "{staging}"
        );
        assert!(Stores::local().attach_committer(&output, &staging).is_err());
    }
    let remote = Location::parse(&format!("hdfs://nn:8020/.out.sluice-tmp-{pid}")).unwrap();
    assert!(LocalRenameCommitter::attach(&output, &remote).is_err());
    assert!(matches!(
        Stores::local().attach_committer(&Location::parse("hdfs://nn:8020/out").unwrap(), &remote),
        Err(IoError::UnsupportedScheme { .. })
    ));

    // Another process's staging directory of this output is accepted (relative paths too),
    // and attaching touches nothing: with no job running there, writing fails.
    let attached = LocalRenameCommitter::attach(
        &output,
        &Location::from_path(dir.path().join(".out.sluice-tmp-123")),
    )
    .unwrap();
    assert!(attached
        .create_part(PartAttempt::new("part-00000", 0), 8192)
        .is_err());
    assert!(listing(dir.path()).is_empty());
    assert!(LocalRenameCommitter::attach(
        &Location::from_path("out"),
        &Location::from_path("./.out.sluice-tmp-123")
    )
    .is_ok());
}
