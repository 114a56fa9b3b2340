//! Hadoop's `KeyFieldBasedComparator` and `KeyFieldBasedPartitioner`, reproduced exactly.
//!
//! Streaming jobs select these with `-D mapreduce.partition.keycomparator.options=...`
//! (comparator), `-D mapreduce.partition.keypartitioner.options=...` (partitioner) and
//! `-D mapreduce.map.output.key.field.separator=...` (the field separator, tab by default; it
//! is a Java string, so pass its UTF-8 bytes).
//!
//! # Options
//!
//! Whitespace-separated tokens, in the style of `sort(1)`:
//!
//! * `-k pos1[,pos2]` or `-kpos1[,pos2]`, where `pos` is `field[.char][n][r]`. Fields and
//!   characters count from 1; characters are **bytes** of the UTF-8 key. A missing `.char` in
//!   `pos1` means the field's first byte; in `pos2` (or `.0`) the field's last byte. A missing
//!   `pos2` means **the end of the whole key**, not of the field (`-k2` = field 2 onwards).
//!   `n` (numeric) and `r` (reverse) may follow either position and apply to the whole `-k`.
//! * `-n`, `-r`, `-nr`: defaults for every `-k` that has neither flag of its own. Any other
//!   token (including `-rn`, or a `-k` with nothing after it) is ignored, as Hadoop does.
//! * Several `-k` are compared in order; the first difference decides.
//!
//! # Behaviour that differs from `sort(1)` and that sluice keeps
//!
//! * **Empty options** (`""`, unset): the comparator compares the raw key bytes and the
//!   partitioner hashes the whole key with `String.hashCode()` of the key decoded as UTF-8
//!   (malformed bytes become U+FFFD). Options that are not empty but hold no `-k` (for example
//!   `-n`, or just a space) instead act as one key spanning the whole key; the partitioner then
//!   hashes bytes (below) and an empty key is "missing".
//! * **Missing fields**: a key that lacks the first byte of a `-k` range sorts *before* any
//!   key that has it (after, with `r`) — and before a key that lacks it too: Hadoop returns
//!   "less" when both are missing, so the comparator is then not antisymmetric. See
//!   [`KeyFieldComparator::compare`].
//! * **Ranges run across fields**: a character position beyond the end of its field is counted
//!   on into the following fields (`-k1.1,1.5` of `ab<TAB>cdef` is `ab<TAB>cd`); the end of a
//!   range is clamped to the end of the key. An end before the start gives a range of negative
//!   length, which compares by that length.
//! * **Multi-byte separators**: Hadoop resumes its separator search one byte after the start of
//!   each match but measures field offsets with the full separator length, so with a separator
//!   of two or more bytes fields after the second come out shifted (and may be "missing").
//!   This is reproduced; single-byte separators behave as expected.
//! * **Numeric comparison** (`n`) is a byte-wise scan, not a parse: an optional leading `-`,
//!   leading zeros skipped, then digit count, digits and decimal fraction compared; `-0`, `0`
//!   and `0.00` are equal, as are `1.5` and `1.50`; the first byte that is not a digit ends the
//!   number (`1e3` is 1, `abc` about 0). Quirks kept: equal values written with different
//!   leading zeros are ordered by their first bytes (`007` < `7`, but `-01` = `-1`), and
//!   non-digit bytes sometimes take part in a signed (Java `byte`) comparison. No `+` sign,
//!   exponent or whitespace handling.
//!
//! # Partitioning
//!
//! With options, the partitioner takes the key as `Text.toString().getBytes(UTF_8)` (so
//! malformed UTF-8 is first replaced by `EF BF BD`), returns 0 for an empty key, and otherwise
//! folds `h = 31 * h + (signed byte)` over the bytes of each selected range, starting from
//! `h = 0` and carrying `h` from one `-k` to the next; ranges that are missing are skipped.
//! The partition is `(h & i32::MAX) % partitions`. `n` and `r` have no effect on it.
//!
//! # Serialized keys
//!
//! Hadoop's comparator receives serialized `Text` keys and skips the leading vint length
//! (`WritableUtils.decodeVIntSize` of the first byte) before looking at fields; everything here
//! works on the key bytes themselves, which is the same thing.
//!
//! # Options sluice rejects
//!
//! Hadoop accepts a few specifications whose meaning is accidental: field 0 (`-k0` behaves
//! like `-k1`, `-k2,0` like `-k2`), character 0 or a negative character in `pos1` (reads the
//! byte before the key) and negative numbers. [`KeyFieldSpec::parse`] reports them as errors.

use std::cmp::Ordering;

use crate::{java, partition};

/// Why a key field option string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyFieldError {
    /// A position held something other than a decimal number.
    #[error("bad key field option '{option}': '{text}' is not a number (expected -k pos1[,pos2] where pos is field[.char][n][r])")]
    NotANumber {
        /// The whole `-k` token.
        option: String,
        /// The piece that should have been a number.
        text: String,
    },
    /// The option ended where a number was still expected (`-k1.`, `-k1,`).
    #[error("bad key field option '{option}': a number is missing at the end")]
    MissingNumber {
        /// The whole `-k` token.
        option: String,
    },
    /// The option does not have the form `-k pos1[,pos2]`.
    #[error(
        "bad key field option '{option}': expected -k pos1[,pos2] where pos is field[.char][n][r]"
    )]
    Malformed {
        /// The whole `-k` token.
        option: String,
    },
    /// A field number below 1.
    #[error("bad key field option '{option}': field numbers start at 1")]
    FieldZero {
        /// The whole `-k` token.
        option: String,
    },
    /// A start character position below 1 or a negative end character position.
    #[error("bad key field option '{option}': character positions start at 1 (0 is allowed only after the comma, meaning the end of the field)")]
    BadChar {
        /// The whole `-k` token.
        option: String,
    },
}

/// One `-k` specification (or the implicit whole-key one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeySpec {
    begin_field: i64,
    begin_char: i64,
    /// 0: up to the end of the key.
    end_field: i64,
    /// 0: up to the end of the field.
    end_char: i64,
    numeric: bool,
    reverse: bool,
}

impl KeySpec {
    const WHOLE_KEY: KeySpec = KeySpec {
        begin_field: 1,
        begin_char: 1,
        end_field: 0,
        end_char: 0,
        numeric: false,
        reverse: false,
    };
}

/// Parsed key field options plus the field separator, shared by the comparator and the
/// partitioner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFieldSpec {
    /// Empty only when the option string was empty (raw byte order / whole-key string hash).
    keys: Vec<KeySpec>,
    /// Whether any `-k` was given; without one, the whole key is a single field even if it
    /// contains separators.
    split_fields: bool,
    separator: Vec<u8>,
}

/// Java's `StringTokenizer` default delimiters.
fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
}

impl KeyFieldSpec {
    /// Parses an option string such as `"-k2,2nr -k1,1"` with the given field separator
    /// (the UTF-8 bytes of `mapreduce.map.output.key.field.separator`, normally `b"\t"`).
    ///
    /// Pass `""` when the option is unset: Hadoop treats unset and empty alike.
    pub fn parse(options: &str, separator: &[u8]) -> Result<KeyFieldSpec, KeyFieldError> {
        let mut spec = KeyFieldSpec {
            keys: Vec::new(),
            split_fields: false,
            separator: separator.to_vec(),
        };
        if options.is_empty() {
            return Ok(spec);
        }
        let (mut global_numeric, mut global_reverse) = (false, false);
        let mut tokens = options.split(is_java_space).filter(|t| !t.is_empty());
        while let Some(token) = tokens.next() {
            match token {
                "-n" => global_numeric = true,
                "-r" => global_reverse = true,
                "-nr" => (global_numeric, global_reverse) = (true, true),
                _ => {}
            }
            if let Some(rest) = token.strip_prefix("-k") {
                // Both `-k2,2` and `-k 2,2`; a trailing lone `-k` is ignored.
                let (arg, shown) = if rest.is_empty() {
                    match tokens.next() {
                        Some(next) => (next, format!("-k {next}")),
                        None => continue,
                    }
                } else {
                    (rest, token.to_owned())
                };
                spec.keys.push(parse_key(arg, &shown)?);
                spec.split_fields = true;
            }
        }
        for key in &mut spec.keys {
            if !key.numeric && !key.reverse {
                key.numeric = global_numeric;
                key.reverse = global_reverse;
            }
        }
        if spec.keys.is_empty() {
            spec.keys.push(KeySpec {
                numeric: global_numeric,
                reverse: global_reverse,
                ..KeySpec::WHOLE_KEY
            });
        }
        Ok(spec)
    }

    /// The field separator these options were parsed with.
    pub fn separator(&self) -> &[u8] {
        &self.separator
    }

    /// Byte range `[start, end]` (inclusive, `end` may be `< start`) that `key_spec` selects in
    /// `key`, or `None` when the key does not reach the range's first byte.
    fn range(&self, key: &[u8], k: &KeySpec) -> Option<(i64, i64)> {
        let len = key.len() as i64;
        let last = len - 1;
        if !self.split_fields {
            // Without -k the key is one field: only WHOLE_KEY-like specs exist here.
            return (k.begin_char <= len).then_some((k.begin_char - 1, last));
        }
        let (begin_pos, _) = self.field(key, k.begin_field)?;
        if begin_pos + k.begin_char > len {
            return None;
        }
        let start = begin_pos + k.begin_char - 1;
        let end = if k.end_field == 0 {
            last
        } else {
            match self.field(key, k.end_field) {
                None => last,
                Some((pos, field_len)) => {
                    let pos = if k.end_char == 0 {
                        pos + field_len
                    } else {
                        pos
                    };
                    if pos + k.end_char <= len {
                        pos + k.end_char - 1
                    } else {
                        last
                    }
                }
            }
        };
        Some((start, end))
    }

    /// Offset of field `n` (1-based) as Hadoop computes it — the sum of the preceding fields'
    /// lengths plus one full separator length each — and the field's own length; `None` when
    /// the key has fewer than `n` fields.
    fn field(&self, key: &[u8], n: i64) -> Option<(i64, i64)> {
        let sep = self.separator.as_slice();
        let sep_len = sep.len() as i64;
        let end = key.len() as i64;
        let mut start = 0i64;
        let mut pos = 0i64;
        for _ in 1..n {
            let found = find(key, start, sep)?;
            pos += found - start + sep_len;
            // Hadoop resumes one byte after the match, whatever the separator's length.
            start = found + 1;
        }
        let field_len = match find(key, start, sep) {
            Some(found) => found - start,
            None => end - start,
        };
        Some((pos, field_len))
    }
}

/// First index `>= from` where `sep` occurs in `key` (an empty `sep` matches at `from` while
/// `from <= key.len()`).
fn find(key: &[u8], from: i64, sep: &[u8]) -> Option<i64> {
    let from = usize::try_from(from).ok()?;
    let last_start = key.len().checked_sub(sep.len())?;
    (from..=last_start)
        .find(|&i| key.get(i..i + sep.len()) == Some(sep))
        .map(|i| i as i64)
}

/// Parses the text after `-k`: `field[.char][n|r]*[,field[.char][n|r]*]`.
fn parse_key(arg: &str, shown: &str) -> Result<KeySpec, KeyFieldError> {
    let option = || shown.to_owned();
    // Hadoop tokenizes on the delimiters "nr.,", each delimiter being a token of its own.
    let mut tokens = Tokens::new(arg);
    let mut key = KeySpec::WHOLE_KEY;
    let number = |t: Option<&str>| -> Result<i64, KeyFieldError> {
        let t = t.ok_or_else(|| KeyFieldError::MissingNumber { option: option() })?;
        parse_java_int(t).ok_or_else(|| KeyFieldError::NotANumber {
            option: option(),
            text: t.to_owned(),
        })
    };
    key.begin_field = number(tokens.next())?;
    let mut token = tokens.next();
    if token == Some(".") {
        key.begin_char = number(tokens.next())?;
        token = tokens.next();
    }
    while let Some(flag @ ("n" | "r")) = token {
        set_flag(&mut key, flag);
        token = tokens.next();
    }
    match token {
        None => {}
        Some(",") => {
            key.end_field = number(tokens.next())?;
            token = tokens.next();
            if token == Some(".") {
                key.end_char = number(tokens.next())?;
                token = tokens.next();
            }
            while let Some(t) = token {
                if !matches!(t, "n" | "r") {
                    return Err(KeyFieldError::Malformed { option: option() });
                }
                set_flag(&mut key, t);
                token = tokens.next();
            }
            if key.end_field < 1 {
                return Err(KeyFieldError::FieldZero { option: option() });
            }
        }
        Some(_) => return Err(KeyFieldError::Malformed { option: option() }),
    }
    if key.begin_field < 1 {
        return Err(KeyFieldError::FieldZero { option: option() });
    }
    if key.begin_char < 1 || key.end_char < 0 {
        return Err(KeyFieldError::BadChar { option: option() });
    }
    Ok(key)
}

fn set_flag(key: &mut KeySpec, flag: &str) {
    if flag == "n" {
        key.numeric = true;
    } else {
        key.reverse = true;
    }
}

/// `Integer.parseInt` for ASCII input: optional sign, at least one digit, fits in an `i32`.
fn parse_java_int(t: &str) -> Option<i64> {
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<i32>().ok().map(i64::from)
}

/// Splits on the characters `n`, `r`, `.` and `,`, returning each of them as a token too.
struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Tokens<'a> {
    fn new(s: &'a str) -> Self {
        Tokens { rest: s }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let is_delim = |c: char| matches!(c, 'n' | 'r' | '.' | ',');
        let cut = match self.rest.find(is_delim) {
            Some(0) => 1,
            Some(i) => i,
            None => self.rest.len(),
        };
        let (token, rest) = self.rest.split_at(cut);
        self.rest = rest;
        Some(token)
    }
}

/// Hadoop's `KeyFieldBasedComparator`: orders keys by the fields that [`KeyFieldSpec`] selects.
#[derive(Debug, Clone)]
pub struct KeyFieldComparator {
    spec: KeyFieldSpec,
}

impl KeyFieldComparator {
    /// A comparator for the given options.
    pub fn new(spec: KeyFieldSpec) -> Self {
        KeyFieldComparator { spec }
    }

    /// Compares two keys (the key bytes, without any length prefix) exactly as Hadoop does.
    ///
    /// Caution: when a `-k` range is missing from *both* keys, Hadoop answers `Less` (or
    /// `Greater` with `r`) whatever the argument order, and its numeric scan is not
    /// transitive for some inputs that are not numbers. Such answers are reproduced here, so
    /// this is not always a total order: sort with an algorithm that tolerates that (Rust's
    /// `slice::sort_by` may panic on an inconsistent order); use [`Self::compare_total`]
    /// where a well-behaved order matters more than Hadoop's exact answer.
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.compare_impl(a, b, false)
    }

    /// Like [`Self::compare`], but a range missing from both keys counts as equal (and the
    /// next `-k` decides), so keys lacking a field are not reported as less than each other.
    pub fn compare_total(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.compare_impl(a, b, true)
    }

    /// Whether [`Self::compare_total`] is a total order for every pair of keys: it is unless
    /// some `-k` compares numerically, since Hadoop's numeric scan is not transitive over keys
    /// that are not numbers (`1.5` = `1.50` and `1.5` = `1.5.6`, but `1.50` > `1.5.6`).
    pub fn is_total_order(&self) -> bool {
        !self.spec.keys.iter().any(|k| k.numeric)
    }

    fn compare_impl(&self, a: &[u8], b: &[u8], both_missing_equal: bool) -> Ordering {
        let spec = &self.spec;
        if spec.keys.is_empty() {
            return a.cmp(b);
        }
        for k in &spec.keys {
            let result = match (spec.range(a, k), spec.range(b, k)) {
                (None, None) if both_missing_equal => Ordering::Equal,
                (None, _) => Ordering::Less,
                (_, None) => Ordering::Greater,
                (Some((s1, e1)), Some((s2, e2))) => {
                    if k.numeric {
                        numeric_cmp(a, s1, e1, b, s2, e2).cmp(&0)
                    } else {
                        range_bytes_cmp(a, s1, e1, b, s2, e2)
                    }
                }
            };
            let result = if k.reverse { result.reverse() } else { result };
            if result != Ordering::Equal {
                return result;
            }
        }
        Ordering::Equal
    }
}

/// Hadoop's byte comparison of `a[s1..=e1]` with `b[s2..=e2]`: unsigned lexicographic over the
/// common length, then the lengths decide — also when a length is negative.
fn range_bytes_cmp(a: &[u8], s1: i64, e1: i64, b: &[u8], s2: i64, e2: i64) -> Ordering {
    let (l1, l2) = (e1 - s1 + 1, e2 - s2 + 1);
    let common = l1.min(l2);
    if common > 0 {
        for i in 0..common {
            let (x, y) = (byte_at(a, s1 + i), byte_at(b, s2 + i));
            if x != y {
                return x.cmp(&y);
            }
        }
    }
    l1.cmp(&l2)
}

/// `x[i]`, or 0 outside the key. Ranges always lie inside the key; the fallback only covers a
/// read Hadoop makes one byte past a range in a corner of its zero test.
fn byte_at(x: &[u8], i: i64) -> u8 {
    usize::try_from(i)
        .ok()
        .and_then(|i| x.get(i).copied())
        .unwrap_or(0)
}

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

/// Hadoop's numeric comparison of the inclusive ranges `a[s1..=e1]` and `b[s2..=e2]`.
/// The result's sign is what matters. Byte differences are taken as Java's signed bytes.
fn numeric_cmp(a: &[u8], s1: i64, e1: i64, b: &[u8], s2: i64, e2: i64) -> i32 {
    let (mut i, mut j) = (s1, s2);
    // The first byte of each range is read even when the range is empty.
    let mut first_a = byte_at(a, s1);
    let mut first_b = byte_at(b, s2);
    let neg_a = first_a == b'-';
    let neg_b = first_b == b'-';
    if neg_a && !neg_b {
        return one_negative_cmp(a, s1 + 1, e1, b, s2, e2);
    }
    if neg_b && !neg_a {
        return -one_negative_cmp(b, s2 + 1, e2, a, s1, e1);
    }
    let mul = if neg_a {
        i += 1;
        j += 1;
        -1
    } else {
        1
    };
    while i <= e1 && byte_at(a, i) == b'0' {
        i += 1;
    }
    while j <= e2 && byte_at(b, j) == b'0' {
        j += 1;
    }
    // Skip the common run of equal digits.
    while i <= e1 && j <= e2 && is_digit(byte_at(a, i)) && byte_at(a, i) == byte_at(b, j) {
        i += 1;
        j += 1;
    }
    if i <= e1 {
        first_a = byte_at(a, i);
    }
    if j <= e2 {
        first_b = byte_at(b, j);
    }
    // Java bytes are signed: this is what decides for bytes >= 0x80.
    let first_result = i32::from(first_a as i8) - i32::from(first_b as i8);
    if (first_a == b'.' && (!is_digit(first_b) || j > e2))
        || (first_b == b'.' && (!is_digit(first_a) || i > e1))
    {
        return mul * decimal_cmp(a, i, e1, b, j, e2);
    }
    let digit_run = |x: &[u8], mut k: i64, e: i64| {
        let mut n = 0i64;
        while k <= e && is_digit(byte_at(x, k)) {
            n += 1;
            k += 1;
        }
        n
    };
    let more = digit_run(a, i, e1) - digit_run(b, j, e2);
    if more == 0 {
        mul * first_result
    } else {
        mul * more.signum() as i32
    }
}

/// Compares what follows the integer parts; `i`/`j` point at a `.` or past the range.
fn decimal_cmp(a: &[u8], mut i: i64, e1: i64, b: &[u8], mut j: i64, e2: i64) -> i32 {
    if i > e1 {
        return -nonzero_digit_follows(b, j + 1, e2);
    }
    if j > e2 {
        return nonzero_digit_follows(a, i + 1, e1);
    }
    let (ca, cb) = (byte_at(a, i), byte_at(b, j));
    if ca == b'.' && cb == b'.' {
        while i <= e1 && j <= e2 {
            let (x, y) = (byte_at(a, i), byte_at(b, j));
            if x != y {
                return match (is_digit(x), is_digit(y)) {
                    (true, true) => i32::from(x) - i32::from(y),
                    (true, false) => 1,
                    (false, true) => -1,
                    (false, false) => 0,
                };
            }
            i += 1;
            j += 1;
        }
        if i > e1 && j > e2 {
            0
        } else if i > e1 {
            -nonzero_digit_follows(b, j, e2)
        } else {
            nonzero_digit_follows(a, i, e1)
        }
    } else if ca == b'.' {
        nonzero_digit_follows(a, i + 1, e1)
    } else if cb == b'.' {
        -nonzero_digit_follows(b, j + 1, e2)
    } else {
        0
    }
}

/// 1 if, after any zeros, the range continues with a digit (1-9); 0 otherwise.
fn nonzero_digit_follows(x: &[u8], mut i: i64, e: i64) -> i32 {
    while i <= e {
        let c = byte_at(x, i);
        if c != b'0' {
            return i32::from(is_digit(c));
        }
        i += 1;
    }
    0
}

/// `a` is negative (its `-` skipped), `b` is not: less unless both are some form of zero.
fn one_negative_cmp(a: &[u8], s1: i64, e1: i64, b: &[u8], s2: i64, e2: i64) -> i32 {
    if !is_zero(a, s1, e1) || !is_zero(b, s2, e2) {
        return -1;
    }
    0
}

/// Whether the range reads as zero: zeros, optionally a `.` and more zeros, anything that is
/// not a digit ending the scan.
fn is_zero(x: &[u8], start: i64, end: i64) -> bool {
    let mut i = start;
    while i <= end {
        let c = byte_at(x, i);
        if c != b'0' {
            if is_digit(c) {
                return false;
            }
            break;
        }
        i += 1;
    }
    if i != end + 1 && byte_at(x, i) == b'.' {
        i += 1;
        while i <= end {
            let c = byte_at(x, i);
            if c != b'0' {
                if is_digit(c) {
                    return false;
                }
                break;
            }
            i += 1;
        }
    }
    true
}

/// Hadoop's `KeyFieldBasedPartitioner`: assigns a key to a reducer by hashing the selected
/// fields.
#[derive(Debug, Clone)]
pub struct KeyFieldPartitioner {
    spec: KeyFieldSpec,
}

impl KeyFieldPartitioner {
    /// A partitioner for the given options.
    pub fn new(spec: KeyFieldSpec) -> Self {
        KeyFieldPartitioner { spec }
    }

    /// The 31-based hash Hadoop computes for `key` (see the module documentation), before it
    /// is reduced to a partition number.
    pub fn hash(&self, key: &[u8]) -> i32 {
        let text = java::decode_utf8_lossy(key);
        if self.spec.keys.is_empty() {
            return java::string_hash(&text);
        }
        let bytes = text.as_bytes();
        if bytes.is_empty() {
            return 0;
        }
        let mut hash = 0i32;
        for k in &self.spec.keys {
            let Some((start, end)) = self.spec.range(bytes, k) else {
                continue;
            };
            let mut i = start;
            while i <= end {
                // Java's bytes are signed.
                let b = byte_at(bytes, i) as i8;
                hash = hash.wrapping_mul(31).wrapping_add(i32::from(b));
                i += 1;
            }
        }
        hash
    }

    /// The partition in `0..partitions` for `key`, as Hadoop numbers it. An empty key maps to
    /// partition 0 when options are given. `partitions == 0` returns 0 (Hadoop would fail).
    pub fn partition(&self, key: &[u8], partitions: usize) -> usize {
        if partitions == 0 {
            return 0;
        }
        if !self.spec.keys.is_empty() && key.is_empty() {
            return 0;
        }
        partition::hash_partition(self.hash(key), partitions)
    }
}
