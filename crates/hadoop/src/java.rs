//! Small re-implementations of Java platform behaviour that Hadoop's output depends on.
//!
//! Hadoop turns bytes into `java.lang.String`s in a few places that change what users see
//! (`Text.toString()` before hashing a key, typed bytes strings, `Double.toString`). These
//! helpers reproduce the JDK's observable results so that sluice computes the same partition
//! numbers and prints the same text.

use std::borrow::Cow;
use std::cmp::Ordering;

/// Appends what Hadoop's `BytesWritable.toString()` prints for `bytes`: two lower-case hex
/// digits per byte, separated by spaces (`00 ab 10`). Streaming's `rawbytes` output and
/// TeraValidate's reports show bytes this way.
pub fn bytes_writable_text(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
}

/// The replacement character the JDK substitutes for malformed UTF-8.
const REPLACEMENT: char = '\u{FFFD}';

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Decodes UTF-8 the way the JDK's UTF-8 decoder does with `CodingErrorAction.REPLACE`
/// (what `Text.toString()` and `new String(bytes, "UTF-8")` do).
///
/// Valid input is returned borrowed. The JDK does not follow the Unicode "maximal subpart"
/// rule in every case (an encoded surrogate such as `ED A0 80` becomes one U+FFFD, not three),
/// so `String::from_utf8_lossy` cannot be used: the replacement count changes hashes.
pub fn decode_utf8_lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(decode_slow(bytes)),
    }
}

fn decode_slow(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        let b1 = bytes[i];
        let rest = &bytes[i..];
        let consumed = match b1 {
            0x00..=0x7F => {
                out.push(char::from(b1));
                1
            }
            // Two-byte lead bytes, including the overlong C0/C1 which the JDK treats alike.
            0xC0..=0xDF => match rest.get(1) {
                Some(&b2) if b1 >= 0xC2 && is_continuation(b2) => {
                    let c = (u32::from(b1 & 0x1F) << 6) | u32::from(b2 & 0x3F);
                    out.push(char::from_u32(c).unwrap_or(REPLACEMENT));
                    2
                }
                _ => {
                    out.push(REPLACEMENT);
                    1
                }
            },
            0xE0..=0xEF => {
                let n = decode3(rest, &mut out);
                if n == 0 {
                    // Truncated at the end of input: the JDK replaces all that is left at once.
                    out.push(REPLACEMENT);
                    rest.len()
                } else {
                    n
                }
            }
            0xF0..=0xF7 => {
                let n = decode4(rest, &mut out);
                if n == 0 {
                    out.push(REPLACEMENT);
                    rest.len()
                } else {
                    n
                }
            }
            _ => {
                out.push(REPLACEMENT);
                1
            }
        };
        i += consumed;
    }
    out
}

/// Three-byte sequence starting at `s[0]`; returns the bytes consumed, or 0 when the input
/// ends inside an otherwise plausible sequence.
fn decode3(s: &[u8], out: &mut String) -> usize {
    let b1 = s[0];
    let overlong_or_bad_b2 = |b2: u8| (b1 == 0xE0 && b2 & 0xE0 == 0x80) || !is_continuation(b2);
    if s.len() < 3 {
        if s.len() > 1 && overlong_or_bad_b2(s[1]) {
            out.push(REPLACEMENT);
            return 1;
        }
        return 0;
    }
    let (b2, b3) = (s[1], s[2]);
    if overlong_or_bad_b2(b2) || !is_continuation(b3) {
        out.push(REPLACEMENT);
        return if overlong_or_bad_b2(b2) { 1 } else { 2 };
    }
    let c = (u32::from(b1 & 0x0F) << 12) | (u32::from(b2 & 0x3F) << 6) | u32::from(b3 & 0x3F);
    // A surrogate code point is dropped as a whole three-byte unit.
    out.push(char::from_u32(c).unwrap_or(REPLACEMENT));
    3
}

/// Four-byte sequence starting at `s[0]`; same contract as [`decode3`].
fn decode4(s: &[u8], out: &mut String) -> usize {
    let b1 = s[0];
    let bad_b2 = |b2: u8| {
        (b1 == 0xF0 && !(0x90..=0xBF).contains(&b2))
            || (b1 == 0xF4 && b2 & 0xF0 != 0x80)
            || !is_continuation(b2)
    };
    if s.len() < 4 {
        if b1 > 0xF4 || (s.len() > 1 && bad_b2(s[1])) {
            out.push(REPLACEMENT);
            return 1;
        }
        if s.len() > 2 && !is_continuation(s[2]) {
            out.push(REPLACEMENT);
            return 2;
        }
        return 0;
    }
    let (b2, b3, b4) = (s[1], s[2], s[3]);
    let c = (u32::from(b1 & 0x07) << 18)
        | (u32::from(b2 & 0x3F) << 12)
        | (u32::from(b3 & 0x3F) << 6)
        | u32::from(b4 & 0x3F);
    let valid = is_continuation(b2)
        && is_continuation(b3)
        && is_continuation(b4)
        && (0x1_0000..0x11_0000).contains(&c);
    if valid {
        out.push(char::from_u32(c).unwrap_or(REPLACEMENT));
        return 4;
    }
    out.push(REPLACEMENT);
    if b1 > 0xF4 || bad_b2(b2) {
        1
    } else if !is_continuation(b3) {
        2
    } else {
        3
    }
}

/// `java.lang.String.hashCode()`: `31 * h + c` over UTF-16 code units, starting from 0.
pub fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `String.compareTo`: lexicographic over UTF-16 code units (which differs from Rust's
/// code point order for characters above U+FFFF versus U+E000..U+FFFF).
pub fn string_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `Double.compare`: numeric order, except that -0.0 sorts before 0.0 and every NaN is equal
/// to every other NaN and greater than everything else.
pub fn double_cmp(a: f64, b: f64) -> Ordering {
    match a.partial_cmp(&b) {
        Some(Ordering::Equal) | None => canonical_bits(a).cmp(&canonical_bits(b)),
        Some(o) => o,
    }
}

fn canonical_bits(d: f64) -> i64 {
    if d.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        // Reinterpreting the bits is the point: Java compares doubleToLongBits as signed longs.
        d.to_bits() as i64
    }
}

/// `Double.toString(double)`.
pub fn double_to_string(d: f64, out: &mut String) {
    if d.is_nan() {
        out.push_str("NaN");
    } else if d.is_infinite() {
        out.push_str(if d > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        java_layout(&shortest(format!("{d:e}"), d), d.abs(), out);
    }
}

/// `Float.toString(float)`.
pub fn float_to_string(f: f32, out: &mut String) {
    if f.is_nan() {
        out.push_str("NaN");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        java_layout(
            &shortest(format!("{f:e}"), f64::from(f)),
            f64::from(f.abs()),
            out,
        );
    }
}

/// Picks the digits Java prints: `sci` is Rust's shortest round-trip form (`{:e}`); when that
/// has a single digit, Java uses the two-digit decimal closest to the exact value instead
/// (`Double.MIN_VALUE` prints as `4.9E-324`, not `5.0E-324`). `{:.1e}` rounds the exact
/// binary value, and a two-digit value at least as close as the one-digit one still reads
/// back as `value`.
fn shortest(sci: String, value: f64) -> String {
    let mantissa = sci.split_once('e').map_or(sci.as_str(), |(m, _)| m);
    if mantissa.trim_start_matches('-').len() == 1 && value != 0.0 {
        format!("{value:.1e}")
    } else {
        sci
    }
}

/// Lays out Rust's `d.ddde±x` shortest form the way Java does: plain notation with at least
/// one fractional digit for magnitudes in [1e-3, 1e7), otherwise `d.dddE±x`.
fn java_layout(sci: &str, magnitude: f64, out: &mut String) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if negative {
        out.push('-');
    }
    if magnitude == 0.0 {
        out.push_str("0.0");
        return;
    }
    if (1e-3..1e7).contains(&magnitude) {
        if exp >= 0 {
            let int_len = usize::try_from(exp).unwrap_or(0) + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            let zeros = usize::try_from(-exp - 1).unwrap_or(0);
            out.extend(std::iter::repeat_n('0', zeros));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        if digits.len() > 1 {
            out.push_str(&digits[1..]);
        } else {
            out.push('0');
        }
        out.push('E');
        out.push_str(&exp.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surrogates_are_one_replacement() {
        assert_eq!(decode_utf8_lossy(b"\xed\xa0\x80"), "\u{FFFD}");
        assert_eq!(decode_utf8_lossy(b"a\xffb"), "a\u{FFFD}b");
    }

    #[test]
    fn doubles_like_java() {
        let show = |d: f64| {
            let mut s = String::new();
            double_to_string(d, &mut s);
            s
        };
        assert_eq!(show(1.0), "1.0");
        assert_eq!(show(1e7), "1.0E7");
        assert_eq!(show(0.001), "0.001");
        assert_eq!(show(0.00099), "9.9E-4");
        assert_eq!(show(-123.25), "-123.25");
        assert_eq!(show(-0.0), "-0.0");
        assert_eq!(show(0.5), "0.5");
        assert_eq!(show(f64::MIN_POSITIVE * f64::EPSILON), "4.9E-324");
        assert_eq!(show(2e-5), "2.0E-5");
    }
}
