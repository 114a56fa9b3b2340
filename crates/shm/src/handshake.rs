//! The handshake that sets the rings up under Hadoop Streaming, where the engine (sluice's
//! plugin in the task's JVM) cannot hand the child a descriptor: `docs/shm-protocol.md`,
//! "Setting up under Hadoop Streaming: the handshake".
//!
//! The child offers with the [`HELLO`] line on its stdout; the engine answers with an attach
//! line on the child's stdin naming the region by a `/proc/<pid>/fd/<n>` path, or starts
//! sending records, in which case the child stays on pipes.

use crate::layout::VERSION;
use crate::ShmError;

/// The line a client writes to its stdout to offer shared memory.
pub const HELLO: &[u8] = b"\x01sluice-shm hello 1\n";

/// How the engine's answer begins; the rest is `<version> <path>\n`.
pub const ATTACH_PREFIX: &[u8] = b"\x01sluice-shm attach ";

/// The longest attach line a client accepts: the prefix, a version and a `/proc` path are far
/// shorter. A longer line that starts as an attach line is refused, as one that cannot be
/// followed (it is never taken for a record: `docs/shm-protocol.md`).
pub const MAX_ATTACH_LINE: usize = 512;

/// The plugin's input writer: a child fed by it may offer.
pub const WRITER_CLASS: &str = "org.sluice.hadoop.streaming.ShmInputWriter";

/// Whether a child whose environment is `var` should offer the handshake: its writer (the map
/// side's, or the reduce side's, which a combiner in a map task uses too) is the plugin's.
/// `var` looks a variable up (`std::env::var` in a real child).
pub fn offers(var: impl Fn(&str) -> Option<String>) -> bool {
    let ours = |name: &str| var(name).is_some_and(|v| v == WRITER_CLASS);
    let map = ours("stream_map_input_writer_class");
    let reduce = ours("stream_reduce_input_writer_class");
    match var("mapreduce_task_ismap").as_deref() {
        // A mapper, or a combiner: their environments are the same.
        Some("true") => {
            let combiner = var("stream_combine_streamprocessor").is_some_and(|c| !c.is_empty());
            map && (!combiner || reduce)
        }
        Some("false") => reduce,
        _ => map && reduce,
    }
}

/// The line that tells the child where the region is.
pub fn attach_line(path: &str) -> Vec<u8> {
    let mut line = ATTACH_PREFIX.to_vec();
    line.extend_from_slice(format!("{VERSION} {path}\n").as_bytes());
    line
}

/// What the first bytes of a child's stdin say, as far as they have been read.
#[derive(Debug, PartialEq, Eq)]
pub enum FirstLine {
    /// Too few bytes to tell: read more (unless the input ended, which means pipes).
    Undecided,
    /// Not an attach line: the bytes are the first record.
    Record,
    /// An attach line of `len` bytes naming the region at `path`.
    Attach {
        /// The region's path.
        path: String,
        /// Bytes the line takes, its `\n` included.
        len: usize,
    },
}

/// Classifies the first bytes read from stdin.
///
/// # Errors
/// [`ShmError::Version`] or [`ShmError::Env`] for an attach line this client cannot follow.
pub fn first_line(bytes: &[u8]) -> Result<FirstLine, ShmError> {
    let head = &bytes[..bytes.len().min(ATTACH_PREFIX.len())];
    if !ATTACH_PREFIX.starts_with(head) {
        return Ok(FirstLine::Record);
    }
    let too_long = || {
        ShmError::Env(format!(
            "an attach line longer than {MAX_ATTACH_LINE} bytes arrived on stdin"
        ))
    };
    let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
        return if bytes.len() > MAX_ATTACH_LINE {
            Err(too_long())
        } else {
            Ok(FirstLine::Undecided)
        };
    };
    if end > MAX_ATTACH_LINE {
        return Err(too_long());
    }
    let rest = &bytes[ATTACH_PREFIX.len()..end];
    let text = std::str::from_utf8(rest)
        .map_err(|_| ShmError::Env("the attach line is not UTF-8".into()))?;
    let (version, path) = text
        .split_once(' ')
        .ok_or_else(|| ShmError::Env(format!("malformed attach line {text:?}")))?;
    let version: u32 = version
        .parse()
        .map_err(|_| ShmError::Env(format!("attach line version {version:?}")))?;
    if version != VERSION {
        return Err(ShmError::Version(version));
    }
    if path.is_empty() {
        return Err(ShmError::Env("the attach line names no region".into()));
    }
    Ok(FirstLine::Attach {
        path: path.to_string(),
        len: end + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    const MAP: (&str, &str) = ("stream_map_input_writer_class", WRITER_CLASS);
    const REDUCE: (&str, &str) = ("stream_reduce_input_writer_class", WRITER_CLASS);
    const STOCK_REDUCE: (&str, &str) = (
        "stream_reduce_input_writer_class",
        "org.apache.hadoop.streaming.io.TextInputWriter",
    );

    #[test]
    fn offers_only_when_the_plugin_feeds_this_child() {
        let is_map = ("mapreduce_task_ismap", "true");
        let is_reduce = ("mapreduce_task_ismap", "false");
        let combiner = ("stream_combine_streamprocessor", "cat");
        assert!(offers(env(&[is_map, MAP])));
        assert!(offers(env(&[is_map, MAP, STOCK_REDUCE])));
        // A combiner runs with the reduce side's writer in a map task.
        assert!(!offers(env(&[is_map, MAP, STOCK_REDUCE, combiner])));
        assert!(offers(env(&[is_map, MAP, REDUCE, combiner])));
        assert!(offers(env(&[
            is_map,
            MAP,
            ("stream_combine_streamprocessor", "")
        ])));
        assert!(!offers(env(&[is_map, REDUCE])));
        assert!(offers(env(&[is_reduce, REDUCE])));
        assert!(!offers(env(&[is_reduce, MAP, STOCK_REDUCE])));
        assert!(offers(env(&[MAP, REDUCE])));
        assert!(!offers(env(&[MAP])));
        assert!(!offers(env(&[])));
    }

    #[test]
    fn first_lines_are_told_apart() {
        let line = attach_line("/proc/12/fd/34");
        assert_eq!(
            first_line(&line).unwrap(),
            FirstLine::Attach {
                path: "/proc/12/fd/34".into(),
                len: line.len()
            }
        );
        for cut in 0..line.len() {
            assert_eq!(first_line(&line[..cut]).unwrap(), FirstLine::Undecided);
        }
        assert_eq!(first_line(b"hello\n").unwrap(), FirstLine::Record);
        assert_eq!(first_line(b"\x01sluice").unwrap(), FirstLine::Undecided);
        assert_eq!(first_line(b"\x01sluicX").unwrap(), FirstLine::Record);
        let mut long = ATTACH_PREFIX.to_vec();
        long.resize(MAX_ATTACH_LINE + 1, b'x');
        // Refused, whole or not: a line that starts as an attach line is never a record.
        assert!(first_line(&long).is_err());
        long.push(b'\n');
        assert!(first_line(&long).is_err());
        assert!(matches!(
            first_line(b"\x01sluice-shm attach 9 /p\n"),
            Err(ShmError::Version(9))
        ));
        assert!(first_line(b"\x01sluice-shm attach 1\n").is_err());
    }
}
