//! The text formats the iterative jobs read: edge lists, points, and their own state lines.
//!
//! Input lines that cannot be read fail the job, as a Hadoop job whose mapper meets a number
//! it cannot parse fails (`NumberFormatException`), with an error naming the file and the
//! line's byte offset (the engine's context around [`bad_line`]). Blank lines and lines
//! starting with `#` (the comments of SNAP's edge lists) are skipped.

use sluice_api::ExecError;

/// The error of an input line that does not parse. The engine names the map task's file and
/// the line's byte offset around it (`map task 3 (edges.txt, bytes ...): record at byte 812:
/// ...`).
pub(crate) fn bad_line(what: &str, line: &[u8]) -> ExecError {
    const SHOWN: usize = 80;
    let shown = String::from_utf8_lossy(&line[..line.len().min(SHOWN)]);
    let more = if line.len() > SHOWN { "..." } else { "" };
    ExecError::user(format!("{what}: {shown:?}{more}"))
}

/// Whether a line carries no record: blank, or a `#` comment.
pub(crate) fn skipped(line: &[u8]) -> bool {
    let trimmed = line.trim_ascii();
    trimmed.is_empty() || trimmed.starts_with(b"#")
}

/// A vertex id: a decimal number in `0..2^64`.
pub(crate) fn vertex(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// An edge line: two vertex ids separated by tabs or spaces.
pub(crate) fn edge(line: &[u8]) -> Option<(u64, u64)> {
    let mut fields = line
        .split(|b| *b == b'\t' || *b == b' ')
        .filter(|f| !f.is_empty());
    let src = vertex(fields.next()?)?;
    let dst = vertex(fields.next()?)?;
    if fields.next().is_some() {
        return None;
    }
    // A carriage return of a file written on Windows ends the last field.
    Some((src, dst))
}

/// Reads an edge line, or says why not.
pub(crate) fn edge_or_error(line: &[u8]) -> Result<(u64, u64), ExecError> {
    let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
    edge(trimmed).ok_or_else(|| {
        bad_line(
            "expected an edge: two vertex ids (decimal, 0..2^64) separated by a tab",
            line,
        )
    })
}

/// A point line's coordinates, separated by commas and/or spaces and tabs, into `out`.
/// `None` if a coordinate is not a finite number.
pub(crate) fn point(line: &[u8], out: &mut Vec<f64>) -> Option<()> {
    out.clear();
    let text = std::str::from_utf8(line).ok()?;
    for field in text
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
    {
        let x: f64 = field.parse().ok()?;
        if !x.is_finite() {
            return None;
        }
        out.push(x);
    }
    (!out.is_empty()).then_some(())
}

/// The fields of a state line written by an earlier iteration: `key\tfirst\trest`, the
/// last possibly empty.
pub(crate) fn state(line: &[u8]) -> Option<(u64, &[u8], &[u8])> {
    let mut fields = line.splitn(3, |b| *b == b'\t');
    let key = vertex(fields.next()?)?;
    let first = fields.next()?;
    let rest = fields.next().unwrap_or(&[]);
    Some((key, first, rest))
}

/// An error about a state line: the iterations' own files, so a bug, not bad input.
pub(crate) fn bad_state(line: &[u8]) -> ExecError {
    ExecError::user(format!(
        "corrupt iteration state line {:?}",
        String::from_utf8_lossy(&line[..line.len().min(80)])
    ))
}

/// The vertex ids of a comma-separated adjacency list.
pub(crate) fn adjacency(list: &[u8]) -> impl Iterator<Item = Option<u64>> + '_ {
    list.split(|b| *b == b',')
        .filter(|f| !f.is_empty())
        .map(vertex)
}

/// A float written by [`write_f64`].
pub(crate) fn float(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Appends `x` as the shortest decimal that reads back as the same `f64`.
pub(crate) fn write_f64(out: &mut Vec<u8>, x: f64) {
    use std::io::Write;
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{x:e}");
}

/// Appends `x` in decimal.
pub(crate) fn write_u64(out: &mut Vec<u8>, x: u64) {
    use std::io::Write;
    let _ = write!(out, "{x}");
}

/// A value of the shuffle: a tag byte, then 8 bytes.
pub(crate) fn tagged(tag: u8, bits: [u8; 8]) -> [u8; 9] {
    let mut value = [0u8; 9];
    value[0] = tag;
    value[1..].copy_from_slice(&bits);
    value
}

/// The 8 bytes after a value's tag, as a `u64` (little-endian).
pub(crate) fn payload(value: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = value.get(1..9)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// A vertex as a shuffle key: big-endian, so that byte order is numeric order.
pub(crate) fn key(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// A shuffle key made by [`key`].
pub(crate) fn unkey(key: &[u8]) -> Result<u64, ExecError> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| ExecError::user("corrupt vertex key in the shuffle"))?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_and_points_parse() {
        assert_eq!(edge(b"1\t2"), Some((1, 2)));
        assert_eq!(edge(b"  1  2 "), Some((1, 2)));
        assert_eq!(edge(b"18446744073709551615\t0"), Some((u64::MAX, 0)));
        assert_eq!(edge(b"18446744073709551616\t0"), None);
        assert_eq!(edge(b"1"), None);
        assert_eq!(edge(b"1\t2\t3"), None);
        assert_eq!(edge(b"-1\t2"), None);
        assert_eq!(edge(b"a\tb"), None);
        let mut p = Vec::new();
        assert!(point(b"1.5, -2 3e2", &mut p).is_some());
        assert_eq!(p, [1.5, -2.0, 300.0]);
        assert!(point(b"1,nan", &mut p).is_none());
        assert!(point(b"1,x", &mut p).is_none());
        assert!(skipped(b"  ") && skipped(b"# comment") && !skipped(b"1 2"));
    }
}
