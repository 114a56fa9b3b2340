//! The words of Hadoop's `RandomTextWriter` example
//! (`org.apache.hadoop.examples.RandomTextWriter`), which builds its keys and values from
//! these 1000 words, each drawn uniformly and followed by one space.
//!
//! The list is Hadoop's, in Hadoop's order (`random_text_words.txt`, one word a line), so that
//! generated text has the vocabulary, word lengths and byte distribution of the data
//! RandomTextWriter writes; the random choices themselves are sluice's own.

/// The word list, one word a line.
const WORDS: &str = include_str!("random_text_words.txt");

/// How many words there are.
pub const WORD_COUNT: usize = 1000;

/// RandomTextWriter's words, in Hadoop's order.
pub fn words() -> Vec<&'static [u8]> {
    WORDS.lines().map(str::as_bytes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousand_distinct_printable_words() {
        let words = words();
        assert_eq!(words.len(), WORD_COUNT);
        let distinct: std::collections::HashSet<_> = words.iter().collect();
        assert_eq!(distinct.len(), WORD_COUNT);
        assert!(words
            .iter()
            .all(|w| !w.is_empty() && w.iter().all(|b| b.is_ascii_graphic())));
        // Hadoop's first and last words.
        assert_eq!(words[0], b"diurnalness");
        assert_eq!(words[WORD_COUNT - 1], b"cheesecutter");
    }
}
