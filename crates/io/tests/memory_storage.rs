//! A store that is not the local file system: a map of names to bytes behind `Storage`, under
//! `s3://mem/...` locations. Discovery, split planning and the readers work on it through the
//! trait alone, which is what an HDFS or S3 storage will need.

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Read, Write};
use std::num::NonZeroU64;
use std::sync::{Arc, Mutex};

use sluice_io::{
    discover, plan_input_splits, plan_line_splits, plan_line_splits_in, CachePolicy, Compression,
    FileStatus, FixedRecordReader, InputFile, IoError, LineReader, Location, ObjectWriter, Storage,
    StorageWriter,
};

type Files = Arc<Mutex<HashMap<String, Arc<Vec<u8>>>>>;

/// Files by their location's text; directories are the prefixes of those names.
#[derive(Debug, Default, Clone)]
struct MemoryStorage {
    files: Files,
}

impl MemoryStorage {
    fn key(location: &Location) -> Result<String, IoError> {
        if location.scheme_name() != "s3" || location.authority() != Some("mem") {
            return Err(IoError::UnsupportedScheme {
                location: location.to_string(),
                scheme: location.scheme_name().to_string(),
                reason: "the memory store holds s3://mem/ only".to_string(),
            });
        }
        Ok(location.to_string())
    }

    fn missing(location: &Location) -> IoError {
        IoError::Read {
            path: location.error_path(),
            source: io::Error::from(io::ErrorKind::NotFound),
        }
    }

    /// The prefix of the names below directory `key`.
    fn prefix(key: &str) -> String {
        format!("{}/", key.trim_end_matches('/'))
    }
}

/// Bytes `at..end` of a file, at most 1000 a read, so that reads end at awkward places.
struct Trickle {
    data: Arc<Vec<u8>>,
    at: usize,
    end: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(1000).min(self.end - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Collects the bytes; the file appears only when finished.
struct MemoryWriter {
    key: String,
    data: Vec<u8>,
    files: Files,
}

impl Write for MemoryWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.data.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectWriter for MemoryWriter {
    fn finish(self: Box<Self>) -> io::Result<u64> {
        let len = self.data.len() as u64;
        self.files
            .lock()
            .expect("lock")
            .insert(self.key, Arc::new(self.data));
        Ok(len)
    }
}

impl Storage for MemoryStorage {
    fn status(&self, location: &Location) -> Result<Option<FileStatus>, IoError> {
        let key = MemoryStorage::key(location)?;
        let files = self.files.lock().expect("lock");
        if let Some(data) = files.get(&key) {
            return Ok(Some(FileStatus::file(location.clone(), data.len() as u64)));
        }
        let prefix = MemoryStorage::prefix(&key);
        Ok(files
            .keys()
            .any(|name| name.starts_with(&prefix))
            .then(|| FileStatus::directory(location.clone())))
    }

    fn list(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        let prefix = MemoryStorage::prefix(&MemoryStorage::key(dir)?);
        let files = self.files.lock().expect("lock");
        let mut children = BTreeSet::new();
        for (name, data) in files.iter() {
            if let Some(rest) = name.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    Some((child, _)) => children.insert((child.to_string(), None)),
                    None => children.insert((rest.to_string(), Some(data.len() as u64))),
                };
            }
        }
        if children.is_empty() {
            return Err(MemoryStorage::missing(dir));
        }
        Ok(children
            .into_iter()
            .map(|(name, len)| match len {
                Some(len) => FileStatus::file(dir.join(&name), len),
                None => FileStatus::directory(dir.join(&name)),
            })
            .collect())
    }

    fn open_range(
        &self,
        location: &Location,
        start: u64,
        len: u64,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        let key = MemoryStorage::key(location)?;
        let files = self.files.lock().expect("lock");
        let data = files
            .get(&key)
            .ok_or_else(|| MemoryStorage::missing(location))?;
        let from = usize::try_from(start).unwrap_or(usize::MAX).min(data.len());
        let to = usize::try_from(start.saturating_add(len))
            .unwrap_or(usize::MAX)
            .min(data.len());
        Ok(Box::new(Trickle {
            data: Arc::clone(data),
            at: from,
            end: to.max(from),
        }))
    }

    fn create_with(&self, location: &Location, _buffer: usize) -> Result<StorageWriter, IoError> {
        Ok(StorageWriter::new(Box::new(MemoryWriter {
            key: MemoryStorage::key(location)?,
            data: Vec::new(),
            files: Arc::clone(&self.files),
        })))
    }

    fn delete(&self, location: &Location) -> Result<bool, IoError> {
        let key = MemoryStorage::key(location)?;
        Ok(self.files.lock().expect("lock").remove(&key).is_some())
    }
}

fn at(text: &str) -> Location {
    Location::parse(text).expect("location")
}

fn put(storage: &dyn Storage, text: &str, data: &[u8]) {
    let mut writer = storage.create(&at(text)).expect("create");
    writer.write_all(data).expect("write");
    assert_eq!(writer.finish().expect("finish"), data.len() as u64);
}

/// Lines written with every terminator, an empty line now and then, and a last line without
/// a terminator.
fn sample(seed: u32) -> Vec<u8> {
    let mut data = Vec::new();
    for i in 0..3000u32 {
        let line = format!("{seed} line {i} {}", "ab".repeat((i * 7 % 61) as usize));
        data.extend_from_slice(line.as_bytes());
        data.extend_from_slice(match i % 5 {
            0 => &b"\n"[..],
            1 => b"\r\n",
            2 => b"\r",
            3 => b"\n\r\n",
            _ => b"\r\r",
        });
    }
    data.extend_from_slice(b"the end");
    data
}

/// The lines of `data` and their offsets, split at the terminators one byte at a time,
/// independently of the reader under test.
fn reference_lines(data: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut lines = Vec::new();
    let (mut begin, mut i) = (0, 0);
    while i < data.len() {
        let terminator = match (data[i], data.get(i + 1)) {
            (b'\r', Some(b'\n')) => 2,
            (b'\r' | b'\n', _) => 1,
            _ => 0,
        };
        if terminator == 0 {
            i += 1;
        } else {
            lines.push((begin as u64, data[begin..i].to_vec()));
            i += terminator;
            begin = i;
        }
    }
    if begin < data.len() {
        lines.push((begin as u64, data[begin..].to_vec()));
    }
    lines
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), Default::default());
    encoder.write_all(data).expect("compress");
    encoder.finish().expect("compress")
}

/// The store of the tests: part files, hidden files, a subdirectory, a neighbour.
fn store() -> MemoryStorage {
    let storage = MemoryStorage::default();
    put(&storage, "s3://mem/in/part-0", &sample(0));
    put(&storage, "s3://mem/in/part-1.gz", &gzip(&sample(1)));
    put(&storage, "s3://mem/in/sub/part-2", &sample(2));
    put(&storage, "s3://mem/in/_SUCCESS", b"");
    put(&storage, "s3://mem/in/.part-0.crc", b"crc");
    put(&storage, "s3://mem/in/_logs/history", b"hidden");
    put(&storage, "s3://mem/input-elsewhere/x", b"not in");
    storage
}

fn shown(inputs: &[sluice_io::StoredInput]) -> Vec<String> {
    inputs.iter().map(|f| f.location().to_string()).collect()
}

#[test]
fn discovery_lists_visible_files_and_expands_globs() {
    let storage: Arc<dyn Storage> = Arc::new(store());
    let found = discover(storage.as_ref(), &[at("s3://mem/in")]).unwrap();
    assert_eq!(
        shown(&found),
        [
            "s3://mem/in/part-0",
            "s3://mem/in/part-1.gz",
            "s3://mem/in/sub/part-2"
        ]
    );
    assert_eq!(found[1].compression, Compression::Gzip);
    assert_eq!(found[0].status.len, sample(0).len() as u64);

    let globbed = discover(
        storage.as_ref(),
        &[at("s3://mem/in/part-*"), at("s3://mem/in/*/part-?")],
    )
    .unwrap();
    assert_eq!(shown(&globbed), shown(&found));
    let braced = discover(
        storage.as_ref(),
        &[at(
            "s3://mem/in/{part-0,part-1.gz,sub/part-?,missing,_SUCCESS}",
        )],
    )
    .unwrap();
    assert_eq!(shown(&braced), shown(&found));
    // A named hidden file or directory is refused, as Hadoop refuses it; a glob's hidden
    // matches are left out; a glob finds what is inside a hidden directory.
    for hidden in [
        "s3://mem/in/_SUCCESS",
        "s3://mem/in/_logs",
        "s3://mem/in/_logs/",
    ] {
        match discover(storage.as_ref(), &[at(hidden)]) {
            Err(IoError::HiddenInput { path }) => {
                assert_eq!(path.to_str(), Some(hidden));
            }
            other => panic!("{hidden}: expected HiddenInput, got {other:?}"),
        }
    }
    let inside = discover(storage.as_ref(), &[at("s3://mem/in/_logs/*")]).unwrap();
    assert_eq!(shown(&inside), ["s3://mem/in/_logs/history"]);
    match discover(storage.as_ref(), &[at("s3://mem/in/_*")]) {
        Err(IoError::PatternMatchesNothing { path }) => {
            assert_eq!(path.to_str(), Some("s3://mem/in/_*"));
        }
        other => panic!("expected PatternMatchesNothing, got {other:?}"),
    }
    assert!(matches!(
        discover(storage.as_ref(), &[at("s3://mem/nothing")]),
        Err(IoError::InputNotFound { .. })
    ));
    assert!(matches!(
        discover(storage.as_ref(), &[at("s3://other/in")]),
        Err(IoError::UnsupportedScheme { .. })
    ));
}

#[test]
fn line_reader_reads_every_split_of_a_stored_file() {
    let storage: Arc<dyn Storage> = Arc::new(store());
    let inputs = discover(storage.as_ref(), &[at("s3://mem/in")]).unwrap();
    let expected: Vec<_> = [0, 1, 2].map(|seed| reference_lines(&sample(seed))).into();
    for split_size in [5, 97, 1000, 4096, 65_537, 1 << 30] {
        let splits = plan_input_splits(&inputs, split_size);
        // The compressed file is one split, the plain ones are cut.
        assert_eq!(splits.iter().filter(|s| s.file == 1).count(), 1);
        let mut lines = vec![Vec::new(); inputs.len()];
        for split in &splits {
            let mut reader = LineReader::open_in(storage.as_ref(), &inputs[split.file], split)
                .expect("open a split");
            while let Some((offset, line)) = reader.next_line().expect("a line") {
                lines[split.file].push((offset, line.to_vec()));
            }
        }
        assert!(lines == expected, "split size {split_size}");
    }
}

#[test]
fn nline_and_fixed_record_splits_work_on_a_stored_file() {
    let storage = store();
    let inputs = discover(&storage, &[at("s3://mem/in/part-0")]).unwrap();
    // The same bytes on disk give the same N-line splits.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part-0");
    std::fs::write(&path, sample(0)).unwrap();
    let local = [InputFile {
        path,
        len: sample(0).len() as u64,
        compression: Compression::None,
    }];
    for n in [1, 3, 500] {
        let n = NonZeroU64::new(n).unwrap();
        assert_eq!(
            plan_line_splits_in(&storage, &inputs, n).unwrap(),
            plan_line_splits(&local, n).unwrap()
        );
    }

    // 100-byte records, each starting with its number.
    let records: Vec<u8> = (0..500u32)
        .flat_map(|i| {
            let mut record = format!("{i:08}").into_bytes();
            record.resize(100, b'.');
            record
        })
        .collect();
    put(&storage, "s3://mem/rows", &records);
    let rows = discover(&storage, &[at("s3://mem/rows")]).unwrap();
    for split_size in [1, 99, 150, 1000, 1 << 20] {
        let mut seen = Vec::new();
        for split in plan_input_splits(&rows, split_size) {
            let mut reader =
                FixedRecordReader::open_in(&storage, &rows[0], &split, 100, CachePolicy::Keep)
                    .unwrap();
            while let Some((offset, record)) = reader.next_record().unwrap() {
                assert_eq!(record.len(), 100);
                assert_eq!(record[..8], format!("{:08}", offset / 100).into_bytes());
                seen.push(offset);
            }
        }
        let expected: Vec<u64> = (0..500).map(|i| i * 100).collect();
        assert_eq!(seen, expected, "split size {split_size}");
    }
}

#[test]
fn writers_complete_files_only_when_finished() {
    let storage = MemoryStorage::default();
    let location = at("s3://mem/out/part-00000");
    let mut writer = storage.create(&location).unwrap();
    writer.write_all(b"partial").unwrap();
    drop(writer);
    assert!(storage.status(&location).unwrap().is_none());
    put(&storage, "s3://mem/out/part-00000", b"whole\n");
    let status = storage.status(&location).unwrap().unwrap();
    assert_eq!((status.len, status.is_dir), (6, false));
    assert!(storage.status(&at("s3://mem/out")).unwrap().unwrap().is_dir);
    assert!(storage.delete(&location).unwrap());
    assert!(!storage.delete(&location).unwrap());
}
