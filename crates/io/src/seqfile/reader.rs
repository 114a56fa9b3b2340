//! Reading the records of one split of a SequenceFile, as Hadoop's `SequenceFile.Reader`
//! under `SequenceFileRecordReader` does.

use std::io::{self, BufReader, Read};
use std::path::PathBuf;

use sluice_hadoop::writable::{decode_vint_size, WritableReader};

use super::{CompressionKind, SeqHeader, MAX_DECOMPRESSED, SYNC_ESCAPE, SYNC_HASH_SIZE};
use crate::{IoError, Split, Storage, StoredInput};

/// Bytes read from the file at a time while looking for a split's first sync marker.
const SCAN_CHUNK: usize = 64 * 1024;

/// The decompressed buffers of a block and how far each has been read.
#[derive(Default)]
struct Block {
    /// Key lengths, keys, value lengths, values.
    buffers: [Vec<u8>; 4],
    /// Read positions in the four buffers.
    at: [usize; 4],
    /// Records not yet returned.
    left: u64,
    /// Where the block's sync entry starts: the offset of its records.
    offset: u64,
}

/// Reads the records of one split of a SequenceFile: each record's serialised key and value
/// (decompressed), and the file offset of the record (of its block, in a block-compressed
/// file).
///
/// Lengths read from the file are checked against what is left of it, and decompressed
/// buffers against [`MAX_DECOMPRESSED`], before anything is allocated for them. After an
/// error, every further call fails too.
pub struct SeqFileReader {
    header: SeqHeader,
    input: BufReader<Box<dyn Read + Send>>,
    path: PathBuf,
    /// Position in the file of the next byte of `input`.
    pos: u64,
    /// Where the split's first record (or block) starts.
    first: u64,
    /// A sync entry at or after this position ends the split.
    end: u64,
    file_len: u64,
    /// The split has no more records.
    done: bool,
    /// The sync entry before the next block has been read already (by the scan for the
    /// split's start).
    sync_read: bool,
    failed: bool,
    block: Block,
    /// The current record's key and value, and a compressed value.
    key: Vec<u8>,
    value: Vec<u8>,
    raw: Vec<u8>,
}

/// A record of a split: its offset in the file, its serialised key and its serialised value.
pub type SeqRecord<'a> = (u64, &'a [u8], &'a [u8]);

/// Why reading stopped: a problem at an offset, or the storage's error.
enum Stop {
    Bad(u64, String),
    Io(IoError),
}

impl From<IoError> for Stop {
    fn from(e: IoError) -> Stop {
        Stop::Io(e)
    }
}

impl SeqFileReader {
    /// Opens `split` of the SequenceFile `input` on `storage`: reads the header from the
    /// file's start, then, for a split that starts after the header, looks for the first sync
    /// entry at or after the split's first byte.
    ///
    /// # Errors
    /// The storage's errors; [`IoError::SequenceFile`] for a file that is not a SequenceFile
    /// sluice can read (bad magic, another version, an unknown codec, a truncated header).
    pub fn open_in(
        storage: &dyn Storage,
        input: &StoredInput,
        split: &Split,
    ) -> Result<SeqFileReader, IoError> {
        let location = input.location();
        let path = location.error_path();
        let file_len = input.status.len;
        let bad = |(offset, reason): (u64, String)| IoError::SequenceFile {
            path: path.clone(),
            offset,
            reason,
        };
        let mut head = BufReader::new(storage.open_range(location, 0, u64::MAX)?);
        let (header, header_len) = SeqHeader::read(&mut head, file_len).map_err(bad)?;
        let end = split.start.saturating_add(split.len);
        let mut reader = SeqFileReader {
            header,
            input: head,
            path: path.clone(),
            pos: header_len,
            first: header_len,
            end,
            file_len,
            done: false,
            sync_read: false,
            failed: false,
            block: Block::default(),
            key: Vec::new(),
            value: Vec::new(),
            raw: Vec::new(),
        };
        if split.start > header_len {
            let stream = storage.open_range(location, split.start, u64::MAX)?;
            match reader.find_sync(stream, split.start)? {
                Some(sync) => reader.first = sync,
                None => reader.done = true,
            }
        }
        // Hadoop's record reader: no record at all unless the split's first one starts in it.
        if reader.first >= end {
            reader.done = true;
        }
        Ok(reader)
    }

    /// Scans `stream`, which starts at `start` in the file, for the first sync marker that
    /// starts at least 4 bytes after `start` (so that its escape lies at or after `start`, as
    /// `SequenceFile.Reader.sync` finds it). On success the reader continues just after the
    /// marker and the escape's position is returned; `None` if no sync entry starts before
    /// the split's end (then the split holds nothing).
    fn find_sync(
        &mut self,
        mut stream: Box<dyn Read + Send>,
        start: u64,
    ) -> Result<Option<u64>, IoError> {
        let sync = self.header.sync;
        let finder = memchr::memmem::Finder::new(&sync);
        // `window` holds the file's bytes from `window_at` on.
        let mut window: Vec<u8> = Vec::new();
        let mut window_at = start;
        // Where the marker must start at the earliest.
        let min = start.saturating_add(4);
        let mut chunk = vec![0u8; SCAN_CHUNK];
        loop {
            let skip = usize::try_from(min.saturating_sub(window_at)).unwrap_or(usize::MAX);
            if let Some(i) = window
                .get(skip..)
                .and_then(|w| finder.find(w))
                .map(|i| i + skip)
            {
                let marker = window_at + i as u64;
                let escape = marker - 4;
                if escape >= self.end {
                    return Ok(None);
                }
                let rest = window.split_off(i + SYNC_HASH_SIZE);
                let chained: Box<dyn Read + Send> = Box::new(io::Cursor::new(rest).chain(stream));
                self.input = BufReader::new(chained);
                self.pos = marker + SYNC_HASH_SIZE as u64;
                self.sync_read = true;
                return Ok(Some(escape));
            }
            // Past the split's end with no marker: the split is empty.
            if window_at.saturating_add(window.len() as u64)
                > self.end.saturating_add(SYNC_HASH_SIZE as u64 + 4)
            {
                return Ok(None);
            }
            // Keep the last bytes, which may begin a marker.
            let keep = window.len().min(SYNC_HASH_SIZE - 1);
            let drop = window.len() - keep;
            window.drain(..drop);
            window_at += drop as u64;
            let n = loop {
                match stream.read(&mut chunk) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(source) => {
                        return Err(IoError::Read {
                            path: self.path.clone(),
                            source,
                        })
                    }
                }
            };
            if n == 0 {
                return Ok(None);
            }
            window.extend_from_slice(&chunk[..n]);
        }
    }

    /// The file's header.
    pub fn header(&self) -> &SeqHeader {
        &self.header
    }

    /// File bytes read past the split's first record so far (progress, "map input bytes").
    pub fn bytes_consumed(&self) -> u64 {
        self.pos.saturating_sub(self.first)
    }

    /// The next record: its offset, serialised key and serialised value; `None` at the end of
    /// the split.
    ///
    /// # Errors
    /// [`IoError::SequenceFile`] naming the offset of a malformed record, block, sync entry or
    /// compressed buffer; the storage's read errors.
    pub fn next_record(&mut self) -> Result<Option<SeqRecord<'_>>, IoError> {
        if self.failed {
            return Err(IoError::SequenceFile {
                path: self.path.clone(),
                offset: self.pos,
                reason: "an earlier read of this file failed".into(),
            });
        }
        let found = if self.header.compression == CompressionKind::Block {
            self.next_in_block()
        } else {
            self.next_plain()
        };
        match found {
            Ok(Some(offset)) => Ok(Some((offset, &self.key, &self.value))),
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(stop) => {
                self.failed = true;
                Err(match stop {
                    Stop::Io(e) => e,
                    Stop::Bad(offset, reason) => IoError::SequenceFile {
                        path: self.path.clone(),
                        offset,
                        reason,
                    },
                })
            }
        }
    }

    /// Reads `n` bytes into `buf` (replacing its contents), after checking that the file has
    /// them.
    fn read_into(&mut self, n: u64, what: &str, buf: &mut Vec<u8>) -> Result<(), Stop> {
        let left = self.file_len.saturating_sub(self.pos);
        if n > left {
            return Err(Stop::Bad(
                self.pos,
                format!("{what} of {n} bytes goes past the end of the file ({left} bytes left)"),
            ));
        }
        buf.clear();
        let got = (&mut self.input)
            .take(n)
            .read_to_end(buf)
            .map_err(|source| {
                Stop::Io(IoError::Read {
                    path: self.path.clone(),
                    source,
                })
            })?;
        if (got as u64) < n {
            return Err(Stop::Bad(
                self.pos + got as u64,
                format!("the file ends inside {what}"),
            ));
        }
        self.pos += n;
        Ok(())
    }

    fn read_array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Stop> {
        let mut buf = std::mem::take(&mut self.raw);
        let read = self.read_into(N as u64, what, &mut buf);
        let mut out = [0u8; N];
        if read.is_ok() {
            out.copy_from_slice(&buf);
        }
        self.raw = buf;
        read.map(|()| out)
    }

    fn read_int(&mut self, what: &str) -> Result<i32, Stop> {
        self.read_array::<4>(what).map(i32::from_be_bytes)
    }

    /// A vint from the file.
    fn read_vint(&mut self, what: &str) -> Result<i32, Stop> {
        let at = self.pos;
        let [first] = self.read_array::<1>(what)?;
        let mut encoded = vec![first];
        let mut rest = Vec::new();
        self.read_into(decode_vint_size(first) as u64 - 1, what, &mut rest)?;
        encoded.extend_from_slice(&rest);
        WritableReader::new(&encoded)
            .read_vint()
            .map_err(|e| Stop::Bad(at, format!("{what}: {e}")))
    }

    /// Reads the 16 bytes of a sync marker (after its escape) and checks them.
    fn check_sync(&mut self) -> Result<(), Stop> {
        let at = self.pos;
        let marker = self.read_array::<SYNC_HASH_SIZE>("a sync marker")?;
        if marker != self.header.sync {
            return Err(Stop::Bad(
                at,
                "the sync marker differs from the header's (the file is corrupt)".into(),
            ));
        }
        Ok(())
    }

    /// The next record of a file that is not block-compressed; its offset.
    fn next_plain(&mut self) -> Result<Option<u64>, Stop> {
        if self.done {
            return Ok(None);
        }
        if self.sync_read {
            self.sync_read = false;
        } else {
            if self.pos >= self.file_len {
                return Ok(None);
            }
            let at = self.pos;
            let bytes = self.read_array::<4>("a record length")?;
            if bytes == SYNC_ESCAPE {
                self.check_sync()?;
                if at >= self.end {
                    return Ok(None);
                }
            } else {
                return self.record(at, i32::from_be_bytes(bytes)).map(Some);
            }
        }
        if self.pos >= self.file_len {
            return Ok(None);
        }
        let at = self.pos;
        let len = self.read_int("a record length")?;
        self.record(at, len).map(Some)
    }

    /// The rest of a record at `at` whose length field held `len`.
    fn record(&mut self, at: u64, len: i32) -> Result<u64, Stop> {
        let key_len = self.read_int("a key length")?;
        let (Ok(len), Ok(key_len)) = (u64::try_from(len), u64::try_from(key_len)) else {
            return Err(Stop::Bad(
                at,
                format!("negative record ({len}) or key ({key_len}) length"),
            ));
        };
        if key_len > len {
            return Err(Stop::Bad(
                at,
                format!("key length {key_len} exceeds the record length {len}"),
            ));
        }
        let mut key = std::mem::take(&mut self.key);
        let read = self.read_into(key_len, "a key", &mut key);
        self.key = key;
        read?;
        let value_at = self.pos;
        let mut raw = std::mem::take(&mut self.raw);
        let read = self.read_into(len - key_len, "a value", &mut raw);
        let result = read.and_then(|()| {
            if self.header.compression == CompressionKind::Record {
                let codec = self.header.codec.unwrap_or(super::SeqCodec::Default);
                codec
                    .decompress(&raw, MAX_DECOMPRESSED, &mut self.value)
                    .map_err(|e| {
                        Stop::Bad(
                            value_at,
                            format!("cannot decompress a {} value: {e}", codec.name()),
                        )
                    })
            } else {
                std::mem::swap(&mut self.value, &mut raw);
                Ok(())
            }
        });
        self.raw = raw;
        result.map(|()| at)
    }

    /// The next record of a block-compressed file; its block's offset.
    fn next_in_block(&mut self) -> Result<Option<u64>, Stop> {
        while self.block.left == 0 {
            if self.done || !self.read_block()? {
                return Ok(None);
            }
        }
        self.block.left -= 1;
        let offset = self.block.offset;
        let key_len = self.block_len(0, "a key length")?;
        let mut key = std::mem::take(&mut self.key);
        let copied = self.block_slice(1, key_len, "a key", &mut key);
        self.key = key;
        copied?;
        let value_len = self.block_len(2, "a value length")?;
        let mut value = std::mem::take(&mut self.value);
        let copied = self.block_slice(3, value_len, "a value", &mut value);
        self.value = value;
        copied?;
        Ok(Some(offset))
    }

    /// The next vint length from lengths buffer `b`.
    fn block_len(&mut self, b: usize, what: &str) -> Result<usize, Stop> {
        let buf = &self.block.buffers[b];
        let at = self.block.at[b];
        let mut r = WritableReader::new(buf.get(at..).unwrap_or_default());
        let len = r
            .read_vint()
            .map_err(|e| Stop::Bad(self.block.offset, format!("in a block, {what}: {e}")))?;
        self.block.at[b] += r.position();
        usize::try_from(len).map_err(|_| {
            Stop::Bad(
                self.block.offset,
                format!("in a block, {what} is negative ({len})"),
            )
        })
    }

    /// Copies the next `len` bytes of buffer `b` into `out` (replacing its contents).
    fn block_slice(
        &mut self,
        b: usize,
        len: usize,
        what: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), Stop> {
        let at = self.block.at[b];
        let Some(bytes) = self.block.buffers[b].get(at..at.saturating_add(len)) else {
            return Err(Stop::Bad(
                self.block.offset,
                format!("in a block, {what} of {len} bytes goes past its buffer"),
            ));
        };
        out.clear();
        out.extend_from_slice(bytes);
        self.block.at[b] += len;
        Ok(())
    }

    /// Reads the next block; false at the end of the split or the file.
    fn read_block(&mut self) -> Result<bool, Stop> {
        let at;
        if self.sync_read {
            self.sync_read = false;
            at = self.pos.saturating_sub(super::SYNC_SIZE);
        } else {
            if self.pos >= self.file_len {
                return Ok(false);
            }
            at = self.pos;
            let escape = self.read_array::<4>("a sync entry")?;
            if escape != SYNC_ESCAPE {
                return Err(Stop::Bad(
                    at,
                    "a block does not start with a sync entry".into(),
                ));
            }
            self.check_sync()?;
            if at >= self.end {
                return Ok(false);
            }
        }
        let count_at = self.pos;
        let count = self.read_vint("a block's record count")?;
        let count = u64::try_from(count)
            .map_err(|_| Stop::Bad(count_at, format!("negative record count {count}")))?;
        let codec = self.header.codec.unwrap_or(super::SeqCodec::Default);
        let mut compressed = Vec::new();
        for b in 0..4 {
            let len_at = self.pos;
            let len = self.read_vint("a compressed buffer length")?;
            let len = u64::try_from(len)
                .map_err(|_| Stop::Bad(len_at, format!("negative buffer length {len}")))?;
            self.read_into(len, "a compressed buffer", &mut compressed)?;
            let mut out = std::mem::take(&mut self.block.buffers[b]);
            let decoded = codec.decompress(&compressed, MAX_DECOMPRESSED, &mut out);
            self.block.buffers[b] = out;
            decoded.map_err(|e| {
                Stop::Bad(
                    len_at,
                    format!("cannot decompress a {} buffer: {e}", codec.name()),
                )
            })?;
        }
        self.block.at = [0; 4];
        self.block.left = count;
        self.block.offset = at;
        Ok(true)
    }
}
