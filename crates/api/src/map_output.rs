//! The classes Hadoop would give a job's map output keys and values, so that the `Map output
//! bytes` counter counts what Hadoop counts.
//!
//! Hadoop counts the bytes of each map output pair as its serializer wrote them (in
//! `MapTask.MapOutputBuffer.collect`, before any combiner): a `Text` of one byte is two bytes,
//! an `IntWritable` four whatever its value. sluice holds keys and values in its own form (a
//! word count's count as eight bytes, a `Text` without its length), so it computes the size the
//! pair would have had from the classes the job declares. Nothing else depends on it: the
//! engine never serializes map output this way.

use sluice_hadoop::writable::vint_size;

/// How Hadoop serializes one map output key or value: its `Writable` class, seen from the bytes
/// sluice holds for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Writable {
    /// `Text`: a variable-length length, then the bytes (sluice holds the bytes).
    #[default]
    Text,
    /// `IntWritable`: four bytes, whatever sluice holds (a word count's count).
    Int,
    /// `LongWritable`: eight bytes, whatever sluice holds.
    Long,
    /// `BytesWritable` and `TypedBytesWritable`: a four-byte length, then the bytes.
    Bytes,
    /// `NullWritable`: nothing at all.
    Null,
    /// An object sluice holds serialized already: the bytes as they are.
    Raw,
    /// `VIntWritable` or `VLongWritable`, held as a number's sort form (four or eight
    /// big-endian bytes, the sign bit flipped): written by Hadoop as a variable-length number.
    SortedVarNumber,
}

impl Writable {
    /// How many bytes Hadoop's serializer writes for the object sluice holds as `bytes`.
    pub fn serialized_len(self, bytes: &[u8]) -> u64 {
        let len = bytes.len() as u64;
        match self {
            Writable::Text => vint_len(len) + len,
            Writable::Int => 4,
            Writable::Long => 8,
            Writable::Bytes => 4 + len,
            Writable::Null => 0,
            Writable::Raw => len,
            Writable::SortedVarNumber => match sorted_number(bytes) {
                Some(value) => vint_size(value) as u64,
                None => len,
            },
        }
    }

    /// How many bytes Hadoop's serializer writes for the objects `spans` pick out of `text`
    /// (the keys of a batch of counted words, word count's hot path: a `Text` key's length is
    /// computed without looking at its bytes). A span outside `text` counts as empty.
    pub fn spans_len(self, text: &[u8], spans: &[(usize, usize)]) -> u64 {
        match self {
            Writable::Text => spans
                .iter()
                .map(|&(start, end)| {
                    let len = end.saturating_sub(start) as u64;
                    len + if len < 128 { 1 } else { vint_len(len) }
                })
                .sum(),
            _ => spans
                .iter()
                .map(|&(start, end)| self.serialized_len(text.get(start..end).unwrap_or_default()))
                .sum(),
        }
    }

    /// How many bytes Hadoop's serializer writes for a count of `count` (a value a mapper
    /// emits as a count rather than as bytes): an `IntWritable` or `LongWritable` whole, a
    /// `Text` as its decimal digits.
    pub fn count_len(self, count: u64) -> u64 {
        let digits = u64::from(count.checked_ilog10().unwrap_or(0)) + 1;
        match self {
            Writable::Text => vint_len(digits) + digits,
            Writable::Bytes => 4 + digits,
            Writable::Raw => digits,
            Writable::Int => 4,
            Writable::Long => 8,
            Writable::Null => 0,
            Writable::SortedVarNumber => vint_size(i64::try_from(count).unwrap_or(i64::MAX)) as u64,
        }
    }
}

/// The classes of a job's map output keys and values (default: `Text` and `Text`, as Hadoop
/// Streaming and text jobs have them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MapOutputTypes {
    /// The keys' class.
    pub key: Writable,
    /// The values' class.
    pub value: Writable,
}

impl MapOutputTypes {
    /// Keys of class `key`, values of class `value`.
    pub const fn new(key: Writable, value: Writable) -> MapOutputTypes {
        MapOutputTypes { key, value }
    }

    /// The bytes Hadoop counts for the pair sluice holds as `key` and `value`.
    pub fn pair_len(&self, key: &[u8], value: &[u8]) -> u64 {
        self.key.serialized_len(key) + self.value.serialized_len(value)
    }

    /// The bytes Hadoop counts for the pair of `key` and a count of `count`.
    pub fn count_pair_len(&self, key: &[u8], count: u64) -> u64 {
        self.key.serialized_len(key) + self.value.count_len(count)
    }
}

/// The length of a length written as `WritableUtils.writeVInt` writes it.
fn vint_len(len: u64) -> u64 {
    vint_size(i64::try_from(len).unwrap_or(i64::MAX)) as u64
}

/// The number a sort form holds (big-endian, the sign bit flipped), if it is four or eight
/// bytes long.
fn sorted_number(bytes: &[u8]) -> Option<i64> {
    match *bytes {
        [a, b, c, d] => Some(i64::from(i32::from_be_bytes([a ^ 0x80, b, c, d]))),
        [a, b, c, d, e, f, g, h] => Some(i64::from_be_bytes([a ^ 0x80, b, c, d, e, f, g, h])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `WritableUtils.getVIntSize` of Hadoop 3.4.2 for these lengths (run in jshell).
    const HADOOP_VINT_SIZES: [(u64, u64); 9] = [
        (0, 1),
        (127, 1),
        (128, 2),
        (255, 2),
        (256, 3),
        (65_535, 3),
        (65_536, 4),
        (16_777_215, 4),
        (16_777_216, 5),
    ];

    #[test]
    fn a_text_is_its_bytes_after_hadoops_variable_length_length() {
        for (len, vint) in HADOOP_VINT_SIZES {
            let bytes = vec![b'x'; usize::try_from(len).unwrap()];
            assert_eq!(Writable::Text.serialized_len(&bytes), vint + len, "{len}");
        }
    }

    #[test]
    fn spans_are_sized_as_the_objects_they_pick_out() {
        let text = vec![b'w'; 400];
        let spans = [(0, 0), (0, 127), (10, 138), (0, 300)];
        for writable in [
            Writable::Text,
            Writable::Bytes,
            Writable::Raw,
            Writable::Int,
        ] {
            let one_by_one: u64 = spans
                .iter()
                .map(|&(s, e)| writable.serialized_len(&text[s..e]))
                .sum();
            assert_eq!(
                writable.spans_len(&text, &spans),
                one_by_one,
                "{writable:?}"
            );
        }
        // Lengths 127, 128 and 300 take one, two and three bytes of length (Hadoop's vint).
        assert_eq!(
            Writable::Text.spans_len(&text, &spans[1..]),
            1 + 127 + 2 + 128 + 3 + 300
        );
    }

    #[test]
    fn fixed_classes_ignore_what_sluice_holds() {
        let count = 7u64.to_le_bytes();
        assert_eq!(Writable::Int.serialized_len(&count), 4);
        assert_eq!(Writable::Long.serialized_len(b"1"), 8);
        assert_eq!(Writable::Null.serialized_len(b"abc"), 0);
        assert_eq!(Writable::Bytes.serialized_len(b"abc"), 7);
        assert_eq!(Writable::Raw.serialized_len(b"abc"), 3);
    }

    #[test]
    fn counts_are_sized_as_their_class_writes_them() {
        assert_eq!(Writable::Int.count_len(123_456), 4);
        assert_eq!(Writable::Long.count_len(1), 8);
        // "0" and "123456" as Text.
        assert_eq!(Writable::Text.count_len(0), 2);
        assert_eq!(Writable::Text.count_len(123_456), 7);
        assert_eq!(Writable::Bytes.count_len(42), 6);
    }

    #[test]
    fn sort_forms_of_numbers_are_sized_as_variable_length_numbers() {
        let int = |v: i32| {
            let mut b = v.to_be_bytes();
            b[0] ^= 0x80;
            b
        };
        let long = |v: i64| {
            let mut b = v.to_be_bytes();
            b[0] ^= 0x80;
            b
        };
        // WritableUtils.getVIntSize: -112..=127 in one byte, else a length byte and the
        // magnitude's bytes.
        assert_eq!(Writable::SortedVarNumber.serialized_len(&int(5)), 1);
        assert_eq!(Writable::SortedVarNumber.serialized_len(&int(-112)), 1);
        assert_eq!(Writable::SortedVarNumber.serialized_len(&int(-113)), 2);
        assert_eq!(Writable::SortedVarNumber.serialized_len(&int(300)), 3);
        assert_eq!(Writable::SortedVarNumber.serialized_len(&long(i64::MIN)), 9);
        assert_eq!(Writable::SortedVarNumber.serialized_len(&long(1 << 40)), 7);
    }

    #[test]
    fn a_pair_is_its_key_and_its_value() {
        // Hadoop 3.4.2's WordCount on "a b\nb c\n" counts 24 map output bytes for its four
        // pairs of a one-letter Text and an IntWritable.
        let types = MapOutputTypes::new(Writable::Text, Writable::Int);
        let total: u64 = [b"a", b"b", b"b", b"c"]
            .iter()
            .map(|w| types.count_pair_len(*w, 1))
            .sum();
        assert_eq!(total, 24);
        assert_eq!(MapOutputTypes::default().pair_len(b"hello", b"world"), 12);
    }
}
