//! Reading the counters a job client prints, as Hadoop's and sluice's consoles both lay them
//! out (`\t\tName=value` under a group line).

/// The framework counters that count records and the serialised bytes of records. They do
/// not depend on where spills fall, how often a combiner ran or how either engine merges, so
/// sluice must print each with the value Hadoop prints for the same job.
pub const RECORD_COUNTERS: [&str; 5] = [
    "Map input records",
    "Map output records",
    "Map output bytes",
    "Reduce input groups",
    "Reduce output records",
];

/// The value of the counter `name` in a job's log: the first line that reads `name=N` once
/// its indentation is trimmed; `None` when no line does or its value is not a number.
pub fn counter(log: &str, name: &str) -> Option<u64> {
    log.lines().find_map(|line| {
        line.trim_start()
            .strip_prefix(name)?
            .strip_prefix('=')?
            .trim()
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_is_read_from_its_own_line_only() {
        let log = "\tMap-Reduce Framework\n\t\tMap input records=12\n\
                   \t\tMap input records skipped=3\n\t\tMap output records=x\n";
        assert_eq!(counter(log, "Map input records"), Some(12));
        assert_eq!(counter(log, "Map input records skipped"), Some(3));
        assert_eq!(counter(log, "Map output records"), None);
        assert_eq!(counter(log, "Reduce output records"), None);
    }
}
