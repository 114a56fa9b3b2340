//! Grep, as Hadoop's `Grep` example: count every match of a regular expression, then list the
//! matches by decreasing count.

use regex::bytes::Regex;

use crate::sum_counts;
use sluice_api::{Combine, Emit, ExecError, Job, Mapper, Reducer, Stage, Values, Writable};

struct GrepMapper {
    regex: Regex,
    group: usize,
    lines: GrepLines,
}

/// What a grep job matches its pattern against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrepLines {
    /// Each line's bytes as they are (bytes that are not UTF-8 match no `.` and no class).
    #[default]
    Bytes,
    /// Each line as Java decodes it, as Hadoop's `grep` example matches it (`Text.toString()`):
    /// bytes that are not UTF-8 become U+FFFD, in the line and in the matches counted.
    JavaStrings,
}

impl Mapper for GrepMapper {
    fn map(&mut self, offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if self.lines == GrepLines::JavaStrings && std::str::from_utf8(line).is_err() {
            let decoded = sluice_hadoop::java::decode_utf8_lossy(line).into_owned();
            return self.find_all(offset, decoded.as_bytes(), out);
        }
        self.find_all(offset, line, out)
    }
}

impl GrepMapper {
    fn find_all(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        // The matches Java's `Matcher.find` finds one after another, as Hadoop's `RegexMapper`
        // loops over them: each search starts where the last match ended, and one char later
        // only after an empty match. (Rust's `find_iter` also skips an empty match right after
        // a match, so `[a-z]*` on `abc d` would miss the empty match after `abc`.)
        let mut at = 0;
        while at <= line.len() {
            let (found, end) = if self.group == 0 {
                let Some(m) = self.regex.find_at(line, at) else {
                    break;
                };
                (Some(m.as_bytes()), (m.start(), m.end()))
            } else {
                let Some(caps) = self.regex.captures_at(line, at) else {
                    break;
                };
                let whole = caps.get(0).map_or((at, at), |m| (m.start(), m.end()));
                // A group that did not take part in the match yields nothing, as in Java.
                (caps.get(self.group).map(|m| m.as_bytes()), whole)
            };
            if let Some(found) = found {
                out.emit_count(found, 1)?;
            }
            at = if end.0 == end.1 {
                end.1 + char_len(line, end.1)
            } else {
                end.1
            };
        }
        Ok(())
    }
}

/// The length of the UTF-8 character at `at` in `line` (1 for a byte that starts none, or
/// past the end): how far Java's matcher moves on after an empty match.
fn char_len(line: &[u8], at: usize) -> usize {
    let Some(&first) = line.get(at) else {
        return 1;
    };
    let len = match first {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    match line.get(at..at + len).map(std::str::from_utf8) {
        Some(Ok(_)) => len,
        _ => 1,
    }
}

/// Stage 1: sums the counts of a match, and re-keys it so that byte order is
/// (count descending, match ascending): key = `!count` as 8 big-endian bytes, then the match.
struct CountReducer {
    key: Vec<u8>,
}

impl Reducer for CountReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let total = sum_counts(values)?;
        self.key.clear();
        self.key.extend_from_slice(&(!total).to_be_bytes());
        self.key.extend_from_slice(key);
        out.emit(&self.key, &[])
    }
}

/// Stage 2: decodes the re-keyed records into `count \t match`.
struct ByCountReducer {
    count: Vec<u8>,
}

impl Reducer for ByCountReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let Some((count, matched)) = key.split_first_chunk::<8>() else {
            return Err(ExecError::user("grep: malformed intermediate key"));
        };
        self.count.clear();
        self.count
            .extend_from_slice((!u64::from_be_bytes(*count)).to_string().as_bytes());
        while values.next_value()?.is_some() {
            out.emit(&self.count, matched)?;
        }
        Ok(())
    }
}

/// Counts every match of `regex` (or of its capture group `group`) in every line.
///
/// Output: one file `part-r-00000` of `count\tmatch` lines, by decreasing count, ties by match
/// bytes. `reducers` sets the parallelism of the counting stage only (as Hadoop's Grep, whose
/// sorting job has one reducer). Lines are matched as bytes; a match cannot span lines.
pub fn grep(regex: Regex, group: usize, reducers: usize) -> Job {
    grep_lines(regex, group, reducers, GrepLines::Bytes)
}

/// [`grep`], matching `lines` as they say.
pub fn grep_lines(regex: Regex, group: usize, reducers: usize, lines: GrepLines) -> Job {
    Job::new("grep", move |_| GrepMapper {
        regex: regex.clone(),
        group,
        lines,
    })
    .with_stage(
        Stage::new(reducers, |_| CountReducer { key: Vec::new() }).with_combine(Combine::SumCounts),
    )
    // Stage 1 feeds stage 2 and stays whole; stage 2 writes each (count, match) key's line
    // from that key alone, so its single partition may be split.
    .with_stage(Stage::new(1, |_| ByCountReducer { count: Vec::new() }).with_independent_keys())
    // A match counts the same whichever file it is in.
    .with_small_files_combined()
    // Hadoop's Grep: its counting job's RegexMapper emits Text matches, LongWritable ones.
    .with_map_output_types(Writable::Text, Writable::Long)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects what a mapper emits as counts.
    #[derive(Default)]
    struct Matches(Vec<String>);

    impl Emit for Matches {
        fn emit(&mut self, key: &[u8], _value: &[u8]) -> Result<(), ExecError> {
            self.0.push(String::from_utf8_lossy(key).into_owned());
            Ok(())
        }
    }

    fn matches(pattern: &str, group: usize, line: &str) -> Vec<String> {
        let mut mapper = GrepMapper {
            regex: Regex::new(pattern).unwrap(),
            group,
            lines: GrepLines::Bytes,
        };
        let mut out = Matches::default();
        mapper.map(0, line.as_bytes(), &mut out).unwrap();
        out.0
    }

    /// What Java's `while (matcher.find())` finds, as Hadoop's `RegexMapper` counts it
    /// (checked with Java 17's `java.util.regex`): an empty match right after a match counts.
    #[test]
    fn matches_are_those_javas_matcher_finds() {
        assert_eq!(matches("[a-z]*", 0, "abc d"), ["abc", "", "d", ""]);
        assert_eq!(matches("[a-z]*", 0, "aa"), ["aa", ""]);
        assert_eq!(matches("x*", 0, "axxb"), ["", "xx", "", ""]);
        assert_eq!(matches("^", 0, "ab"), [""]);
        assert_eq!(matches("$", 0, "ab"), [""]);
        assert_eq!(matches("a?", 0, "éa"), ["", "a", ""]);
        assert_eq!(
            matches("dfs[a-z.]+", 0, "dfs.x and dfs.y"),
            ["dfs.x", "dfs.y"]
        );
        assert_eq!(matches("(a)|b", 1, "ab"), ["a"]);
        assert_eq!(matches("(a*)", 1, "aab"), ["aa", "", ""]);
    }
}
