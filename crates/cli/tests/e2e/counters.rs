//! The report's counters against numbers computed by the references: the line count (Hadoop
//! LineReader rules; a line double-read or lost at a split boundary changes it), the word count
//! and the number of distinct words.

use crate::corpus::messy_corpus;
use crate::util::{counter, gen_text, Case};

/// Checks the word count counters of `report` against the reference `stats`.
fn assert_wordcount_counters(report: &serde_json::Value, stats: &serde_json::Value, what: &str) {
    let lines = stats["lines"].as_u64().unwrap();
    let words = stats["words"].as_u64().unwrap();
    let distinct = stats["distinct"].as_u64().unwrap();
    println!("{what}: lines={lines} words={words} distinct={distinct}");
    assert_eq!(
        counter(report, "map_input_records"),
        lines,
        "{what}: map_input_records"
    );
    assert_eq!(
        counter(report, "map_output_records"),
        words,
        "{what}: map_output_records"
    );
    assert_eq!(
        counter(report, "output_records"),
        distinct,
        "{what}: output_records"
    );
    assert_eq!(
        counter(report, "reduce_input_groups"),
        counter(report, "output_records"),
        "{what}: reduce_input_groups"
    );
    // As in Hadoop, the combiner's counters include its runs over merged spills: every word
    // goes through it once when its task flushes, and a record may be summed again by a merge.
    let (combine_input, combine_output) = (
        counter(report, "combine_input_records"),
        counter(report, "combine_output_records"),
    );
    assert!(combine_input >= words, "{what}: combine_input_records");
    assert!(combine_output >= distinct, "{what}: combine_output_records");
    // What merges read was combiner output before, so it left the count of records on their
    // way to the reducers; what they wrote joined it.
    assert_eq!(
        counter(report, "reduce_input_records"),
        combine_output - (combine_input - words),
        "{what}: every combined record reaches a reducer or a merge"
    );
}

#[test]
fn wordcount_counters_messy() {
    let dir = tempfile::tempdir().unwrap();
    let huge = messy_corpus(&dir.path().join("huge"), true);
    let small = messy_corpus(&dir.path().join("small"), false);
    let c = Case::new("wordcount", &[&huge]).check(dir.path(), "huge");
    assert_wordcount_counters(&c.report, &c.stats, "messy corpus, 1 reducer");
    let c = Case::new("wordcount", &[&small])
        .reducers(3)
        .engine(&["--threads", "3", "--split-size", "1KiB"])
        .check(dir.path(), "tiny-splits");
    assert_wordcount_counters(&c.report, &c.stats, "messy corpus, 1 KiB splits");
}

#[test]
fn wordcount_counters_generated() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("gen");
    gen_text(&corpus, "3MiB", 2, 5);
    let c = Case::new("wordcount", &[&corpus])
        .reducers(2)
        .engine(&["--threads", "2", "--split-size", "100KiB"])
        .check(dir.path(), "gen");
    assert_wordcount_counters(&c.report, &c.stats, "generated corpus");
}

/// Sort: one output record per input line, one input line per line of the reference.
#[test]
fn sort_counters_messy() {
    let dir = tempfile::tempdir().unwrap();
    let small = messy_corpus(dir.path(), false);
    let c = Case::new("sort", &[&small])
        .reducers(2)
        .engine(&["--threads", "2", "--split-size", "1KiB"])
        .check(dir.path(), "sort");
    let (report, stats) = (c.report, c.stats);
    let lines = stats["lines"].as_u64().unwrap();
    assert_eq!(counter(&report, "map_input_records"), lines);
    assert_eq!(counter(&report, "map_output_records"), lines);
    assert_eq!(counter(&report, "reduce_input_records"), lines);
    assert_eq!(counter(&report, "output_records"), lines);
}
