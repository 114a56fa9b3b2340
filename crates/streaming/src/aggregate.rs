//! `-reducer aggregate`: Hadoop's value aggregators.
//!
//! The mapper emits keys `TYPE:id` (`LongValueSum:word`, `UniqValueCount:user`, ...) with a
//! value each; the reducer aggregates the values of each key with the aggregator `TYPE` names
//! (case-insensitive) and writes `id \t report`. The combiner aggregates as well but writes
//! what the reducer can go on aggregating (a partial sum, the unique values, `value\tcount`
//! pairs), under the unchanged key.
//!
//! Keys and values are decoded as Java decodes a `Text` (bad UTF-8 becomes U+FFFD), strings
//! compare as Java's `String.compareTo` and doubles print as Java's `Double.toString`, because
//! Hadoop's aggregators work on Java strings.

use std::collections::BTreeMap;

use sluice_hadoop::java;

use sluice_api::{Emit, ExecError, Reducer, Values};

/// The aggregator of one key.
enum Aggregator {
    LongSum(i64),
    LongMax(i64),
    LongMin(i64),
    StringMax(Option<String>),
    StringMin(Option<String>),
    DoubleSum(f64),
    /// Unique values, in Java string order.
    Uniq(BTreeMap<JavaString, ()>),
    /// Occurrences per value, in Java string order.
    Histogram(BTreeMap<JavaString, i64>),
}

/// A string ordered as Java orders strings (by UTF-16 code units).
#[derive(PartialEq, Eq)]
struct JavaString(String);

impl Ord for JavaString {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        java::string_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for JavaString {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Aggregator {
    fn for_type(name: &str) -> Option<Aggregator> {
        let is = |known: &str| known.eq_ignore_ascii_case(name);
        Some(if is("LongValueSum") {
            Aggregator::LongSum(0)
        } else if is("LongValueMax") {
            Aggregator::LongMax(i64::MIN)
        } else if is("LongValueMin") {
            Aggregator::LongMin(i64::MAX)
        } else if is("StringValueMax") {
            Aggregator::StringMax(None)
        } else if is("StringValueMin") {
            Aggregator::StringMin(None)
        } else if is("DoubleValueSum") {
            Aggregator::DoubleSum(0.0)
        } else if is("UniqValueCount") {
            Aggregator::Uniq(BTreeMap::new())
        } else if is("ValueHistogram") {
            Aggregator::Histogram(BTreeMap::new())
        } else {
            return None;
        })
    }

    fn add(&mut self, value: &str) -> Result<(), ExecError> {
        match self {
            Aggregator::LongSum(sum) => *sum = sum.wrapping_add(parse_long(value)?),
            Aggregator::LongMax(max) => *max = (*max).max(parse_long(value)?),
            Aggregator::LongMin(min) => *min = (*min).min(parse_long(value)?),
            Aggregator::StringMax(max) => {
                if max
                    .as_deref()
                    .is_none_or(|m| java::string_cmp(m, value).is_lt())
                {
                    *max = Some(value.to_string());
                }
            }
            Aggregator::StringMin(min) => {
                if min
                    .as_deref()
                    .is_none_or(|m| java::string_cmp(m, value).is_gt())
                {
                    *min = Some(value.to_string());
                }
            }
            Aggregator::DoubleSum(sum) => *sum += parse_double(value)?,
            Aggregator::Uniq(items) => {
                items.insert(JavaString(value.to_string()), ());
            }
            Aggregator::Histogram(items) => {
                let (item, count) = match value.rfind('\t') {
                    Some(at) => (&value[..at], parse_long(&value[at + 1..])?),
                    None => (value, 1),
                };
                let slot = items.entry(JavaString(item.to_string())).or_default();
                *slot = slot.wrapping_add(count);
            }
        }
        Ok(())
    }

    /// What the reducer writes.
    fn report(&self) -> String {
        match self {
            Aggregator::LongSum(v) | Aggregator::LongMax(v) | Aggregator::LongMin(v) => {
                v.to_string()
            }
            Aggregator::StringMax(v) | Aggregator::StringMin(v) => {
                v.clone().unwrap_or_else(|| "null".into())
            }
            Aggregator::DoubleSum(v) => double(*v),
            Aggregator::Uniq(items) => items.len().to_string(),
            Aggregator::Histogram(items) => histogram_report(items),
        }
    }

    /// What the combiner writes: values the reducer can aggregate further.
    fn combiner_output(&self) -> Vec<String> {
        match self {
            Aggregator::Uniq(items) => items.keys().map(|k| k.0.clone()).collect(),
            Aggregator::Histogram(items) => items
                .iter()
                .map(|(k, count)| format!("{}\t{count}", k.0))
                .collect(),
            other => vec![other.report()],
        }
    }
}

/// The number of distinct values, then the minimum, median, maximum, average and standard
/// deviation of their counts, tab-separated (Hadoop's `ValueHistogram.getReport`).
fn histogram_report(items: &BTreeMap<JavaString, i64>) -> String {
    let mut counts: Vec<i64> = items.values().copied().collect();
    counts.sort_unstable();
    let mut report = counts.len().to_string();
    if let (Some(first), Some(last)) = (counts.first(), counts.last()) {
        let total = counts.iter().fold(0i64, |acc, c| acc.wrapping_add(*c));
        let n = counts.len() as f64;
        let average = total as f64 / n;
        let variance = counts
            .iter()
            .map(|&c| {
                let d = c as f64 - average;
                d * d
            })
            .sum::<f64>()
            / n;
        report.push_str(&format!(
            "\t{first}\t{}\t{last}\t{}\t{}",
            counts[counts.len() / 2],
            double(average),
            double(variance.sqrt())
        ));
    }
    report
}

fn double(v: f64) -> String {
    let mut s = String::new();
    java::double_to_string(v, &mut s);
    s
}

/// Java's `Long.parseLong`: an optional sign and decimal digits, nothing else.
fn parse_long(text: &str) -> Result<i64, ExecError> {
    text.parse().map_err(|_| {
        ExecError::user(format!(
            "aggregate: value {text:?} is not a whole number (Long.parseLong would fail too)"
        ))
    })
}

/// Java's `Double.parseDouble`: surrounding whitespace and a `d`/`f` suffix are allowed.
fn parse_double(text: &str) -> Result<f64, ExecError> {
    let trimmed = text.trim();
    let number = trimmed
        .strip_suffix(['d', 'D', 'f', 'F'])
        .unwrap_or(trimmed);
    let parsed = match number {
        "NaN" | "+NaN" | "-NaN" => Ok(f64::NAN),
        "Infinity" | "+Infinity" => Ok(f64::INFINITY),
        "-Infinity" => Ok(f64::NEG_INFINITY),
        _ if number
            .chars()
            .any(|c| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E')) =>
        {
            Err(())
        }
        _ => number.parse::<f64>().map_err(|_| ()),
    };
    parsed.map_err(|()| {
        ExecError::user(format!(
            "aggregate: value {text:?} is not a number (Double.parseDouble would fail too)"
        ))
    })
}

/// Hadoop's `ValueAggregatorReducer` (`combine == false`) or `ValueAggregatorCombiner`.
pub(super) struct AggregateReducer {
    /// Combiner mode: keep the key, write partial aggregates.
    pub(super) combine: bool,
}

impl Reducer for AggregateReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let key_text = java::decode_utf8_lossy(key);
        let Some((kind, id)) = key_text.split_once(':') else {
            return Err(ExecError::user(format!(
                "aggregate: key {key_text:?} has no aggregator type; the mapper must emit \
                 keys like LongValueSum:word"
            )));
        };
        let Some(mut aggregator) = Aggregator::for_type(kind) else {
            return Err(ExecError::user(format!(
                "aggregate: unknown aggregator type {kind:?} in key {key_text:?} (known: \
                 LongValueSum, LongValueMax, LongValueMin, StringValueMax, StringValueMin, \
                 DoubleValueSum, UniqValueCount, ValueHistogram)"
            )));
        };
        while let Some(value) = values.next_value()? {
            aggregator.add(&java::decode_utf8_lossy(value))?;
        }
        if self.combine {
            for value in aggregator.combiner_output() {
                out.emit(key, value.as_bytes())?;
            }
            Ok(())
        } else {
            out.emit(id.as_bytes(), aggregator.report().as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aggregate(kind: &str, values: &[&str]) -> (String, Vec<String>) {
        let mut a = Aggregator::for_type(kind).unwrap();
        for v in values {
            a.add(v).unwrap();
        }
        (a.report(), a.combiner_output())
    }

    #[test]
    fn numeric_aggregators() {
        assert_eq!(aggregate("LongValueSum", &["1", "2", "-5"]).0, "-2");
        assert_eq!(aggregate("longvaluesum", &["7"]).0, "7");
        assert_eq!(aggregate("LongValueMax", &["1", "9", "-5"]).0, "9");
        assert_eq!(aggregate("LongValueMin", &["1", "9", "-5"]).0, "-5");
        assert_eq!(
            aggregate("DoubleValueSum", &["1.5", " 2 ", "1e1"]).0,
            "13.5"
        );
        assert!(Aggregator::for_type("LongValueSum")
            .unwrap()
            .add("x")
            .is_err());
        assert!(Aggregator::for_type("Bogus").is_none());
    }

    #[test]
    fn string_aggregators_use_java_order() {
        assert_eq!(aggregate("StringValueMax", &["b", "a", "c"]).0, "c");
        assert_eq!(aggregate("StringValueMin", &["b", "a", "c"]).0, "a");
        // U+FFFD sorts below U+1F600 (a surrogate pair starting 0xD83D) in Java's UTF-16 order.
        assert_eq!(
            aggregate("StringValueMax", &["\u{fffd}", "\u{1f600}"]).0,
            "\u{fffd}"
        );
    }

    #[test]
    fn uniq_and_histogram() {
        let (report, combined) = aggregate("UniqValueCount", &["x", "y", "x"]);
        assert_eq!(report, "2");
        assert_eq!(combined, vec!["x", "y"]);
        // Counts a:3, b:1, c:2 -> sorted 1 2 3: min 1, median 2, max 3, mean 2.0,
        // sd sqrt(2/3).
        let (report, combined) = aggregate("ValueHistogram", &["a", "a\t2", "b", "c\t2"]);
        assert_eq!(report, "3\t1\t2\t3\t2.0\t0.816496580927726");
        assert_eq!(combined, vec!["a\t3", "b\t1", "c\t2"]);
        assert_eq!(aggregate("ValueHistogram", &[]).0, "0");
    }
}
