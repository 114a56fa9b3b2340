//! How records cross the pipe to and from a program: Hadoop Streaming's `-io` identifiers.
//!
//! | identifier    | to the program                                   | from the program                          |
//! |---------------|--------------------------------------------------|-------------------------------------------|
//! | `text`        | `key SEP value \n` (or `value \n`)               | lines split at the N-th separator         |
//! | `rawbytes`    | 4-byte big-endian length + bytes, key then value | the same framing                          |
//! | `typedbytes`  | typed bytes values, key then value               | typed bytes values, key then value        |
//! | `keyonlytext` | `key \n`                                         | each line is a key, the value is empty    |
//!
//! Records also remember *what kind of Hadoop object* they are, because Hadoop writes a
//! `Text`, a `LongWritable` or a `BytesWritable` differently to a `rawbytes` or `typedbytes`
//! program, and prints a `BytesWritable` in the part files as hex.

use std::io::{self, BufRead, Read, Write};

use sluice_hadoop::typedbytes;

use super::ProgramError;

/// A `-io` identifier: the framing of records on a program's stdin or stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Lines with separators.
    Text,
    /// Length-prefixed byte strings.
    RawBytes,
    /// Hadoop's typed bytes.
    TypedBytes,
    /// Lines that are keys only.
    KeyOnlyText,
}

impl Framing {
    /// Parses an identifier as `-io` and the `stream.*.input`/`output` keys spell it.
    pub fn parse(name: &str) -> Option<Framing> {
        match name {
            "text" => Some(Framing::Text),
            "rawbytes" => Some(Framing::RawBytes),
            "typedbytes" => Some(Framing::TypedBytes),
            "keyonlytext" => Some(Framing::KeyOnlyText),
            _ => None,
        }
    }

    /// The kind of object a program speaking this framing produces.
    pub fn output_kind(self) -> Kind {
        match self {
            Framing::Text => Kind::Text,
            Framing::RawBytes => Kind::Bytes,
            Framing::TypedBytes => Kind::TypedBytes,
            Framing::KeyOnlyText => Kind::KeyOnly,
        }
    }
}

/// What kind of Hadoop object the bytes of a key or value stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `Text`: the bytes are the text.
    Text,
    /// `LongWritable` of a line offset, kept as decimal text (TextInputFormat's keys).
    Offset,
    /// `BytesWritable`: the bytes themselves; printed as hex.
    Bytes,
    /// `TypedBytesWritable`: the bytes are one encoded typed value.
    TypedBytes,
    /// `keyonlytext` output: a `Text` key with a null value.
    KeyOnly,
}

/// Writes records to a program in one framing.
#[derive(Debug, Clone)]
pub struct RecordWriter {
    /// The framing.
    pub framing: Framing,
    /// Between key and value in `text` framing.
    pub separator: Vec<u8>,
    /// Write only the value (TextInputFormat's map input).
    pub ignore_key: bool,
    /// What the keys are.
    pub key_kind: Kind,
    /// What the values are.
    pub value_kind: Kind,
}

impl RecordWriter {
    /// Writes one record; `scratch` is reused between calls.
    ///
    /// # Errors
    /// The pipe's write error.
    pub fn write<W: Write + ?Sized>(
        &self,
        out: &mut W,
        key: &[u8],
        value: &[u8],
        scratch: &mut Vec<u8>,
    ) -> io::Result<()> {
        match self.framing {
            Framing::Text => {
                if !self.ignore_key {
                    out.write_all(key)?;
                    out.write_all(&self.separator)?;
                }
                out.write_all(value)?;
                out.write_all(b"\n")
            }
            Framing::KeyOnlyText => {
                out.write_all(if self.ignore_key { value } else { key })?;
                out.write_all(b"\n")
            }
            Framing::RawBytes => {
                if !self.ignore_key {
                    write_raw(out, self.key_kind, key, scratch)?;
                }
                write_raw(out, self.value_kind, value, scratch)
            }
            Framing::TypedBytes => {
                if !self.ignore_key {
                    write_typed(out, self.key_kind, key, scratch)?;
                }
                write_typed(out, self.value_kind, value, scratch)
            }
        }
    }
}

/// Hadoop's `WritableUtils.writeVLong`.
fn push_vint(buf: &mut Vec<u8>, value: i64) {
    if (-112..=127).contains(&value) {
        buf.push(value as u8);
        return;
    }
    let mut len: i32 = -112;
    let mut v = value;
    if v < 0 {
        v = !v;
        len = -120;
    }
    let mut tmp = v;
    while tmp != 0 {
        tmp >>= 8;
        len -= 1;
    }
    buf.push(len as u8);
    let bytes = if len < -120 {
        -(len + 120)
    } else {
        -(len + 112)
    };
    for idx in (0..bytes).rev() {
        buf.push((v >> (idx * 8)) as u8);
    }
}

/// Writes a key or value as `rawbytes`: a 4-byte length, then the object's bytes — for a
/// `BytesWritable` its content, for other objects their Hadoop serialisation.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] for an object longer than the `i32::MAX` bytes Hadoop's
/// length (a Java int, read with `DataInput.readInt`) can say; nothing is written then.
fn write_raw<W: Write + ?Sized>(
    out: &mut W,
    kind: Kind,
    bytes: &[u8],
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    // The serialisation is `scratch` (what comes before the bytes, or all of it), then `tail`.
    scratch.clear();
    let tail = match kind {
        Kind::Bytes | Kind::TypedBytes => bytes,
        Kind::Text | Kind::KeyOnly => {
            push_vint(scratch, i64::try_from(bytes.len()).unwrap_or(i64::MAX));
            bytes
        }
        Kind::Offset => {
            scratch.extend_from_slice(&parse_offset(bytes).to_be_bytes());
            &[]
        }
    };
    let total = scratch.len().saturating_add(tail.len());
    let len = i32::try_from(total).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a rawbytes key or value of {total} bytes is too long (at most {} bytes)",
                i32::MAX
            ),
        )
    })?;
    out.write_all(&len.to_be_bytes())?;
    out.write_all(scratch)?;
    out.write_all(tail)
}

/// Writes a key or value as one typed bytes value.
fn write_typed<W: Write + ?Sized>(
    out: &mut W,
    kind: Kind,
    bytes: &[u8],
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    scratch.clear();
    match kind {
        Kind::TypedBytes => scratch.extend_from_slice(bytes),
        Kind::Bytes => typedbytes::write_bytes(scratch, bytes).map_err(too_long)?,
        Kind::Text | Kind::KeyOnly => typedbytes::write_text(scratch, bytes).map_err(too_long)?,
        Kind::Offset => typedbytes::write_long(scratch, parse_offset(bytes)),
    }
    out.write_all(scratch)
}

/// A value too long for typed bytes, as the error of the write that would have sent it.
fn too_long(e: typedbytes::TypedBytesError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e)
}

fn parse_offset(bytes: &[u8]) -> i64 {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Reads the records a program writes, in one framing.
#[derive(Debug, Clone)]
pub struct RecordReader {
    /// The framing.
    pub framing: Framing,
    /// Splits a `text` line into key and value.
    pub separator: Vec<u8>,
    /// How many separators belong to the key (at least 1).
    pub key_fields: usize,
}

/// One record read by [`RecordReader::read`]: `key` and `value` index into the line buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    key: (usize, usize),
    value: (usize, usize),
}

impl Record {
    /// The key's bytes within `buf`.
    pub fn key<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.key.0..self.key.1]
    }
    /// The value's bytes within `buf`.
    pub fn value<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.value.0..self.value.1]
    }
}

impl RecordReader {
    /// Reads the next record into `buf` (cleared first); `None` at the end of the stream.
    ///
    /// # Errors
    /// Read errors, and output that does not follow the framing (a truncated length-prefixed
    /// or typed value).
    pub fn read(
        &self,
        input: &mut dyn BufRead,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Record>, ProgramError> {
        buf.clear();
        match self.framing {
            Framing::Text | Framing::KeyOnlyText => {
                if !read_line(input, buf).map_err(ProgramError::Read)? {
                    return Ok(None);
                }
                let all = (0, buf.len());
                if self.framing == Framing::KeyOnlyText {
                    return Ok(Some(Record {
                        key: all,
                        value: (buf.len(), buf.len()),
                    }));
                }
                Ok(Some(split_key_value(buf, &self.separator, self.key_fields)))
            }
            Framing::RawBytes => {
                let Some(key_len) = read_length(input, true)? else {
                    return Ok(None);
                };
                read_exact_into(input, buf, key_len)?;
                let value_len = read_length(input, false)?.unwrap_or(0);
                read_exact_into(input, buf, value_len)?;
                Ok(Some(Record {
                    key: (0, key_len),
                    value: (key_len, key_len + value_len),
                }))
            }
            Framing::TypedBytes => {
                let bad = |e: typedbytes::TypedBytesError| ProgramError::BadOutput(e.to_string());
                match typedbytes::read_raw(&mut &mut *input, buf).map_err(bad)? {
                    typedbytes::Next::Value => {}
                    typedbytes::Next::Marker | typedbytes::Next::Eof => return Ok(None),
                }
                let key_end = buf.len();
                match typedbytes::read_raw(&mut &mut *input, buf).map_err(bad)? {
                    typedbytes::Next::Value => {}
                    _ => {
                        return Err(ProgramError::BadOutput(
                            "typed bytes output ends after a key, without its value".into(),
                        ))
                    }
                }
                Ok(Some(Record {
                    key: (0, key_end),
                    value: (key_end, buf.len()),
                }))
            }
        }
    }
}

impl RecordReader {
    /// Reads every record to the end of the stream and hands each to `f`. A text record that
    /// lies wholly in the reader's buffer is passed as slices of that buffer, without a copy;
    /// others (a line longer than the buffer, one that ends exactly at its end, the binary
    /// framings) go through `buf`.
    ///
    /// # Errors
    /// As for [`RecordReader::read`], and whatever `f` returns.
    pub fn for_each(
        &self,
        input: &mut dyn BufRead,
        buf: &mut Vec<u8>,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), sluice_api::ExecError>,
    ) -> Result<(), sluice_api::ExecError> {
        if !matches!(self.framing, Framing::Text | Framing::KeyOnlyText) {
            while let Some(record) = self.read(input, buf)? {
                f(record.key(buf), record.value(buf))?;
            }
            return Ok(());
        }
        loop {
            let available = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ProgramError::Read(e).into()),
            };
            if available.is_empty() {
                return Ok(());
            }
            let mut pos = 0;
            while let Some(at) = memchr::memchr2(b'\n', b'\r', &available[pos..]) {
                let end = pos + at;
                let cr = available[end] == b'\r';
                if cr && end + 1 == available.len() {
                    // Whether a `\n` follows is not known yet.
                    break;
                }
                self.split_line(&available[pos..end], &mut f)?;
                pos = end + 1;
                if cr && available[pos] == b'\n' {
                    pos += 1;
                }
            }
            if pos > 0 {
                input.consume(pos);
                continue;
            }
            // No whole line in the buffer: read this one through `buf`.
            match self.read(input, buf)? {
                Some(record) => f(record.key(buf), record.value(buf))?,
                None => return Ok(()),
            }
        }
    }

    fn split_line(
        &self,
        line: &[u8],
        f: &mut impl FnMut(&[u8], &[u8]) -> Result<(), sluice_api::ExecError>,
    ) -> Result<(), sluice_api::ExecError> {
        if self.framing == Framing::KeyOnlyText {
            return f(line, &[]);
        }
        let record = split_key_value(line, &self.separator, self.key_fields);
        f(record.key(line), record.value(line))
    }
}

/// Splits `line` at the `key_fields`-th occurrence of `separator`; with fewer occurrences the
/// whole line is the key and the value is empty (Hadoop's `TextOutputReader`).
pub fn split_key_value(line: &[u8], separator: &[u8], key_fields: usize) -> Record {
    let mut found = None;
    if !separator.is_empty() {
        let mut from = 0;
        // A one-byte separator (the usual tab) is found with memchr: building a substring
        // searcher for every line would cost more than the search.
        let find = |haystack: &[u8]| match separator {
            [byte] => memchr::memchr(*byte, haystack),
            _ => memchr::memmem::find(haystack, separator),
        };
        for _ in 0..key_fields.max(1) {
            match find(&line[from..]) {
                Some(at) => {
                    found = Some(from + at);
                    from += at + separator.len();
                }
                None => {
                    found = None;
                    break;
                }
            }
        }
    }
    match found {
        Some(at) => Record {
            key: (0, at),
            value: (at + separator.len(), line.len()),
        },
        None => Record {
            key: (0, line.len()),
            value: (line.len(), line.len()),
        },
    }
}

/// Reads one line into `buf` without its terminator; a line ends at `\n`, `\r\n` or a lone
/// `\r`, as Hadoop's `LineReader` reads a program's output. `false` at the end of input.
fn read_line(input: &mut dyn BufRead, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(any);
        }
        any = true;
        match memchr::memchr2(b'\n', b'\r', available) {
            Some(at) => {
                let cr = available[at] == b'\r';
                buf.extend_from_slice(&available[..at]);
                input.consume(at + 1);
                if cr {
                    // `\r\n` is one terminator.
                    let next = loop {
                        match input.fill_buf() {
                            Ok(b) => break b.first().copied(),
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => return Err(e),
                        }
                    };
                    if next == Some(b'\n') {
                        input.consume(1);
                    }
                }
                return Ok(true);
            }
            None => {
                let n = available.len();
                buf.extend_from_slice(available);
                input.consume(n);
            }
        }
    }
}

/// Reads a 4-byte big-endian length; `None` at a clean end of input if `eof_ok`.
fn read_length(input: &mut dyn BufRead, eof_ok: bool) -> Result<Option<usize>, ProgramError> {
    let mut bytes = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match input.read(&mut bytes[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ProgramError::Read(e)),
        }
    }
    if got == 0 && eof_ok {
        return Ok(None);
    }
    if got < 4 {
        return Err(ProgramError::BadOutput(
            "rawbytes output ends inside a length prefix (or a key without its value)".into(),
        ));
    }
    let len = i32::from_be_bytes(bytes);
    usize::try_from(len).map(Some).map_err(|_| {
        ProgramError::BadOutput(format!("rawbytes output has a negative length {len}"))
    })
}

fn read_exact_into(
    input: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    len: usize,
) -> Result<(), ProgramError> {
    let start = buf.len();
    let read = Read::take(&mut *input, len as u64)
        .read_to_end(buf)
        .map_err(ProgramError::Read)?;
    if read < len {
        buf.truncate(start);
        return Err(ProgramError::BadOutput(format!(
            "rawbytes output ends {} bytes into a {len}-byte record",
            read
        )));
    }
    Ok(())
}

/// Appends the text Hadoop's `TextOutputFormat` prints for an object of `kind` whose bytes are
/// `bytes`.
///
/// # Errors
/// A typed bytes value Hadoop could not print either.
pub fn render(kind: Kind, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), ProgramError> {
    match kind {
        Kind::Text | Kind::Offset | Kind::KeyOnly => out.extend_from_slice(bytes),
        Kind::Bytes => sluice_hadoop::java::bytes_writable_text(bytes, out),
        Kind::TypedBytes => {
            typedbytes::to_text(bytes, out).map_err(|e| ProgramError::BadOutput(e.to_string()))?
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(reader: &RecordReader, bytes: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut input = io::BufReader::with_capacity(3, bytes);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(r) = reader.read(&mut input, &mut buf).unwrap() {
            out.push((r.key(&buf).to_vec(), r.value(&buf).to_vec()));
        }
        out
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        list.iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn text_lines_split_at_the_nth_separator() {
        let reader = RecordReader {
            framing: Framing::Text,
            separator: b".".to_vec(),
            key_fields: 2,
        };
        assert_eq!(
            read_all(&reader, b"a.b.c.d\na.b\nab\n\n.x.y\r\nlast"),
            pairs(&[
                ("a.b", "c.d"),
                ("a.b", ""),
                ("ab", ""),
                ("", ""),
                (".x", "y"),
                ("last", "")
            ])
        );
        let tabs = RecordReader {
            framing: Framing::Text,
            separator: b"\t".to_vec(),
            key_fields: 1,
        };
        assert_eq!(
            read_all(&tabs, b"k\tv\tw\rx\r\r\n"),
            pairs(&[("k", "v\tw"), ("x", ""), ("", "")])
        );
        let multi = RecordReader {
            framing: Framing::Text,
            separator: b"::".to_vec(),
            key_fields: 1,
        };
        assert_eq!(read_all(&multi, b"a:b::c\n"), pairs(&[("a:b", "c")]));
    }

    #[test]
    fn for_each_matches_read_at_every_buffer_size() {
        let stream: &[u8] = b"a\tb\r\nc\rd\te\tf\n\n\r\rlong line without tab\r\nx\ty";
        let reader = RecordReader {
            framing: Framing::Text,
            separator: b"\t".to_vec(),
            key_fields: 1,
        };
        let want = read_all(&reader, stream);
        for capacity in 1..stream.len() + 2 {
            let mut input = io::BufReader::with_capacity(capacity, stream);
            let mut got = Vec::new();
            reader
                .for_each(&mut input, &mut Vec::new(), |k, v| {
                    got.push((k.to_vec(), v.to_vec()));
                    Ok(())
                })
                .unwrap();
            assert_eq!(got, want, "buffer of {capacity} bytes");
        }
    }

    #[test]
    fn keyonly_lines_are_keys() {
        let reader = RecordReader {
            framing: Framing::KeyOnlyText,
            separator: b"\t".to_vec(),
            key_fields: 1,
        };
        assert_eq!(
            read_all(&reader, b"a\tb\nc\n"),
            pairs(&[("a\tb", ""), ("c", "")])
        );
    }

    #[test]
    fn rawbytes_round_trip_and_truncation() {
        let writer = RecordWriter {
            framing: Framing::RawBytes,
            separator: Vec::new(),
            ignore_key: false,
            key_kind: Kind::Bytes,
            value_kind: Kind::Bytes,
        };
        let mut stream = Vec::new();
        let mut scratch = Vec::new();
        writer
            .write(&mut stream, b"key", b"\x00\n\xff", &mut scratch)
            .unwrap();
        writer.write(&mut stream, b"", b"", &mut scratch).unwrap();
        assert_eq!(&stream[..7], b"\x00\x00\x00\x03key");
        let reader = RecordReader {
            framing: Framing::RawBytes,
            separator: Vec::new(),
            key_fields: 1,
        };
        assert_eq!(
            read_all(&reader, &stream),
            vec![(b"key".to_vec(), b"\x00\n\xff".to_vec()), (vec![], vec![])]
        );
        let mut input = io::BufReader::new(&stream[..stream.len() - 3]);
        let mut buf = Vec::new();
        assert!(reader.read(&mut input, &mut buf).unwrap().is_some());
        assert!(reader.read(&mut input, &mut buf).is_err());
    }

    #[test]
    fn rawbytes_of_text_and_offsets_use_hadoop_serialisation() {
        let writer = RecordWriter {
            framing: Framing::RawBytes,
            separator: Vec::new(),
            ignore_key: false,
            key_kind: Kind::Offset,
            value_kind: Kind::Text,
        };
        let mut stream = Vec::new();
        writer
            .write(&mut stream, b"300", b"hi", &mut Vec::new())
            .unwrap();
        // LongWritable: 8 bytes big-endian; Text: vint length then bytes.
        assert_eq!(
            stream,
            b"\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x01\x2c\x00\x00\x00\x03\x02hi"
        );
    }

    /// An object longer than the Java int of a rawbytes or typed bytes length is an error
    /// before anything is written, never a length cut to its low 32 bits.
    #[test]
    fn objects_longer_than_a_java_int_are_errors_not_truncated() {
        // Zeroed pages of an allocation this large are mapped, never touched.
        let huge = vec![0u8; usize::try_from(i32::MAX).unwrap() + 1];
        for (framing, kind) in [
            (Framing::RawBytes, Kind::Bytes),
            (Framing::RawBytes, Kind::Text),
            (Framing::TypedBytes, Kind::Bytes),
            (Framing::TypedBytes, Kind::Text),
        ] {
            let writer = RecordWriter {
                framing,
                separator: Vec::new(),
                ignore_key: false,
                key_kind: kind,
                value_kind: kind,
            };
            let mut stream = Vec::new();
            let err = writer
                .write(&mut stream, b"k", &huge, &mut Vec::new())
                .unwrap_err();
            assert_eq!(
                err.kind(),
                io::ErrorKind::InvalidInput,
                "{framing:?} {kind:?}"
            );
            assert!(err.to_string().contains("too long"), "{err}");
            assert!(err.to_string().contains("2147483647"), "{err}");
            // The key went out whole; nothing of the value's length or bytes did.
            let key_bytes = match (framing, kind) {
                (Framing::RawBytes, Kind::Bytes) => 4 + 1,
                (Framing::RawBytes, _) => 4 + 1 + 1,
                _ => 1 + 4 + 1,
            };
            assert_eq!(stream.len(), key_bytes, "{framing:?} {kind:?}");
        }
        // At the bound, a rawbytes length is still written as Hadoop reads it.
        let writer = RecordWriter {
            framing: Framing::RawBytes,
            separator: Vec::new(),
            ignore_key: true,
            key_kind: Kind::Bytes,
            value_kind: Kind::Bytes,
        };
        let mut sink = CountingSink::default();
        writer
            .write(&mut sink, b"", &huge[1..], &mut Vec::new())
            .unwrap();
        assert_eq!(sink.first, i32::MAX.to_be_bytes());
        assert_eq!(sink.bytes, 4 + huge.len() - 1);
    }

    /// Counts what is written, keeping only the first 4 bytes.
    #[derive(Default)]
    struct CountingSink {
        first: Vec<u8>,
        bytes: usize,
    }

    impl Write for CountingSink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let keep = (4 - self.first.len()).min(buf.len());
            self.first.extend_from_slice(&buf[..keep]);
            self.bytes += buf.len();
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn vints_match_hadoop() {
        let enc = |v: i64| {
            let mut b = Vec::new();
            push_vint(&mut b, v);
            b
        };
        assert_eq!(enc(0), vec![0]);
        assert_eq!(enc(127), vec![127]);
        assert_eq!(enc(-112), vec![0x90]);
        assert_eq!(enc(128), vec![0x8f, 0x80]);
        assert_eq!(enc(300), vec![0x8e, 0x01, 0x2c]);
        assert_eq!(enc(-113), vec![0x87, 0x70]);
    }

    #[test]
    fn text_writer_with_and_without_keys() {
        let mut writer = RecordWriter {
            framing: Framing::Text,
            separator: b"\t".to_vec(),
            ignore_key: true,
            key_kind: Kind::Offset,
            value_kind: Kind::Text,
        };
        let mut out = Vec::new();
        writer
            .write(&mut out, b"0", b"line", &mut Vec::new())
            .unwrap();
        writer.ignore_key = false;
        writer.write(&mut out, b"k", b"v", &mut Vec::new()).unwrap();
        assert_eq!(out, b"line\nk\tv\n");
    }

    #[test]
    fn bytes_print_as_hex() {
        let mut out = Vec::new();
        render(Kind::Bytes, b"\x00a\xff", &mut out).unwrap();
        assert_eq!(out, b"00 61 ff");
    }
}
