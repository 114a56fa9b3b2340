//! The local file system through the `Storage` trait: listings, globs, ranged reads, new
//! files, and the readers and planners on top agreeing with the path-based entry points.

use std::fs;
use std::io::{Read, Write};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_io::{
    delete_files_by_listing, discover, discover_inputs, discover_with, glob_by_listing,
    plan_input_splits, plan_line_splits, plan_line_splits_in, plan_splits, walk_by_listing,
    CachePolicy, CompressedWriter, FixedRecordReader, InputFile, IoError, LineReader, LocalStorage,
    Location, NestedDirectories, OutputCodec, Storage, StoredInput,
};

/// A tree with visible and hidden entries at several depths.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("in");
    for (name, contents) in [
        ("b.txt", "bb\n"),
        ("a.txt", "a\n"),
        ("_SUCCESS", ""),
        (".a.txt.crc", "crc"),
        (".hidden", "hidden"),
        ("sub/c.gz", "not really gzip"),
        ("sub/deeper/d.txt", "dddd\n"),
        ("sub/deeper/_x", "hidden"),
        ("sub/_tmp/inner.txt", "hidden"),
        ("sub/.git/inner.txt", "hidden"),
        ("_logs/history.txt", "hidden"),
        ("other/e.txt", "e\n"),
        ("other/_f.txt", "hidden"),
    ] {
        let path = root.join(name);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, contents).expect("write");
    }
    dir
}

fn storage() -> Arc<dyn Storage> {
    Arc::new(LocalStorage::new())
}

fn names(statuses: &[sluice_io::FileStatus], root: &Path) -> Vec<String> {
    let mut names: Vec<String> = statuses
        .iter()
        .map(|s| {
            let path = s.location.as_local_path().expect("local");
            path.strip_prefix(root)
                .expect("below the root")
                .display()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn listing_shows_hidden_names_but_not_checksum_files_and_walking_skips_them() {
    let dir = tree();
    let root = dir.path().join("in");
    let storage = storage();
    let top = Location::from_path(&root);

    let listed = storage.list(&top).unwrap();
    assert_eq!(
        names(&listed, &root),
        [".hidden", "_SUCCESS", "_logs", "a.txt", "b.txt", "other", "sub"]
    );
    let a = listed
        .iter()
        .find(|s| s.location.file_name() == Some("a.txt".as_ref()))
        .unwrap();
    assert_eq!((a.len, a.is_dir), (2, false));
    assert!(a.modified.is_some());
    assert!(listed.iter().any(|s| s.is_dir && s.len == 0));

    let visible = [
        "a.txt",
        "b.txt",
        "other/e.txt",
        "sub/c.gz",
        "sub/deeper/d.txt",
    ];
    assert_eq!(names(&storage.walk_visible(&top).unwrap(), &root), visible);
    // The default walk, made of listings, agrees with the local one.
    assert_eq!(
        names(&walk_by_listing(storage.as_ref(), &top).unwrap(), &root),
        visible
    );

    let status = storage.status(&top.join("b.txt")).unwrap().unwrap();
    assert_eq!(status.len, 3);
    assert!(storage.status(&top.join("missing")).unwrap().is_none());
    assert!(matches!(
        storage.list(&top.join("missing")),
        Err(IoError::Read { .. })
    ));
    assert!(matches!(
        storage.list(&top.join("a.txt")),
        Err(IoError::Read { .. })
    ));
}

#[test]
fn globs_match_the_same_by_glob_crate_and_by_listing() {
    let dir = tree();
    let root = dir.path().join("in");
    let storage = storage();
    let patterns = [
        ("*.txt", vec!["a.txt", "b.txt"]),
        ("*", vec!["a.txt", "b.txt", "other", "sub"]),
        // Hadoop's filter looks at a match's own name only.
        ("*/*.txt", vec!["_logs/history.txt", "other/e.txt"]),
        ("sub/*/d.txt", vec!["sub/deeper/d.txt"]),
        ("s?b/deeper/[a-d].txt", vec!["sub/deeper/d.txt"]),
        (
            "sub/*/*",
            vec![
                "sub/.git/inner.txt",
                "sub/_tmp/inner.txt",
                "sub/deeper/d.txt",
            ],
        ),
        ("nothing*", vec![]),
        ("missing/*", vec![]),
        ("a.txt/*", vec![]),
    ];
    for (pattern, expected) in patterns {
        let location = Location::from_path(root.join(pattern));
        let fast = storage.glob_visible(&location).unwrap();
        let listed = glob_by_listing(storage.as_ref(), &location).unwrap();
        assert_eq!(names(&fast, &root), expected, "{pattern}");
        assert_eq!(names(&listed, &root), expected, "{pattern} by listing");
    }
    // Hidden entries match inside a pattern, but a hidden match is left out.
    let location = Location::from_path(root.join("sub/*/inner.txt"));
    assert_eq!(
        names(&storage.glob_visible(&location).unwrap(), &root),
        ["sub/.git/inner.txt", "sub/_tmp/inner.txt"]
    );
    assert_eq!(
        names(
            &glob_by_listing(storage.as_ref(), &location).unwrap(),
            &root
        ),
        ["sub/.git/inner.txt", "sub/_tmp/inner.txt"]
    );
    let bad = Location::from_path(root.join("[unclosed"));
    assert!(matches!(
        storage.glob_visible(&bad),
        Err(IoError::BadPattern { .. })
    ));
    assert!(matches!(
        glob_by_listing(storage.as_ref(), &bad),
        Err(IoError::BadPattern { .. })
    ));
}

#[test]
fn discovery_through_the_trait_is_discover_inputs() {
    let dir = tree();
    let root = dir.path().join("in");
    let args: Vec<Vec<PathBuf>> = vec![
        vec![root.clone()],
        vec![root.join("*.txt"), root.join("sub")],
        vec![root.join("sub/c.gz"), root.join("a.txt"), root.clone()],
        vec![root.join("*/*")],
    ];
    for args in args {
        let old = discover_inputs(&args).unwrap();
        let locations: Vec<Location> = args.iter().cloned().map(Location::from_path).collect();
        let new = discover(storage().as_ref(), &locations).unwrap();
        let converted: Vec<InputFile> = new.iter().filter_map(|f| f.to_input_file()).collect();
        assert_eq!(converted, old, "{args:?}");
    }
    let missing = Location::from_path(root.join("nope"));
    match discover(storage().as_ref(), &[missing]) {
        Err(IoError::InputNotFound { path }) => assert_eq!(path, root.join("nope")),
        other => panic!("expected InputNotFound, got {other:?}"),
    }
    let only_hidden = Location::from_path(root.join("_*"));
    assert!(matches!(
        discover(storage().as_ref(), &[only_hidden]),
        Err(IoError::PatternMatchesNothing { .. })
    ));
}

/// With nested directories skipped, an input directory (named, or matched by a glob) gives
/// the visible files directly in it; a file named is kept.
#[test]
fn discovery_can_leave_out_nested_directories() {
    let dir = tree();
    let root = dir.path().join("in");
    let found = |inputs: &[Location]| {
        let files = discover_with(storage().as_ref(), inputs, NestedDirectories::Skip).unwrap();
        let statuses: Vec<_> = files.into_iter().map(|f| f.status).collect();
        names(&statuses, &root)
    };
    assert_eq!(found(&[Location::from_path(&root)]), ["a.txt", "b.txt"]);
    assert_eq!(
        found(&[Location::from_path(root.join("s*"))]),
        ["sub/c.gz"],
        "a directory matched by a glob"
    );
    assert_eq!(
        found(&[Location::from_path(root.join("sub/deeper/d.txt"))]),
        ["sub/deeper/d.txt"]
    );
}

#[test]
fn file_uris_are_discovered_as_file_uris() {
    let dir = tree();
    let root = dir.path().join("in/other");
    let uri = format!("file://{}", root.display());
    let found = discover(storage().as_ref(), &[Location::parse(&uri).unwrap()]).unwrap();
    let shown: Vec<String> = found.iter().map(|f| f.location().to_string()).collect();
    assert_eq!(shown, [format!("{uri}/e.txt")]);
    assert_eq!(found[0].status.len, 2);
}

/// Bytes that are not a repeating pattern at any short period.
fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn read_all(mut reader: Box<dyn Read + Send>) -> Vec<u8> {
    let mut out = Vec::new();
    reader.read_to_end(&mut out).expect("read");
    out
}

#[test]
fn ranged_reads_at_odd_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noise");
    let data = noise(3_000_017);
    fs::write(&path, &data).unwrap();
    let location = Location::from_path(&path);
    let storage = storage();
    let n = data.len() as u64;
    for (start, len) in [
        (0, 0),
        (0, 1),
        (1, 1),
        (7, 4093),
        (4095, 1_000_003),
        (1 << 20, (1 << 20) + 1),
        (n - 3, 10),
        (n, 5),
        (n + 10, 5),
        (13, u64::MAX),
        (0, u64::MAX),
        (n - 1, u64::MAX - 7),
    ] {
        let from = usize::try_from(start.min(n)).unwrap();
        let to = usize::try_from(start.saturating_add(len).min(n)).unwrap();
        let expected = &data[from..to.max(from)];
        for cache in [CachePolicy::Keep, CachePolicy::DropBehind] {
            let reader = storage
                .open_range_with(&location, start, len, cache)
                .unwrap();
            assert!(read_all(reader) == expected, "{start}+{len} with {cache:?}");
        }
        assert!(read_all(storage.open_range(&location, start, len).unwrap()) == expected);
    }
    match storage.open_range(&Location::from_path(dir.path().join("nope")), 0, 1) {
        Err(IoError::Read { path, .. }) => assert_eq!(path, dir.path().join("nope")),
        other => panic!("expected a read error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn created_files_read_back_and_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage();
    let location = Location::from_path(dir.path().join("new/deeper/file"));
    let data = noise(1_234_567);
    let mut writer = storage.create_with(&location, 64 * 1024).unwrap();
    for piece in data.chunks(1000) {
        writer.write_all(piece).unwrap();
    }
    assert_eq!(writer.finish().unwrap(), data.len() as u64);
    assert!(read_all(storage.open_range(&location, 0, u64::MAX).unwrap()) == data);
    assert!(matches!(
        storage.create(&location),
        Err(IoError::Write { .. })
    ));
    assert!(storage.delete(&location).unwrap());
    assert!(!storage.delete(&location).unwrap());
    assert!(storage.status(&location).unwrap().is_none());

    // A compressor composes over the writer, as the part files' does.
    let gz = Location::from_path(dir.path().join("x.gz"));
    let mut writer =
        CompressedWriter::new(OutputCodec::Gzip, storage.create(&gz).unwrap()).unwrap();
    writer.write_all(b"one\ntwo\n").unwrap();
    writer.finish().unwrap().finish().unwrap();
    let input = StoredInput::new(storage.status(&gz).unwrap().unwrap());
    let split = plan_input_splits(std::slice::from_ref(&input), 1)[0];
    let mut reader = LineReader::open_in(storage.as_ref(), &input, &split).unwrap();
    let mut lines = Vec::new();
    while let Some((_, line)) = reader.next_line().unwrap() {
        lines.push(line.to_vec());
    }
    assert_eq!(lines, [b"one".to_vec(), b"two".to_vec()]);
}

/// Lines of a sample with every terminator, long and short lines.
fn sample() -> Vec<u8> {
    let mut data = Vec::new();
    for i in 0..20_000u32 {
        let terminator: &[u8] = match i % 4 {
            0 => b"\n",
            1 => b"\r\n",
            2 => b"\r",
            _ => b"\n\n",
        };
        let word = format!("line {i} {}", "x".repeat((i % 97) as usize));
        data.extend_from_slice(word.as_bytes());
        data.extend_from_slice(terminator);
    }
    data.extend_from_slice(b"no terminator at the end");
    data
}

fn drain(mut reader: LineReader) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some((offset, line)) = reader.next_line().expect("line") {
        out.push((offset, line.to_vec()));
    }
    out
}

#[test]
fn readers_and_planners_through_the_trait_agree_with_the_path_entry_points() {
    // A visible name: the directory itself is the input, and `.tmp…` would be hidden.
    let dir = tempfile::Builder::new().prefix("in-").tempdir().unwrap();
    let plain = dir.path().join("sample.txt");
    fs::write(&plain, sample()).unwrap();
    let gz = dir.path().join("sample.gz");
    let mut encoder =
        flate2::write::GzEncoder::new(fs::File::create(&gz).unwrap(), Default::default());
    encoder.write_all(&sample()).unwrap();
    encoder.finish().unwrap();

    let files = discover_inputs(&[dir.path().to_path_buf()]).unwrap();
    let storage = storage();
    let inputs = discover(storage.as_ref(), &[Location::from_path(dir.path())]).unwrap();
    assert_eq!(inputs.len(), 2);
    for split_size in [1000, 4097, 65_536, 1 << 30] {
        let splits = plan_splits(&files, split_size);
        assert_eq!(plan_input_splits(&inputs, split_size), splits);
        for split in &splits {
            let old = drain(LineReader::open(&files[split.file], split).unwrap());
            let new =
                drain(LineReader::open_in(storage.as_ref(), &inputs[split.file], split).unwrap());
            assert_eq!(old, new, "{split:?}");
        }
    }
    let plain_only = [files[1].clone()];
    let plain_input = [StoredInput::from(files[1].clone())];
    assert_eq!(plain_only[0].path, plain);
    for n in [1, 7, 1000] {
        let n = NonZeroU64::new(n).unwrap();
        assert_eq!(
            plan_line_splits_in(storage.as_ref(), &plain_input, n).unwrap(),
            plan_line_splits(&plain_only, n).unwrap()
        );
    }
    assert!(matches!(
        plan_line_splits_in(storage.as_ref(), &inputs, NonZeroU64::MIN),
        Err(IoError::Unsplittable { .. })
    ));

    // Fixed-length records: every split's records, kept or dropped from the cache.
    for split_size in [99, 1000, 1 << 20] {
        for split in plan_splits(&plain_only, split_size) {
            let mut old = FixedRecordReader::open(&plain_only[0], &split, 100).unwrap();
            for cache in [CachePolicy::Keep, CachePolicy::DropBehind] {
                let mut new = FixedRecordReader::open_in(
                    storage.as_ref(),
                    &plain_input[0],
                    &split,
                    100,
                    cache,
                )
                .unwrap();
                let mut old_records = Vec::new();
                let mut new_records = Vec::new();
                let old_result = loop {
                    match old.next_record() {
                        Ok(Some((offset, record))) => old_records.push((offset, record.to_vec())),
                        Ok(None) => break None,
                        Err(e) => break Some(e.to_string()),
                    }
                };
                let new_result = loop {
                    match new.next_record() {
                        Ok(Some((offset, record))) => new_records.push((offset, record.to_vec())),
                        Ok(None) => break None,
                        Err(e) => break Some(e.to_string()),
                    }
                };
                assert_eq!(old_records, new_records, "{split:?}");
                assert_eq!(old_result, new_result, "{split:?}");
                old = FixedRecordReader::open(&plain_only[0], &split, 100).unwrap();
            }
        }
    }
}

/// A job's committer comes from the same place as its storage: local outputs get the rename
/// committer, an output on a store that is not built in is refused with the reason.
#[test]
fn committer_for_gives_the_rename_committer_locally_and_refuses_other_stores() {
    let dir = tempfile::tempdir().unwrap();
    let local = sluice_io::Location::from_path(dir.path().join("out"));
    let committer = sluice_io::committer_for(&local).unwrap();
    assert_eq!(committer.output(), &local);
    let remote = sluice_io::Location::parse("hdfs://nn:8020/out").unwrap();
    match sluice_io::committer_for(&remote) {
        Err(sluice_io::IoError::UnsupportedScheme { scheme, .. }) => assert_eq!(scheme, "hdfs"),
        Err(other) => panic!("expected an unsupported scheme, got {other}"),
        Ok(_) => panic!("an hdfs output was accepted"),
    }
}

/// `make_dirs` makes a directory and its parents; `delete_tree` removes a file, or a
/// directory with everything below it, hidden entries included, and says whether anything
/// was there; a link to a directory goes, not what it names. Made of listings, deletion
/// removes every file and leaves the directories.
#[test]
fn directories_are_made_and_trees_deleted() {
    let dir = tree();
    let root = dir.path().join("in");
    let local = LocalStorage::new();
    let made = Location::from_path(dir.path().join("x/y/z"));
    local.make_dirs(&made).expect("make_dirs");
    assert!(dir.path().join("x/y/z").is_dir());
    local.make_dirs(&made).expect("make_dirs again");
    let target = dir.path().join("target");
    fs::create_dir(&target).expect("target");
    fs::write(target.join("kept.txt"), "kept").expect("write");
    std::os::unix::fs::symlink(&target, root.join("link")).expect("link");

    let by_listing = tree();
    let listed = by_listing.path().join("in");
    assert!(delete_files_by_listing(&local, &Location::from_path(&listed)).expect("delete"));
    let left: Vec<_> = walkdir(&listed)
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    assert!(left.is_empty(), "{left:?}");

    assert!(local
        .delete_tree(&Location::from_path(root.join("a.txt")))
        .expect("a file"));
    assert!(!root.join("a.txt").exists());
    assert!(local
        .delete_tree(&Location::from_path(&root))
        .expect("a tree"));
    assert!(!root.exists());
    assert_eq!(fs::read_to_string(target.join("kept.txt")).unwrap(), "kept");
    assert!(!local
        .delete_tree(&Location::from_path(&root))
        .expect("nothing"));
}

/// Every path below `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}

/// Hadoop's checksum files follow their files, as Hadoop's local file system keeps them: a
/// file deleted, renamed or created deletes or moves the `.NAME.crc` of its name, so that no
/// stale checksum file is left to fail Hadoop's reads of a file sluice wrote.
#[test]
fn checksum_files_follow_their_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let storage = storage();
    let at = |name: &str| Location::from_path(d.join(name));
    for name in [
        "a",
        ".a.crc",
        "b",
        ".b.crc",
        ".orphan.crc",
        "keep",
        ".keep.crc",
    ] {
        fs::write(d.join(name), name).expect("write");
    }

    // Deleted with its file, as a file or as a tree.
    assert!(storage.delete(&at("a")).expect("delete"));
    assert!(!d.join(".a.crc").exists());
    assert!(storage.delete_tree(&at("b")).expect("delete tree"));
    assert!(!d.join(".b.crc").exists());

    // A new file under a name with a checksum file left beside it drops that file; a create
    // refused (the file exists) keeps everything.
    storage
        .create(&at("orphan"))
        .expect("create")
        .finish()
        .expect("finish");
    assert!(!d.join(".orphan.crc").exists());
    assert!(storage.create(&at("keep")).is_err());
    assert!(d.join(".keep.crc").exists());

    // A file renamed over one with a checksum file, having none itself, drops it; renamed
    // with one, moves it along.
    fs::write(d.join("new"), "new").expect("write");
    storage.rename(&at("new"), &at("keep")).expect("rename");
    assert!(!d.join(".keep.crc").exists());
    fs::write(d.join(".keep.crc"), "keep's").expect("write");
    storage.rename(&at("keep"), &at("moved")).expect("rename");
    assert_eq!(
        fs::read_to_string(d.join(".moved.crc")).expect("read"),
        "keep's"
    );
    assert!(!d.join(".keep.crc").exists());

    // Only files left: no checksum file without its file.
    let mut left: Vec<String> = fs::read_dir(d)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".moved.crc", "moved", "orphan"]);
}

/// A path below a file names nothing, as Hadoop's local file system says ("No such file or
/// directory", which `hadoop fs -stat` and the tools that parse it expect), not an error.
#[test]
fn a_path_below_a_file_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.txt");
    fs::write(&file, b"x").unwrap();
    let below = Location::from_path(file.join("child"));
    assert!(storage().status(&below).unwrap().is_none());
    assert!(matches!(
        discover(storage().as_ref(), &[below]),
        Err(IoError::InputNotFound { .. })
    ));
}
