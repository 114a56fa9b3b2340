//! Hadoop's formats, reproduced byte for byte.
//!
//! sluice runs Hadoop's jobs and must give Hadoop's answers: the same partition numbers, the
//! same sort order, the same bytes in the output files. Everything in this crate reproduces
//! one of Hadoop's (or the JDK's) observable behaviours exactly; key-field options, typed bytes,
//! partitioning, TeraGen rows and `Writable`s are checked against vectors that Hadoop itself
//! produced (see `tests/`).
//!
//! # Where this crate sits
//!
//! Below `sluice-api`, beside `sluice-format`: `sluice-format` holds sluice's own formats (the
//! records, blocks and runs its stages hand each other), this crate holds Hadoop's. It depends
//! on no other sluice crate, and `sluice-format` does not depend on it. Its users are the
//! programming model (`sluice-api`'s `HashPartitioner`), the streaming front end
//! (`sluice-streaming`), the built-in jobs (`sluice-jobs`: word count, TeraGen, TeraSort,
//! TeraValidate), and the JNI library that runs inside Hadoop's map tasks (`sluice-jni`), which
//! reads, writes and sorts Hadoop's own serialised keys and values ([`writable`]).
//!
//! # Modules
//!
//! * [`conf_vars`]: `${name}` in configuration values, substituted as Hadoop's
//!   `Configuration` does.
//! * [`java`]: Java's string order, string hash, lossy UTF-8 decoding and `Double.toString`,
//!   which the modules below need to print and order values as Hadoop does.
//! * [`java_regex`]: Java's regular expressions (Hadoop's `grep` example) written in the syntax
//!   of Rust's `regex` crate, with Java's meaning.
//! * [`keyfield`]: Hadoop's `KeyFieldBasedComparator` and `KeyFieldBasedPartitioner`
//!   (`-k2,2nr`-style key options), reproducing Hadoop's exact order and partition numbers.
//! * [`typedbytes`]: Hadoop Streaming's typed bytes (`-io typedbytes`): cutting a child's
//!   output into raw values, encoding map input, and the text Hadoop prints for a value.
//! * [`tera`]: the rows Hadoop's TeraGen writes (byte-exact, any row number) and the
//!   TeraGen/TeraValidate checksum.
//! * [`random_text`]: the word list of Hadoop's `RandomTextWriter` example.
//! * [`partition`]: Hadoop's `HashPartitioner` and `Text.hashCode()`, which decide the reducer
//!   (and so the part file) of each key.
//! * [`words`]: the words of a line as Java's `StringTokenizer` cuts them, classified 64 bytes
//!   at a time.
//! * [`writable`]: Hadoop's `Writable` serialisation (`WritableUtils` vints, `Text`,
//!   `BytesWritable`, `IntWritable`, ...) and the raw comparators Hadoop sorts serialised keys
//!   with.
//! * [`writable_type`]: the `Writable` classes a SequenceFile names, and a serialised value's
//!   Java `toString()` and typed bytes, as Hadoop Streaming shows them to programs.
//!
//! # Why `words` is here
//!
//! A word count's output is only right if its words are the words Hadoop's `WordCount`
//! example finds, and those are whatever `java.util.StringTokenizer` with its default
//! delimiters returns (space, tab, newline, carriage return, form feed; not a vertical tab,
//! not punctuation). The tokenizer is therefore a reproduction of Java behaviour that Hadoop's
//! output depends on, like everything else here, not one of sluice's own formats; its speed
//! tricks do not change that.
// The one `unsafe` block calls the SSE2 classifier of `words` (see its SAFETY comment);
// everything else is safe.
#![deny(unsafe_code)]

pub mod conf_vars;
pub mod java;
pub mod java_regex;
pub mod keyfield;
pub mod partition;
pub mod random_text;
pub mod tera;
pub mod typedbytes;
pub mod words;
pub mod writable;
pub mod writable_type;
