//! Words as Java's `StringTokenizer` cuts them with its default delimiters, which is how
//! Hadoop's `WordCount` and most word-based examples split a line.
//!
//! A word is a maximal run of bytes that are not delimiters. The delimiters are space, tab,
//! newline, carriage return and form feed; nothing else separates words (not punctuation, not
//! a vertical tab, not a non-ASCII space). Bytes are not decoded, so a word is any byte string.
//!
//! # How
//!
//! Tokenizing is a word count's hottest loop after the table lookup. A byte-at-a-time loop
//! spends a compare and a hard-to-predict branch on every byte. Instead, [`Words`] classifies
//! 64 bytes at once into a bit mask (one bit per byte, set for a delimiter), with SSE2 compares
//! on x86-64, and then finds each word's start and end with a count of trailing zeros.

/// Whether `b` separates words (see the module docs).
pub const fn is_delimiter(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c)
}

/// The words of `bytes`, in order (see the module docs).
pub fn words(bytes: &[u8]) -> Words<'_> {
    let mut words = Words {
        bytes,
        window: 0,
        starts: 0,
        ends: 0,
        last_is_delimiter: true,
        open: None,
    };
    if !bytes.is_empty() {
        words.load_window();
    }
    words
}

/// An iterator over the words of a byte string; made by [`words`].
///
/// Each 64-byte window becomes two bit masks: where words start (a byte that is not a
/// delimiter after one that is) and where they end (a delimiter after a byte that is not).
/// The n-th end of a window closes the n-th start still open, so a word costs two
/// count-trailing-zeros and two clear-lowest-bit steps, with no dependence from one word to
/// the next.
#[derive(Debug, Clone)]
pub struct Words<'a> {
    bytes: &'a [u8],
    /// Offset of the 64-byte window that `starts` and `ends` describe.
    window: usize,
    /// Bits of the window's bytes where a word starts, not yet returned.
    starts: u64,
    /// Bits of the window's bytes where a word ends (the first byte after it), not yet
    /// returned.
    ends: u64,
    /// Whether the window's last byte is a delimiter (or lies past the end).
    last_is_delimiter: bool,
    /// Start of a word that began in an earlier window and has not ended yet.
    open: Option<usize>,
}

impl Words<'_> {
    /// Computes the masks of the window at `self.window`, which must start inside the bytes.
    #[inline]
    fn load_window(&mut self) {
        let delimiters = window_mask(self.bytes, self.window);
        let after_delimiter = delimiters << 1 | u64::from(self.last_is_delimiter);
        self.starts = !delimiters & after_delimiter;
        self.ends = delimiters & !after_delimiter;
        self.last_is_delimiter = delimiters >> 63 == 1;
    }

    /// Where the next word lies in the bytes: its start and end offsets.
    #[inline]
    pub fn next_span(&mut self) -> Option<(usize, usize)> {
        loop {
            if self.ends != 0 {
                let end = self.window + self.ends.trailing_zeros() as usize;
                self.ends &= self.ends - 1;
                let start = match self.open.take() {
                    Some(start) => start,
                    None => {
                        let start = self.window + self.starts.trailing_zeros() as usize;
                        self.starts &= self.starts.wrapping_sub(1);
                        start
                    }
                };
                return Some((start, end));
            }
            // Every end of this window is used up: at most one start is left, a word that
            // runs into the next window.
            if self.starts != 0 {
                self.open = Some(self.window + self.starts.trailing_zeros() as usize);
                self.starts = 0;
            }
            if self.window + 64 >= self.bytes.len() {
                // The bytes end inside this window (whose bits past the end count as
                // delimiters) or exactly at its end.
                self.window = self.bytes.len();
                return self.open.take().map(|start| (start, self.bytes.len()));
            }
            self.window += 64;
            self.load_window();
        }
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let bytes = self.bytes;
        self.next_span().map(|(start, end)| &bytes[start..end])
    }
}

/// The delimiter mask of the (up to) 64 bytes at `at`, which must be inside `bytes`: bit `i`
/// is set if byte `at + i` is a delimiter or lies past the end.
fn window_mask(bytes: &[u8], at: usize) -> u64 {
    let rest = bytes.len() - at;
    if rest >= 64 {
        return (0..4).fold(0, |mask, i| {
            mask | u64::from(chunk_mask(bytes, at + 16 * i)) << (16 * i)
        });
    }
    let full = rest / 16;
    let mut mask = (0..full).fold(0, |mask, i| {
        mask | u64::from(chunk_mask(bytes, at + 16 * i)) << (16 * i)
    });
    let tail = rest % 16;
    if tail > 0 {
        let tail_mask = if bytes.len() >= 16 {
            // The 16 bytes ending at the end overlap bytes already classified; keep the last
            // `tail` bits.
            chunk_mask(bytes, bytes.len() - 16) >> (16 - tail)
        } else {
            scalar_mask(&bytes[at + 16 * full..])
        };
        mask |= u64::from(tail_mask) << (16 * full);
    }
    mask | u64::MAX << rest
}

/// The delimiter mask of up to 16 bytes, one at a time.
fn scalar_mask(bytes: &[u8]) -> u16 {
    bytes
        .iter()
        .enumerate()
        .fold(0, |mask, (i, &b)| mask | u16::from(is_delimiter(b)) << i)
}

/// The delimiter mask of the 16 bytes at `at` (which must all be inside `bytes`).
#[inline]
#[allow(unsafe_code)]
fn chunk_mask(bytes: &[u8], at: usize) -> u16 {
    let chunk: &[u8; 16] = match bytes[at..at + 16].try_into() {
        Ok(chunk) => chunk,
        Err(_) => return scalar_mask(&bytes[at..]),
    };
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        // SAFETY: `sse2_mask` needs SSE2, and this code is only compiled when the build's
        // target has SSE2 (every x86-64 processor does).
        unsafe { sse2_mask(chunk) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        scalar_mask(chunk)
    }
}

/// [`scalar_mask`] of 16 bytes with five byte-wise SSE2 compares.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
#[inline]
fn sse2_mask(chunk: &[u8; 16]) -> u16 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_set_epi64x,
    };
    let [lo, hi] = [&chunk[..8], &chunk[8..]].map(|half| {
        let mut word = [0u8; 8];
        word.copy_from_slice(half);
        i64::from_le_bytes(word)
    });
    let v = _mm_set_epi64x(hi, lo);
    let is = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
    let any = _mm_or_si128(
        _mm_or_si128(is(b' '), is(b'\t')),
        _mm_or_si128(_mm_or_si128(is(b'\n'), is(b'\r')), is(0x0c)),
    );
    // The mask has one bit per byte, in the low 16 bits.
    _mm_movemask_epi8(any) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(bytes: &[u8]) -> Vec<&[u8]> {
        bytes
            .split(|&b| is_delimiter(b))
            .filter(|w| !w.is_empty())
            .collect()
    }

    #[test]
    fn delimiters_are_string_tokenizers() {
        let delimiters: Vec<u8> = (0..=255u8).filter(|&b| is_delimiter(b)).collect();
        assert_eq!(delimiters, vec![b'\t', b'\n', 0x0c, b'\r', b' ']);
        // Every byte value, on both sides of every chunk boundary.
        for b in 0..=255u8 {
            let mut line = vec![b'x'; 100];
            for at in [0, 15, 16, 31, 63, 64, 99] {
                line[at] = b;
            }
            assert_eq!(
                words(&line).collect::<Vec<_>>(),
                reference(&line),
                "byte {b}"
            );
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(words(b"").count(), 0);
        assert_eq!(words(b" \t \r\n\x0c").count(), 0);
        let long = vec![b'a'; 200];
        assert_eq!(words(&long).collect::<Vec<_>>(), vec![&long[..]]);
        assert_eq!(
            words(b"  a\tbb\x0cc\rd\ne  \xff\xfe,x\x0by  ").collect::<Vec<_>>(),
            vec![&b"a"[..], b"bb", b"c", b"d", b"e", b"\xff\xfe,x\x0by"]
        );
        let mut spans = words(b" ab  c");
        assert_eq!(
            (spans.next_span(), spans.next_span(), spans.next_span()),
            (Some((1, 3)), Some((5, 6)), None)
        );
        // The iterator stays finished.
        let mut it = words(b"a b");
        assert_eq!(
            (it.next(), it.next(), it.next(), it.next()),
            (Some(&b"a"[..]), Some(&b"b"[..]), None, None)
        );
    }

    proptest! {
        /// Any bytes, mostly delimiters and letters, at lengths that cross windows and chunks.
        #[test]
        fn equals_split_and_filter(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b' '), Just(b'\t'), Just(b'\n'), Just(b'\r'), Just(0x0c), Just(0x0b), Just(0u8), Just(b'a'), any::<u8>()],
                0..400,
            )
        ) {
            prop_assert_eq!(words(&bytes).collect::<Vec<_>>(), reference(&bytes));
        }

        /// Long words spanning several windows.
        #[test]
        fn long_words(lengths in proptest::collection::vec((0usize..150, 1usize..4), 0..12)) {
            let mut bytes = Vec::new();
            for (word, gap) in lengths {
                bytes.extend(std::iter::repeat_n(b'w', word));
                bytes.extend(std::iter::repeat_n(b' ', gap));
            }
            prop_assert_eq!(words(&bytes).collect::<Vec<_>>(), reference(&bytes));
        }
    }
}
