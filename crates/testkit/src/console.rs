//! Reading the counters a job client prints, as Hadoop's and sluice's consoles both lay them
//! out: a `Counters: N` line, then each group's name indented by one tab and its counters,
//! `name=value`, by two.

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

/// The name of the group that holds the [`RECORD_COUNTERS`].
pub const FRAMEWORK_GROUP: &str = "Map-Reduce Framework";

/// One job's counter block: its groups and, in each, its counters, in the order printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    groups: Vec<(String, Vec<(String, u64)>)>,
}

impl Counters {
    /// The counters of `group`, in printed order. Group names are compared trimmed: Hadoop
    /// prints the input and output format groups' names with a trailing space.
    pub fn group(&self, group: &str) -> Option<&[(String, u64)]> {
        self.groups
            .iter()
            .find(|(name, _)| name == group.trim())
            .map(|(_, counters)| counters.as_slice())
    }

    /// The value of counter `name` in `group`.
    pub fn get(&self, group: &str, name: &str) -> Option<u64> {
        lookup(self.group(group)?, name)
    }

    /// The value of the first counter called `name`, whichever group holds it.
    pub fn find(&self, name: &str) -> Option<u64> {
        self.groups
            .iter()
            .find_map(|(_, counters)| lookup(counters, name))
    }

    /// The groups' names, in printed order.
    pub fn group_names(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().map(|(name, _)| name.as_str())
    }
}

fn lookup(counters: &[(String, u64)], name: &str) -> Option<u64> {
    counters
        .iter()
        .find_map(|(n, value)| (n == name).then_some(*value))
}

/// The counter blocks of a job log, one per job in the order printed. A block starts at a
/// line that ends in `Counters: N` (`... INFO mapreduce.Job: Counters: 35`) and ends at the
/// first line that is neither indented nor a warning logged in the middle of it. A counter
/// whose value is not a number is left out.
pub fn counter_blocks(log: &str) -> Vec<Counters> {
    let mut blocks: Vec<Counters> = Vec::new();
    let mut inside = false;
    for line in log.lines() {
        if starts_block(line) {
            blocks.push(Counters::default());
            inside = true;
            continue;
        }
        let Some(block) = blocks.last_mut().filter(|_| inside) else {
            continue;
        };
        if let Some(counter) = line.strip_prefix("\t\t") {
            let parsed = counter
                .trim()
                .split_once('=')
                .and_then(|(name, value)| Some((name.to_string(), value.parse().ok()?)));
            if let (Some(parsed), Some((_, counters))) = (parsed, block.groups.last_mut()) {
                counters.push(parsed);
            }
        } else if let Some(group) = line.strip_prefix('\t') {
            block.groups.push((group.trim().to_string(), Vec::new()));
        } else if !is_warning(line) {
            inside = false;
        }
    }
    blocks
}

/// The value of counter `name` in a job log: in the first block that has it, in the first
/// group that has it; `None` when no block does.
pub fn counter(log: &str, name: &str) -> Option<u64> {
    counter_blocks(log)
        .iter()
        .find_map(|block| block.find(name))
}

fn starts_block(line: &str) -> bool {
    line.rsplit_once("Counters: ")
        .is_some_and(|(_, n)| !n.is_empty() && n.trim_end().bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `line` is a log record at WARN level (`WARN ...`, or Hadoop's console layout
/// `yy/MM/dd HH:mm:ss WARN ...`).
fn is_warning(line: &str) -> bool {
    line.split_whitespace().take(3).any(|word| word == "WARN")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "26/12/02 02:10:00 INFO mapreduce.Job: Counters: 5\n\
                       \tMap-Reduce Framework\n\t\tMap input records=12\n\
                       \t\tMap input records skipped=3\n\t\tMap output records=x\n\
                       26/12/02 02:10:00 WARN impl.MetricsSystemImpl: a warning\n\
                       \tFile Output Format Counters \n\t\tBytes Written=68\n\
                       26/12/02 02:10:01 INFO streaming.StreamJob: Output directory: out\n\
                       \tnot a group\n\t\tMap input records=99\n\
                       INFO Job: Counters: 1\n\tMy Group\n\t\tlines=3\n";

    #[test]
    fn blocks_hold_their_groups_in_order_until_an_unindented_record() {
        let blocks = counter_blocks(LOG);
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            blocks[0].group_names().collect::<Vec<_>>(),
            ["Map-Reduce Framework", "File Output Format Counters"]
        );
        assert_eq!(
            blocks[0].group(FRAMEWORK_GROUP).unwrap(),
            [
                ("Map input records".to_string(), 12),
                ("Map input records skipped".to_string(), 3)
            ]
        );
        assert_eq!(
            blocks[0].get("File Output Format Counters", "Bytes Written"),
            Some(68)
        );
        assert_eq!(blocks[1].get("My Group", "lines"), Some(3));
        assert_eq!(blocks[1].group("not a group"), None);
    }

    #[test]
    fn a_counter_is_read_by_its_whole_name_from_the_first_block_with_it() {
        assert_eq!(counter(LOG, "Map input records"), Some(12));
        assert_eq!(counter(LOG, "Map input records skipped"), Some(3));
        assert_eq!(counter(LOG, "Map output records"), None);
        assert_eq!(counter(LOG, "lines"), Some(3));
        assert_eq!(counter(LOG, "Reduce output records"), None);
        assert_eq!(
            counter("\t\tMap input records=1\n", "Map input records"),
            None
        );
    }
}
