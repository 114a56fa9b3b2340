//! The storages against real servers (an in-JVM MiniDFSCluster, moto's S3), as the engine
//! calls them: listings, ranged reads, block locations, writers and both committers. Written
//! by Hadoop's client or boto3 and read back by sluice, and the other way round. What a
//! killed job leaves on S3 is checked against boto3's listing, and the one S3 request sluice
//! makes itself (ListMultipartUploads) against botocore's signer and a stand-in server that
//! pages as S3 does.
//!
//! Without the `test-stores` feature every test here is ignored, with the reason.

use std::io::{Read, Write};

use std::sync::Arc;

use sluice_io::{
    discover, plan_block_splits, plan_combined_splits, CombineSizes, IoError, JobCommitter,
    Location, PartAttempt, RemoteStores, Storage, StoredInput, Stores,
};
use sluice_stores::{
    clean_up, HdfsRenameCommitter, HdfsStorage, Journal, JournalEntry, RemoteConnector,
    S3MagicCommitter, S3Storage, StoreConfig,
};
use sluice_testkit::{botocore_signature, MiniDfs, MiniDfsOptions, S3Options, S3Server};

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

fn read_all(storage: &dyn Storage, location: &Location, start: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::new();
    storage
        .open_range(location, start, len)
        .expect("opens")
        .read_to_end(&mut out)
        .expect("reads");
    out
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn hdfs_blocks_splits_and_ranges() {
    let dfs = MiniDfs::start(MiniDfsOptions {
        datanodes: 2,
        block_size: 1 << 20,
    })
    .expect("MiniDFS starts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let local = dir.path().join("f.bin");
    let bytes = data(3 * (1 << 20) + 12_345);
    std::fs::write(&local, &bytes).expect("written");
    let put = dfs.fs(&["-put", local.to_str().expect("UTF-8"), "/f.bin"]);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );

    let config = StoreConfig::from_parts(
        // sluice's own files get one block each, clear of the new-block race hdfs-native
        // does not retry (NotReplicatedYetException; see ARCHITECTURE.md).
        [
            ("dfs.namenode.http-address", dfs.webhdfs()),
            ("dfs.blocksize", "128m"),
        ],
        [("HADOOP_USER_NAME", "tester")],
    );
    let file = Location::parse(&format!("{}/f.bin", dfs.uri())).expect("a location");
    let storage = HdfsStorage::connect(&file, &config).expect("connects");
    let status = storage.status(&file).expect("status").expect("exists");
    assert_eq!(status.len, bytes.len() as u64);
    assert_eq!(status.block_size, Some(1 << 20));

    // Ranged reads: the bytes asked for, whatever the block boundaries.
    for (start, len) in [
        (0, u64::MAX),
        (5, 100),
        ((1 << 20) - 7, 20),
        (3 << 20, 1 << 20),
    ] {
        let s = usize::try_from(start).expect("fits");
        let e = s
            .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
            .min(bytes.len());
        assert_eq!(
            read_all(&storage, &file, start, len),
            bytes[s..e],
            "{start}+{len}"
        );
    }

    // Blocks and their hosts, from WebHDFS; splits along them.
    let blocks = storage.block_locations(&file).expect("block locations");
    assert_eq!(blocks.len(), 4);
    assert_eq!(blocks[1].offset, 1 << 20);
    assert!(blocks.iter().all(|b| !b.hosts.is_empty()), "{blocks:?}");
    let mut found = discover(&storage, std::slice::from_ref(&file)).expect("discovers");
    found[0].status = found[0].status.clone().with_blocks(blocks);
    let files: Vec<StoredInput> = found;
    let splits = plan_block_splits(&files, 32 << 20, 1);
    assert_eq!(splits.len(), 3, "{splits:?}");
    assert!(splits.iter().all(|s| !s.hosts(&files).is_empty()));
    // Combined splits along the same blocks (1 MiB each, at most 2 MiB a split): the first
    // closes on the node that holds the first block, and names it.
    let sizes = CombineSizes {
        max: 2 << 20,
        ..CombineSizes::default()
    };
    let combined = plan_combined_splits(&files, sizes);
    let chunks: usize = combined.iter().map(|s| s.parts().len()).sum();
    assert_eq!(chunks, 4, "{combined:?}");
    assert_eq!(
        combined[0].hosts(&files),
        &files[0].status.blocks[0].hosts[..1],
        "{combined:?}"
    );

    // A file written by sluice is read back by Hadoop's client.
    let written = Location::parse(&format!("{}/by-sluice/x.bin", dfs.uri())).expect("a location");
    let mut writer = storage.create(&written).expect("creates");
    writer.write_all(&bytes).expect("writes");
    assert_eq!(writer.finish().expect("finishes"), bytes.len() as u64);
    let back = dir.path().join("back.bin");
    let get = dfs.fs(&["-get", "/by-sluice/x.bin", back.to_str().expect("UTF-8")]);
    assert!(get.status.success());
    assert_eq!(std::fs::read(&back).expect("read"), bytes);
    // The local storage refuses to create over an existing file; so does this one.
    assert!(storage.create(&written).is_err());
    assert!(storage.delete(&written).expect("deletes"));
    assert!(!storage.delete(&written).expect("nothing to delete"));
}

/// The names in `dir`, sorted.
fn names(storage: &dyn Storage, dir: &Location) -> Vec<String> {
    let mut names: Vec<String> = storage
        .list(dir)
        .expect("lists")
        .iter()
        .map(|s| {
            s.location
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn hdfs_attached_committers_write_the_tasks_the_owner_commits() {
    let dfs = MiniDfs::start(MiniDfsOptions {
        datanodes: 1,
        block_size: 1 << 20,
    })
    .expect("MiniDFS starts");
    let config = StoreConfig::from_parts(
        [("dfs.blocksize", "128m")],
        [("HADOOP_USER_NAME", "tester")],
    );
    let root = Location::parse(&format!("{}/jobs", dfs.uri())).expect("a location");
    let output = root.join("out");
    let storage = HdfsStorage::connect(&output, &config).expect("connects");
    // The owner and the workers do not share a connection, as processes would not.
    let owner_stores = Stores::with_remote(Arc::new(RemoteConnector::new(config.clone(), "job_1")));
    let worker_stores = Stores::with_remote(Arc::new(RemoteConnector::new(config, "job_1")));

    let mut owner = owner_stores.committer(&output).expect("a committer");
    assert_eq!(owner.staging(), None, "nothing is staged before set-up");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("staged once set up");
    assert_eq!(staging.parent().as_ref(), Some(&root));

    let mut attached = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    assert_eq!(attached.output(), &output);
    assert_eq!(attached.staging(), Some(staging.clone()));
    let bytes = data(100_000);
    let seventh = PartAttempt::new("part-00000", 7);
    let mut writer = attached.create_part(seventh, 1 << 20).expect("a part");
    writer.write_all(&bytes).expect("writes");
    writer.finish().expect("finishes");
    assert!(storage
        .status(&staging.join("_temporary").join("part-00000.7"))
        .expect("status")
        .is_some());
    attached.commit_task(seventh).expect("task commits");
    let failed = PartAttempt::new("part-00001", 2);
    let mut writer = attached.create_part(failed, 1 << 20).expect("a part");
    writer.write_all(b"failed").expect("writes");
    writer.finish().expect("finishes");
    attached.abort_task(failed).expect("task aborts");
    assert!(names(&storage, &staging.join("_temporary")).is_empty());

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
    attached.abort_job().expect("nothing to do");
    drop(attached);
    assert_eq!(names(&storage, &staging), ["_temporary", "part-00000"]);
    assert!(storage.status(&output).expect("status").is_none());

    owner.commit_job().expect("job commits");
    assert_eq!(names(&storage, &output), ["_SUCCESS", "part-00000"]);
    assert_eq!(
        read_all(&storage, &output.join("part-00000"), 0, u64::MAX),
        bytes
    );
    assert_eq!(names(&storage, &root), ["out"]);

    // An owner's abort discards what attached committers wrote, and a worker late for the
    // aborted job writes nothing: the staging directory is not recreated.
    let output = root.join("aborted");
    let mut owner = HdfsRenameCommitter::new(storage.clone(), &output).expect("a committer");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("set up");
    let attached = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let part = PartAttempt::new("part-00000", 0);
    let mut writer = attached.create_part(part, 1 << 20).expect("a part");
    writer.write_all(b"zero").expect("writes");
    writer.finish().expect("finishes");
    attached.commit_task(part).expect("task commits");
    owner.abort_job().expect("job aborts");
    assert!(attached
        .create_part(PartAttempt::new("part-00000", 1), 1 << 20)
        .is_err());
    drop(attached);
    assert_eq!(names(&storage, &root), ["out"]);

    // Only the output's own staging directory is accepted.
    let pid = std::process::id();
    for elsewhere in [
        output.clone(),
        root.join("other")
            .join(format!(".aborted.sluice-tmp-{pid}-1f")),
        root.join(format!(".out.sluice-tmp-{pid}-1f")),
        root.join(format!(".aborted.sluice-tmp-{pid}")),
        Location::from_path(format!("/jobs/.aborted.sluice-tmp-{pid}-1f")),
    ] {
        assert!(
            matches!(
                worker_stores.attach_committer(&output, &elsewhere),
                Err(IoError::Write { .. })
            ),
            "{elsewhere}"
        );
    }
    assert_eq!(names(&storage, &root), ["out"]);
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_attached_committers_hand_their_tasks_to_the_owner() {
    let server = S3Server::start_with(S3Options::default()).expect("S3 server starts");
    server.create_bucket("bkt");
    let config = StoreConfig::from_parts(
        [],
        [
            ("AWS_ACCESS_KEY_ID", server.access_key()),
            ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
            ("AWS_REGION", server.region()),
            ("AWS_ENDPOINT_URL", server.endpoint()),
        ],
    );
    // The owner and the workers do not share a connection, as processes would not.
    let owner_stores =
        Stores::with_remote(Arc::new(RemoteConnector::new(config.clone(), "job_1_0001")));
    let worker_stores = Stores::with_remote(Arc::new(RemoteConnector::new(config, "job_1_0001")));
    let output = Location::parse("s3://bkt/jobs/out").expect("a location");
    let mut owner = owner_stores.committer(&output).expect("a committer");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("staged once set up");
    assert_eq!(
        staging.to_string(),
        "s3://bkt/jobs/.out.sluice-pending-job_1_0001"
    );

    let first = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let second = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let big = data((6 << 20) + 5);
    fn write<'a>(
        committer: &dyn JobCommitter,
        name: &'a str,
        attempt: u32,
        bytes: &[u8],
    ) -> PartAttempt<'a> {
        let part = PartAttempt::new(name, attempt);
        let mut writer = committer.create_part(part, 1 << 20).expect("a part");
        writer.write_all(bytes).expect("writes");
        writer.finish().expect("finishes");
        part
    }
    // part-00000 committed twice (its first worker was thought lost): attempt 1 is kept.
    let p = write(&*first, "part-00000", 3, b"attempt three");
    first.commit_task(p).expect("task commits");
    let p = write(&*second, "part-00000", 1, &big);
    second.commit_task(p).expect("task commits");
    let p = write(&*second, "part-00001", 0, b"one");
    second.commit_task(p).expect("task commits");
    // Written, not committed: aborted by the attached committer's drop.
    write(&*first, "part-00002", 0, b"never committed");
    // The owner's own task.
    let p = write(&*owner, "part-00003", 0, b"three");
    owner.commit_task(p).expect("task commits");

    let mut first = first;
    for result in [first.setup_job(), first.commit_job()] {
        match result {
            Err(e @ IoError::Write { .. }) => assert!(
                std::error::Error::source(&e)
                    .is_some_and(|s| s.to_string().contains("process that set it up")),
                "{e:?}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    drop(first);
    drop(second);
    assert!(
        server.list_objects("bkt", "jobs/out").is_empty(),
        "visible before commit"
    );
    let manifests: Vec<String> = server
        .list_objects("bkt", "jobs/.out.sluice-pending-job_1_0001/")
        .into_iter()
        .map(|(key, _)| key.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        manifests,
        [
            "part-00000.1.pending",
            "part-00000.3.pending",
            "part-00001.0.pending"
        ]
    );

    owner.commit_job().expect("job commits");
    let files: Vec<String> = server
        .list_objects("bkt", "jobs/")
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    assert_eq!(
        files,
        [
            "jobs/out/_SUCCESS",
            "jobs/out/part-00000",
            "jobs/out/part-00001",
            "jobs/out/part-00003"
        ]
    );
    assert_eq!(server.get_object("bkt", "jobs/out/part-00000"), big);
    assert_eq!(server.get_object("bkt", "jobs/out/part-00001"), b"one");
    assert!(
        server.list_multipart_uploads("bkt").is_empty(),
        "uploads left open: {:?}",
        server.list_multipart_uploads("bkt")
    );

    // An owner's abort aborts what attached committers committed, and removes the manifests.
    let output = Location::parse("s3://bkt/jobs/aborted").expect("a location");
    let mut owner = owner_stores.committer(&output).expect("a committer");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("set up");
    let attached = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let p = write(&*attached, "part-00000", 0, b"zero");
    attached.commit_task(p).expect("task commits");
    drop(attached);
    owner.abort_job().expect("job aborts");
    let left: Vec<String> = server
        .list_objects("bkt", "jobs/")
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains("aborted"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(server.list_multipart_uploads("bkt").is_empty());
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_listings_page_and_hide_and_uploads_stay_invisible_until_commit() {
    // Two keys per listing page: the client must follow the pages.
    let server = S3Server::start_with(S3Options {
        min_part_size: None,
        max_keys: Some(2),
    })
    .expect("S3 server starts");
    server.create_bucket("bkt");
    for name in [
        "in/a",
        "in/b",
        "in/sub/c",
        "in/_SUCCESS",
        "in/.a.crc",
        "in/_logs/x",
        "in/d",
    ] {
        server.put_object("bkt", name, name.as_bytes());
    }
    let config = StoreConfig::from_parts(
        [],
        [
            ("AWS_ACCESS_KEY_ID", server.access_key()),
            ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
            ("AWS_REGION", server.region()),
            ("AWS_ENDPOINT_URL", server.endpoint()),
        ],
    );
    let dir = Location::parse("s3://bkt/in").expect("a location");
    let storage = S3Storage::connect(&dir, &config).expect("connects");
    let mut found: Vec<String> = discover(&storage, std::slice::from_ref(&dir))
        .expect("discovers")
        .iter()
        .map(|f| f.location().to_string())
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "s3://bkt/in/a",
            "s3://bkt/in/b",
            "s3://bkt/in/d",
            "s3://bkt/in/sub/c"
        ]
    );
    let globbed = storage
        .glob_visible(&Location::parse("s3://bkt/in/?").expect("a pattern"))
        .expect("globs");
    let names: Vec<String> = globbed.iter().map(|s| s.location.to_string()).collect();
    assert_eq!(names, ["s3://bkt/in/a", "s3://bkt/in/b", "s3://bkt/in/d"]);
    let dirs = storage
        .glob_visible(&Location::parse("s3://bkt/in/s*").expect("a pattern"))
        .expect("globs");
    assert!(dirs.len() == 1 && dirs[0].is_dir, "{dirs:?}");

    // A committed job's files appear only at job commit; an aborted one's never.
    let big = data((9 << 20) + 3);
    for commit in [true, false] {
        let out = Location::parse(if commit {
            "s3://bkt/out-ok"
        } else {
            "s3://bkt/out-no"
        })
        .expect("a location");
        let mut committer = S3MagicCommitter::new(storage.clone(), &out, "job_1_0001");
        committer.setup_job().expect("set up");
        for (i, name) in ["part-00000", "part-00001"].into_iter().enumerate() {
            let part = PartAttempt::new(name, 0);
            let mut writer = committer.create_part(part, 1 << 20).expect("a part");
            writer
                .write_all(if i == 0 { &big } else { b"small" })
                .expect("writes");
            writer.finish().expect("finishes");
            committer.commit_task(part).expect("task commits");
        }
        let prefix = if commit { "out-ok" } else { "out-no" };
        let visible = server.list_objects("bkt", prefix);
        assert!(visible.is_empty(), "visible before commit: {visible:?}");
        assert_eq!(server.list_multipart_uploads("bkt").len(), 2);
        if commit {
            committer.commit_job().expect("job commits");
            assert_eq!(server.get_object("bkt", "out-ok/part-00000"), big);
            assert_eq!(server.get_object("bkt", "out-ok/part-00001"), b"small");
            let manifest: serde_json::Value =
                serde_json::from_slice(&server.get_object("bkt", "out-ok/_SUCCESS")).expect("JSON");
            assert_eq!(
                manifest["filenames"],
                serde_json::json!(["/out-ok/part-00000", "/out-ok/part-00001"])
            );
        } else {
            committer.abort_job().expect("job aborts");
            assert!(server.list_objects("bkt", "out-no").is_empty());
        }
        assert!(server.list_multipart_uploads("bkt").is_empty());
    }
}

/// Settings for `server` as `-D` properties, as a job's journal keeps them for its watcher.
fn s3_properties(server: &S3Server) -> StoreConfig {
    StoreConfig::from_parts(
        [
            ("fs.s3a.endpoint", server.endpoint()),
            ("fs.s3a.access.key", server.access_key()),
            ("fs.s3a.secret.key", server.secret_key()),
            ("fs.s3a.endpoint.region", server.region()),
        ],
        [],
    )
}

/// The keys of the uploads open in `bucket`, sorted, as boto3 lists them.
fn open_upload_keys(server: &S3Server, bucket: &str) -> Vec<String> {
    let mut keys: Vec<String> = server
        .list_multipart_uploads(bucket)
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    keys.sort();
    keys
}

/// A journal at `path` that starts no watcher: the test plays the watcher.
fn journal_at(path: &std::path::Path, config: &StoreConfig) -> Arc<Journal> {
    Arc::new(Journal::new(path, config, Box::new(|_| Ok(()))))
}

fn write_part<'a>(
    committer: &dyn JobCommitter,
    name: &'a str,
    attempt: u32,
    bytes: &[u8],
) -> PartAttempt<'a> {
    let part = PartAttempt::new(name, attempt);
    let mut writer = committer.create_part(part, 1 << 20).expect("a part");
    writer.write_all(bytes).expect("writes");
    writer.finish().expect("finishes");
    part
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_the_watcher_aborts_the_uploads_a_killed_job_never_recorded() {
    let server = S3Server::start().expect("S3 server starts");
    server.create_bucket("bkt");
    let config = s3_properties(&server);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("journal.jsonl");
    let owner =
        RemoteConnector::new(config.clone(), "job_1_0001").with_journal(journal_at(&path, &config));
    let workers = RemoteConnector::new(config, "job_1_0001");

    let output = Location::parse("s3://bkt/jobs/out").expect("a location");
    let mut committer = owner.committer(&output).expect("a committer");
    committer.setup_job().expect("set up");
    let staging = committer.staging().expect("staged");
    // A task of this process (its upload's id is in the journal), and a worker's committed
    // task (its manifest in the staging prefix, its id in no journal of this process).
    let p = write_part(&*committer, "part-00000", 0, b"zero");
    committer.commit_task(p).expect("task commits");
    let attached = workers
        .attach_committer(&output, &staging)
        .expect("attaches");
    let p = write_part(&*attached, "part-00001", 0, b"one");
    attached.commit_task(p).expect("task commits");
    drop(attached);
    // The worst moment: S3 started an upload for the job, whose process died before
    // writing the upload's id down.
    server.start_multipart_upload("bkt", "jobs/out/part-00002");
    // A file written outside a committer: one part sent, so its upload is started.
    let file = Location::parse("s3://bkt/files/f").expect("a location");
    let mut writer = owner
        .storage(&file)
        .expect("a storage")
        .create(&file)
        .expect("creates");
    writer.write_all(&data((8 << 20) + 1)).expect("writes");
    // Killed: no destructor runs.
    std::mem::forget(writer);
    std::mem::forget(committer);

    // The file's key was written down before its upload started; its id is taken out of
    // the journal, as if the process had died before writing it.
    let text = std::fs::read_to_string(&path).expect("the journal");
    let opening = text.find(r#"{"opening":{"location":"s3://bkt/files/f"}}"#);
    let started = text.find(r#"{"upload":{"location":"s3://bkt/files/f""#);
    assert!(
        matches!((opening, started), (Some(o), Some(s)) if o < s),
        "the key is named before the upload starts:\n{text}"
    );
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with(r#"{"upload":{"location":"s3://bkt/files/f""#))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).expect("rewritten");

    // Other jobs' uploads in the same bucket, beside and above the job's keys.
    let others = [
        "files/f/g",
        "files/f2",
        "jobs/out2/part-00000",
        "jobs/output/part-00000",
        "jobs/part-00000",
    ];
    for key in others {
        server.start_multipart_upload("bkt", key);
    }
    assert_eq!(
        server.list_multipart_uploads("bkt").len(),
        others.len() + 4,
        "{:?}",
        open_upload_keys(&server, "bkt")
    );

    let report = clean_up(&path).expect("the journal is read");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert!(!report.finished);
    assert_eq!(report.aborted_uploads, 4, "{report:?}");
    assert_eq!(open_upload_keys(&server, "bkt"), others);
    let left: Vec<(String, u64)> = server.list_objects("bkt", "");
    assert!(left.is_empty(), "the manifest is deleted too: {left:?}");
    assert!(!path.exists(), "the journal is removed once all is undone");
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_the_owner_ends_what_its_dead_workers_left_open() {
    let server = S3Server::start().expect("S3 server starts");
    server.create_bucket("bkt");
    let config = s3_properties(&server);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let worker_journal = dir.path().join("worker.jsonl");
    let owner_journal = dir.path().join("owner.jsonl");
    let owner = RemoteConnector::new(config.clone(), "job_1_0001")
        .with_journal(journal_at(&owner_journal, &config));
    let worker = RemoteConnector::new(config.clone(), "job_1_0001")
        .with_journal(journal_at(&worker_journal, &config));

    let output = Location::parse("s3://bkt/jobs/out").expect("a location");
    let mut committer = owner.committer(&output).expect("a committer");
    committer.setup_job().expect("set up");
    let staging = committer.staging().expect("staged");
    let attached = worker
        .attach_committer(&output, &staging)
        .expect("attaches");
    let p = write_part(&*attached, "part-00000", 0, b"handed over");
    attached.commit_task(p).expect("task commits");
    write_part(&*attached, "part-00001", 0, b"never committed");
    // The worker dies: after starting an upload it never wrote down, too.
    std::mem::forget(attached);
    server.start_multipart_upload("bkt", "jobs/out/part-00002");

    // Its watcher aborts what was still its own, not the task it handed over.
    let report = clean_up(&worker_journal).expect("the journal is read");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.aborted_uploads, 1, "{report:?}");
    assert_eq!(
        open_upload_keys(&server, "bkt"),
        ["jobs/out/part-00000", "jobs/out/part-00002"]
    );

    // The owner's commit completes the handed-over task and aborts the rest.
    committer.commit_job().expect("job commits");
    let files: Vec<String> = server
        .list_objects("bkt", "jobs/")
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    assert_eq!(files, ["jobs/out/_SUCCESS", "jobs/out/part-00000"]);
    assert_eq!(
        server.get_object("bkt", "jobs/out/part-00000"),
        b"handed over"
    );
    assert!(open_upload_keys(&server, "bkt").is_empty());

    // Had the owner died just before noting that the job finished, its watcher would take
    // the whole output back, `_SUCCESS` included: absent, not a `_SUCCESS` over nothing.
    let text = std::fs::read_to_string(&owner_journal).expect("the journal");
    assert!(text.ends_with("\"done\"\n"), "{text}");
    std::fs::write(&owner_journal, text.trim_end_matches("\"done\"\n")).expect("rewritten");
    let report = clean_up(&owner_journal).expect("the journal is read");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let files = server.list_objects("bkt", "jobs/");
    assert!(files.is_empty(), "{files:?}");

    // The owner's abort leaves no upload of the job open either, and others' alone.
    let output = Location::parse("s3://bkt/jobs/aborted").expect("a location");
    let mut committer = owner.committer(&output).expect("a committer");
    committer.setup_job().expect("set up");
    let attached = worker
        .attach_committer(&output, &committer.staging().expect("staged"))
        .expect("attaches");
    let p = write_part(&*attached, "part-00000", 0, b"zero");
    attached.commit_task(p).expect("task commits");
    std::mem::forget(attached);
    server.start_multipart_upload("bkt", "jobs/aborted/part-00001");
    server.start_multipart_upload("bkt", "jobs/aborted2/part-00000");
    committer.abort_job().expect("job aborts");
    assert_eq!(
        open_upload_keys(&server, "bkt"),
        ["jobs/aborted2/part-00000"]
    );
    let files: Vec<String> = server
        .list_objects("bkt", "jobs/")
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains("aborted"))
        .collect();
    assert!(files.is_empty(), "{files:?}");
}

/// A request a stand-in server received.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    /// The path and query, as sent.
    target: String,
    /// The headers, names in lower case.
    headers: Vec<(String, String)>,
}

/// A stand-in HTTP server on 127.0.0.1 answering each request with `answer(method, target)`
/// (status and body) and keeping what it received; its endpoint.
fn stand_in_server(
    answer: fn(&str, &str) -> (u16, String),
) -> (String, Arc<std::sync::Mutex<Vec<Received>>>) {
    use std::io::BufRead;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let endpoint = format!("http://{}", listener.local_addr().expect("an address"));
    let received = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("a stream"));
                let mut stream = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut words = line.split_whitespace();
                    let method = words.next().unwrap_or_default().to_string();
                    let target = words.next().unwrap_or_default().to_string();
                    let mut headers = Vec::new();
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).expect("a header");
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':') {
                            headers.push((name.trim().to_lowercase(), value.trim().to_string()));
                        }
                    }
                    let length = headers
                        .iter()
                        .find(|(n, _)| n == "content-length")
                        .and_then(|(_, v)| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).expect("a body");
                    let (status, reply) = answer(&method, &target);
                    seen.lock().expect("a lock").push(Received {
                        method,
                        target,
                        headers,
                    });
                    let response = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/xml\r\n\
                         Content-Length: {}\r\n\r\n{reply}",
                        reply.len()
                    );
                    if stream.write_all(response.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (endpoint, received)
}

/// `text` with its `%XX` escapes decoded.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_open_uploads_are_listed_page_by_page_and_signed_as_botocore_signs() {
    // Two pages, as S3 pages a listing (moto never does): the second asked for from where
    // the first says it ends. Aborts succeed.
    fn answer(method: &str, target: &str) -> (u16, String) {
        let upload = |key: &str, id: &str| {
            format!("<Upload><Key>{key}</Key><UploadId>{id}</UploadId></Upload>")
        };
        let page = |uploads: String, next: Option<(&str, &str)>| {
            let next = next.map_or(String::new(), |(key, id)| {
                format!("<NextKeyMarker>{key}</NextKeyMarker><NextUploadIdMarker>{id}</NextUploadIdMarker>")
            });
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListMultipartUploadsResult \
                 xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>bkt</Bucket>{next}\
                 <IsTruncated>{}</IsTruncated>{uploads}</ListMultipartUploadsResult>",
                !next.is_empty()
            )
        };
        match method {
            "GET" if target.contains("key-marker=") => {
                (200, page(upload("jobs/out/b", "u3"), None))
            }
            "GET" if target.contains("uploads") => (
                200,
                page(
                    upload("jobs/out/a", "u1") + &upload("jobs/out/a", "u2"),
                    Some(("jobs/out/a", "u2")),
                ),
            ),
            "DELETE" => (204, String::new()),
            _ => (400, String::new()),
        }
    }
    let (endpoint, received) = stand_in_server(answer);
    let (key, secret, region) = (
        "AKIDEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "eu-central-1",
    );
    let config = StoreConfig::from_parts(
        [
            ("fs.s3a.endpoint", endpoint.as_str()),
            ("fs.s3a.access.key", key),
            ("fs.s3a.secret.key", secret),
            ("fs.s3a.endpoint.region", region),
            ("sluice.store.timeout", "10"),
        ],
        [],
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("journal.jsonl");
    journal_at(&path, &config)
        .record(&JournalEntry::Output {
            location: "s3://bkt/jobs/out".to_string(),
        })
        .expect("recorded");

    let report = clean_up(&path).expect("the journal is read");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.aborted_uploads, 3);

    let received = received.lock().expect("a lock").clone();
    let mut aborted: Vec<&str> = received
        .iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.target.as_str())
        .collect();
    aborted.sort_unstable();
    assert_eq!(
        aborted,
        [
            "/bkt/jobs/out/a?uploadId=u1",
            "/bkt/jobs/out/a?uploadId=u2",
            "/bkt/jobs/out/b?uploadId=u3"
        ]
    );
    let listings: Vec<&Received> = received.iter().filter(|r| r.method == "GET").collect();
    assert_eq!(listings.len(), 2, "{received:?}");
    let query = |r: &Received, name: &str| -> Option<String> {
        let (path, query) = r.target.split_once('?')?;
        assert_eq!(path, "/bkt", "{r:?}");
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == name).then(|| percent_decoded(v))
        })
    };
    for listing in &listings {
        assert_eq!(
            query(listing, "uploads").as_deref(),
            Some(""),
            "{listing:?}"
        );
        assert_eq!(query(listing, "prefix").as_deref(), Some("jobs/out/"));
    }
    assert_eq!(query(listings[0], "key-marker"), None);
    assert_eq!(
        query(listings[1], "key-marker").as_deref(),
        Some("jobs/out/a")
    );
    assert_eq!(
        query(listings[1], "upload-id-marker").as_deref(),
        Some("u2")
    );
    // Each listing carries the signature botocore computes for that very request.
    for listing in listings {
        let header = |name: &str| {
            listing
                .headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no {name} header: {listing:?}"))
        };
        let authorization = header("authorization");
        let field = |name: &str| {
            authorization
                .split([' ', ','])
                .find_map(|part| part.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in {authorization}"))
                .to_string()
        };
        let signed: Vec<(String, String)> = field("SignedHeaders=")
            .split(';')
            .map(|name| (name.to_string(), header(name)))
            .collect();
        assert!(
            field("Credential=").contains(&format!("/{region}/s3/aws4_request")),
            "{authorization}"
        );
        let expected = botocore_signature(
            "GET",
            &format!("{endpoint}{}", listing.target),
            &signed,
            key,
            secret,
            region,
        );
        assert_eq!(field("Signature="), expected, "{listing:?}");
    }
}
