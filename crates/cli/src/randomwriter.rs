//! `sluice gen randomwriter` and `sluice gen randomtextwriter`: the SequenceFiles Hadoop's
//! `RandomWriter` and `RandomTextWriter` examples write, the input of Hadoop's `sort`
//! benchmark.
//!
//! As in Hadoop, each "map" writes one `part-m-NNNNN` SequenceFile of records until the
//! payload of its keys and values (without their length prefixes) reaches the bytes per map,
//! the last record overshooting it; a record's key and value sizes are drawn uniformly from
//! `min..max` (max excluded, or exactly `min` when they are equal), as Java's
//! `Random.nextInt(max - min)` draws them. RandomWriter's keys and values are `BytesWritable`s
//! of random bytes; RandomTextWriter's are `Text`s of words from Hadoop's list
//! (`sluice_hadoop::random_text`), each followed by a space. Hadoop's configuration keys
//! (`mapreduce.randomwriter.*`, `mapreduce.randomtextwriter.*`, and the output compression
//! keys of `SequenceFileOutputFormat`) are read from `-D`; options win over them.
//!
//! Unlike Hadoop, which seeds each map from the clock, every file has its own generator seeded
//! from (seed, file number): the same seed and settings give the same records, whatever the
//! number of threads (the sync markers, random in Hadoop too, differ from run to run).

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use sluice_api::{Counter, JobStatus, Phase};
use sluice_exec::JobOutput;
use sluice_hadoop::{random_text, writable};
use sluice_io::seqfile::{SeqFileWriter, SeqWriteOptions};
use sluice_io::{JobCommitter, PartAttempt, DEFAULT_WRITE_BUFFER};

use crate::gen::SplitMix64;
use crate::random::fill_random;
use crate::size::human_bytes;
use crate::{
    at_least_one, default_threads, parse_any_location, parse_size_arg, progress, stores, tasks,
    thread_count,
};

/// Options of `sluice gen randomwriter` and `sluice gen randomtextwriter`.
#[derive(Args)]
pub(crate) struct RandomWriterArgs {
    /// Output directory (local, file://, hdfs:// or s3://; a plain path is on fs.defaultFS);
    /// must not exist.
    #[arg(long, short = 'o', value_parser = parse_any_location)]
    output: String,
    /// Total bytes of keys and values to write (Hadoop's `totalbytes`); the number of files is
    /// this divided by the bytes per map, rounded down (one file of all of it if that is 0).
    #[arg(long, value_parser = parse_size_arg)]
    size: Option<u64>,
    /// Bytes of keys and values per file (Hadoop's `bytespermap`) [default: 1GiB].
    #[arg(long, value_parser = parse_size_arg)]
    bytes_per_map: Option<u64>,
    /// Number of files ("maps"), each of the bytes per map; instead of --size.
    #[arg(long, value_parser = at_least_one, conflicts_with = "size")]
    maps: Option<usize>,
    /// Seed: the same seed and settings give the same records.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// A Hadoop setting: the generator's own (mapreduce.randomwriter.minkey, maxkey,
    /// minvalue, maxvalue, bytespermap, totalbytes, mapsperhost; for randomtextwriter
    /// mapreduce.randomtextwriter.minwordskey, maxwordskey, minwordsvalue, maxwordsvalue,
    /// bytespermap, totalbytes, mapsperhost: without a total, as many files as one host's
    /// maps), the output's compression
    /// (mapreduce.output.fileoutputformat.compress=true, .compress.codec=CLASS,
    /// .compress.type=RECORD|BLOCK), or a store's (fs.defaultFS, ...). Repeatable.
    #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = stores::parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Files written at once [default: number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Which of Hadoop's two generators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Generator {
    /// `RandomWriter`: `BytesWritable` keys and values of random bytes.
    Bytes,
    /// `RandomTextWriter`: `Text` keys and values of random words.
    Text,
}

impl Generator {
    fn name(self) -> &'static str {
        match self {
            Generator::Bytes => "randomwriter",
            Generator::Text => "randomtextwriter",
        }
    }

    /// The prefix of the generator's Hadoop configuration keys.
    fn prefix(self) -> &'static str {
        match self {
            Generator::Bytes => "mapreduce.randomwriter.",
            Generator::Text => "mapreduce.randomtextwriter.",
        }
    }

    /// The names (after the prefix) of the key and value bounds, and their defaults.
    fn bounds(self) -> [(&'static str, u32); 4] {
        match self {
            Generator::Bytes => [
                ("minkey", 10),
                ("maxkey", 1000),
                ("minvalue", 0),
                ("maxvalue", 20000),
            ],
            Generator::Text => [
                ("minwordskey", 5),
                ("maxwordskey", 10),
                ("minwordsvalue", 10),
                ("maxwordsvalue", 100),
            ],
        }
    }

    fn class(self) -> &'static str {
        match self {
            Generator::Bytes => "org.apache.hadoop.io.BytesWritable",
            Generator::Text => "org.apache.hadoop.io.Text",
        }
    }
}

/// A size drawn uniformly from `min..max` (Java's `min + nextInt(max - min)`), or `min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    min: u32,
    max: u32,
}

impl Range {
    fn draw(self, rng: &mut SplitMix64) -> usize {
        let span = u64::from(self.max - self.min);
        let offset = if span == 0 { 0 } else { rng.below(span) };
        // `min + offset` is below `max`, a u32.
        usize::try_from(u64::from(self.min) + offset).unwrap_or(usize::MAX)
    }
}

/// What every file of a run is written with.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    generator: Generator,
    maps: usize,
    bytes_per_map: u64,
    key: Range,
    value: Range,
    options: SeqWriteOptions,
}

/// The plan of `args`: Hadoop's settings from `-D`, options over them, Hadoop's defaults
/// under them; the number of maps as Hadoop's `run()` computes it.
pub(crate) fn plan(generator: Generator, args: &RandomWriterArgs) -> Result<Plan> {
    let prefix = generator.prefix();
    let setting = |name: &str| -> Option<&str> {
        let key = format!("{prefix}{name}");
        args.define
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.trim())
    };
    let number = |name: &str| -> Result<Option<u64>> {
        setting(name)
            .map(|text| {
                text.parse::<u64>().with_context(|| {
                    format!("-D {prefix}{name}={text}: not a non-negative whole number")
                })
            })
            .transpose()
    };
    let bytes_per_map = match args.bytes_per_map {
        Some(bytes) => bytes,
        None => number("bytespermap")?.unwrap_or(1 << 30),
    };
    if bytes_per_map == 0 {
        bail!("the bytes per map (--bytes-per-map, -D {prefix}bytespermap) cannot be 0");
    }
    let total = match (args.size, args.maps) {
        (Some(size), _) => size,
        (None, Some(maps)) => u64::try_from(maps)
            .ok()
            .and_then(|maps| maps.checked_mul(bytes_per_map))
            .context("--maps times the bytes per map is too large")?,
        (None, None) => match (number("totalbytes")?, number("mapsperhost")?) {
            (Some(total), _) => total,
            // Hadoop's default total on a cluster of one host.
            (None, Some(maps)) => maps.checked_mul(bytes_per_map).with_context(|| {
                format!("-D {prefix}mapsperhost times the bytes per map is too large")
            })?,
            (None, None) => bail!(
                "give --size, --maps, -D {prefix}totalbytes or -D {prefix}mapsperhost: how much \
                 to write"
            ),
        },
    };
    // Hadoop: maps = total / per map; no map but bytes to write: one map of them all.
    let (maps, bytes_per_map) = match total / bytes_per_map {
        0 if total > 0 => (1, total),
        maps => (
            usize::try_from(maps).context("too many files for this machine to count")?,
            bytes_per_map,
        ),
    };
    let mut bounds = [0u32; 4];
    for (slot, (name, default)) in bounds.iter_mut().zip(generator.bounds()) {
        *slot = match setting(name) {
            None => default,
            Some(text) => text.parse::<u32>().with_context(|| {
                format!("-D {prefix}{name}={text}: not a non-negative whole number")
            })?,
        };
    }
    let [min_key, max_key, min_value, max_value] = bounds;
    let names = generator.bounds();
    for (min, max, lo, hi) in [
        (min_key, max_key, names[0].0, names[1].0),
        (min_value, max_value, names[2].0, names[3].0),
    ] {
        if max < min {
            bail!("-D {prefix}{hi}={max} is below {prefix}{lo}={min}");
        }
    }
    let mut options = SeqWriteOptions::new(generator.class(), generator.class());
    compression(&args.define, &mut options)?;
    Ok(Plan {
        generator,
        maps,
        bytes_per_map,
        key: Range {
            min: min_key,
            max: max_key,
        },
        value: Range {
            min: min_value,
            max: max_value,
        },
        options,
    })
}

/// `SequenceFileOutputFormat`'s compression settings (`RECORD` with `DefaultCodec` when only
/// `mapreduce.output.fileoutputformat.compress=true` is given, as in Hadoop).
fn compression(defines: &[(String, String)], options: &mut SeqWriteOptions) -> Result<()> {
    if let Some(compression) = crate::compression::sequence_file(defines)? {
        let (kind, codec) = compression.parse()?;
        options.compression = kind;
        options.codec = Some(codec);
    }
    Ok(())
}

/// Runs `sluice gen randomwriter` or `sluice gen randomtextwriter`.
pub(crate) fn run(generator: Generator, args: &RandomWriterArgs) -> Result<()> {
    let plan = plan(generator, args)?;
    let name = generator.name();
    let config = stores::store_config(&args.define)?;
    let output = stores::resolve("--output", &args.output, &config)?;
    let stores = stores::stores(&config, name);
    // Set up before anything is written: an existing output is refused here, and whatever
    // fails later leaves nothing at the output (the committer is aborted when dropped).
    let job = JobOutput::set_up(&stores, &output)?;
    let threads = args.threads.unwrap_or_else(default_threads);
    let status = Arc::new(JobStatus::default());
    crate::cancel_on_ctrl_c(&status)?;
    let maps = u64::try_from(plan.maps).context("too many files")?;
    let total = maps.saturating_mul(plan.bytes_per_map);
    status.set_input_bytes_total(total);
    status.enter(Phase::Map, maps);
    let display = progress::Display::start(Arc::clone(&status), args.quiet);
    let started = Instant::now();
    let words = random_text::words();
    let outcome = tasks::run_parallel(name, plan.maps, threads, &status, |index, _| {
        let file = format!("part-m-{index:05}");
        let mut rng = map_rng(args.seed, index);
        write_map(job.committer(), &file, &plan, &words, &mut rng, &status)
    })
    .and_then(|written| {
        job.commit()?;
        Ok(written)
    });
    status.enter(Phase::Done, 0);
    display.stop();
    let written = outcome.with_context(|| format!("gen {name} failed; no output was written"))?;
    if !args.quiet {
        let records: u64 = written.iter().map(|w| w.0).sum();
        let bytes: u64 = written.iter().map(|w| w.1).sum();
        eprintln!(
            "sluice: wrote {records} records ({} of keys and values, {} of SequenceFiles) in \
             {} file(s) to {output} in {:.2} s",
            human_bytes(total),
            human_bytes(bytes),
            plan.maps,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The generator of map `index` under `seed`. Its starting state is a SplitMix64 output of
/// (seed, index), not a multiple of the generator's own increment: maps started `index`
/// increments apart would give the same numbers shifted by a record or so.
fn map_rng(seed: u64, index: usize) -> SplitMix64 {
    let mut mixer = SplitMix64(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ index as u64);
    SplitMix64(mixer.next())
}

/// Records between checks for cancellation.
const RECORDS_PER_CHECK: u64 = 256;

/// Writes map `name`'s SequenceFile and commits it; returns its records and file bytes. An
/// attempt that fails is aborted.
fn write_map(
    committer: &dyn JobCommitter,
    name: &str,
    plan: &Plan,
    words: &[&[u8]],
    rng: &mut SplitMix64,
    status: &JobStatus,
) -> Result<(u64, u64)> {
    let part = PartAttempt::new(name, 0);
    let location = committer.output().join(name);
    let result = (|| {
        let file = committer
            .create_part(part, DEFAULT_WRITE_BUFFER)
            .with_context(|| format!("cannot create {location}"))?;
        let mut writer = SeqFileWriter::new(file, plan.options.clone())
            .with_context(|| format!("cannot write {location}"))?;
        let records = write_records(plan, words, rng, status, |key, value| {
            writer
                .append(key, value)
                .with_context(|| format!("cannot write {location}"))
        })?;
        let bytes = writer
            .finish()
            .and_then(|file| file.finish())
            .with_context(|| format!("cannot complete {location}"))?;
        committer.commit_task(part)?;
        Ok((records, bytes))
    })();
    if result.is_err() {
        // The whole output is aborted too; this drops the attempt's file at once.
        let _ = committer.abort_task(part);
    }
    result
}

/// Makes one map's records and hands each, serialised, to `append`; returns how many.
pub(crate) fn write_records(
    plan: &Plan,
    words: &[&[u8]],
    rng: &mut SplitMix64,
    status: &JobStatus,
    mut append: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<u64> {
    let mut key = Vec::new();
    let mut value = Vec::new();
    let mut sentence = Vec::new();
    let mut left = plan.bytes_per_map;
    let mut records = 0u64;
    while left > 0 {
        if records.is_multiple_of(RECORDS_PER_CHECK) && status.is_cancelled() {
            return Err(tasks::interrupted(plan.generator.name()));
        }
        let key_len = make(plan, plan.key, words, rng, &mut sentence, &mut key)?;
        let value_len = make(plan, plan.value, words, rng, &mut sentence, &mut value)?;
        append(&key, &value)?;
        records += 1;
        let payload = u64::try_from(key_len + value_len).context("record length")?;
        status
            .counters
            .add(Counter::MapInputBytes, payload.min(left));
        left = left.saturating_sub(payload);
    }
    Ok(records)
}

/// Makes one serialised key or value of a size drawn from `range` into `out`; returns its
/// payload's length (bytes, or the sentence's bytes with their spaces).
fn make(
    plan: &Plan,
    range: Range,
    words: &[&[u8]],
    rng: &mut SplitMix64,
    sentence: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<usize> {
    out.clear();
    let size = range.draw(rng);
    match plan.generator {
        Generator::Bytes => {
            let len = i32::try_from(size).context("a key or value over 2 GiB")?;
            out.extend_from_slice(&len.to_be_bytes());
            out.resize(4 + size, 0);
            fill_random(&mut out[4..], rng);
            Ok(size)
        }
        Generator::Text => {
            sentence.clear();
            let count = u64::try_from(words.len()).context("word count")?;
            for _ in 0..size {
                // Below `words.len()`, so it fits a usize.
                let index = usize::try_from(rng.below(count)).unwrap_or(0);
                sentence.extend_from_slice(words[index]);
                sentence.push(b' ');
            }
            writable::write_text(out, sentence).context("a sentence over 2 GiB")?;
            Ok(sentence.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use sluice_hadoop::writable::WritableReader;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RandomWriterArgs,
    }

    fn args(line: &[&str]) -> RandomWriterArgs {
        let mut all = vec!["gen", "--output", "out"];
        all.extend_from_slice(line);
        Cli::try_parse_from(all).unwrap().args
    }

    /// Every record of one map of `plan` (seed `seed`), deserialised.
    fn records(plan: &Plan, seed: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
        let words = random_text::words();
        let status = JobStatus::default();
        let mut out = Vec::new();
        write_records(plan, &words, &mut map_rng(seed, 0), &status, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
        out
    }

    fn payload(generator: Generator, serialised: &[u8]) -> Vec<u8> {
        let mut reader = WritableReader::new(serialised);
        let bytes = match generator {
            Generator::Bytes => reader.read_bytes_writable().unwrap(),
            Generator::Text => reader.read_text().unwrap(),
        };
        reader.finish("record").unwrap();
        bytes.to_vec()
    }

    #[test]
    fn hadoops_defaults_and_map_count() {
        let p = plan(Generator::Bytes, &args(&["--size", "3GiB"])).unwrap();
        assert_eq!((p.maps, p.bytes_per_map), (3, 1 << 30));
        assert_eq!(p.key, Range { min: 10, max: 1000 });
        assert_eq!(p.value, Range { min: 0, max: 20000 });
        // Less than one map's worth: one map of it all; a remainder is dropped, as in Hadoop.
        let p = plan(Generator::Bytes, &args(&["--size", "1000"])).unwrap();
        assert_eq!((p.maps, p.bytes_per_map), (1, 1000));
        let p = plan(
            Generator::Bytes,
            &args(&["--size", "2500", "--bytes-per-map", "1000"]),
        )
        .unwrap();
        assert_eq!((p.maps, p.bytes_per_map), (2, 1000));
        let p = plan(
            Generator::Text,
            &args(&[
                "-D",
                "mapreduce.randomtextwriter.totalbytes=5000",
                "-D",
                "mapreduce.randomtextwriter.bytespermap=1000",
            ]),
        )
        .unwrap();
        assert_eq!((p.maps, p.bytes_per_map), (5, 1000));
        assert_eq!(p.key, Range { min: 5, max: 10 });
        assert_eq!(p.value, Range { min: 10, max: 100 });
        // Options win over -D.
        let p = plan(
            Generator::Bytes,
            &args(&[
                "--maps",
                "4",
                "--bytes-per-map",
                "10",
                "-D",
                "mapreduce.randomwriter.bytespermap=99",
            ]),
        )
        .unwrap();
        assert_eq!((p.maps, p.bytes_per_map), (4, 10));
        // Without a total, Hadoop's maps per host on one host; a total wins over it.
        let per_host = |extra: &[&str]| {
            let mut a = vec![
                "-D",
                "mapreduce.randomtextwriter.mapsperhost=3",
                "-D",
                "mapreduce.randomtextwriter.bytespermap=100",
            ];
            a.extend(extra);
            let p = plan(Generator::Text, &args(&a)).unwrap();
            (p.maps, p.bytes_per_map)
        };
        assert_eq!(per_host(&[]), (3, 100));
        assert_eq!(
            per_host(&["-D", "mapreduce.randomtextwriter.totalbytes=500"]),
            (5, 100)
        );
        // Nothing to say how much, a zero per map, and inverted bounds are refused.
        assert!(plan(Generator::Bytes, &args(&[])).is_err());
        assert!(plan(
            Generator::Bytes,
            &args(&["--size", "1", "--bytes-per-map", "0"])
        )
        .is_err());
        let inverted = args(&["--size", "1", "-D", "mapreduce.randomwriter.maxkey=5"]);
        assert!(plan(Generator::Bytes, &inverted).is_err());
        let compressed = args(&[
            "--size",
            "1",
            "-D",
            "mapreduce.output.fileoutputformat.compress=true",
            "-D",
            "mapreduce.output.fileoutputformat.compress.type=BLOCK",
        ]);
        let p = plan(Generator::Bytes, &compressed).unwrap();
        assert_eq!(
            p.options.compression,
            sluice_io::seqfile::CompressionKind::Block
        );
        assert_eq!(p.options.codec, Some(sluice_io::seqfile::SeqCodec::Default));
        let old_names = args(&[
            "--size",
            "1",
            "-D",
            "mapred.output.compress=true",
            "-D",
            "mapred.output.compression.codec=org.apache.hadoop.io.compress.GzipCodec",
        ]);
        let p = plan(Generator::Bytes, &old_names).unwrap();
        assert_eq!(
            (p.options.compression, p.options.codec),
            (
                sluice_io::seqfile::CompressionKind::Record,
                Some(sluice_io::seqfile::SeqCodec::Gzip)
            )
        );
    }

    /// Whether `size` is one Java's `min + nextInt(max - min)` (or `min`, if equal) gives.
    fn within(size: usize, range: Range) -> bool {
        let (min, max) = (range.min as usize, range.max as usize);
        if max == min {
            size == min
        } else {
            (min..max).contains(&size)
        }
    }

    #[test]
    fn sizes_stay_within_bounds_and_fill_the_map() {
        for (generator, bounds) in [
            (
                Generator::Bytes,
                [
                    "mapreduce.randomwriter.minkey=3",
                    "mapreduce.randomwriter.maxkey=9",
                    "mapreduce.randomwriter.minvalue=5",
                    "mapreduce.randomwriter.maxvalue=6",
                ],
            ),
            (
                Generator::Text,
                [
                    "mapreduce.randomtextwriter.minwordskey=2",
                    "mapreduce.randomtextwriter.maxwordskey=4",
                    "mapreduce.randomtextwriter.minwordsvalue=7",
                    "mapreduce.randomtextwriter.maxwordsvalue=7",
                ],
            ),
        ] {
            let mut line = vec!["--size", "200000"];
            for b in &bounds {
                line.extend_from_slice(&["-D", b]);
            }
            let p = plan(generator, &args(&line)).unwrap();
            let recs = records(&p, 7);
            let mut key_sizes = std::collections::BTreeSet::new();
            let mut total = 0usize;
            for (k, v) in &recs {
                let (k, v) = (payload(generator, k), payload(generator, v));
                total += k.len() + v.len();
                let (key_size, value_size) = match generator {
                    Generator::Bytes => (k.len(), v.len()),
                    Generator::Text => {
                        // Words each followed by one space, all from Hadoop's list.
                        let words = random_text::words();
                        for s in [&k, &v] {
                            assert_eq!(s.last(), Some(&b' '));
                            for w in s[..s.len() - 1].split(|&b| b == b' ') {
                                assert!(words.contains(&w), "{w:?}");
                            }
                        }
                        (
                            k.iter().filter(|&&b| b == b' ').count(),
                            v.iter().filter(|&&b| b == b' ').count(),
                        )
                    }
                };
                key_sizes.insert(key_size);
                assert!(within(key_size, p.key), "{key_size}");
                assert!(within(value_size, p.value), "{value_size}");
            }
            // Every key size of min..max occurs (max excluded), and the map ends at the first
            // record that reaches its bytes.
            let expected: std::collections::BTreeSet<usize> =
                (p.key.min as usize..p.key.max as usize).collect();
            assert_eq!(key_sizes, expected);
            assert!(total >= 200_000);
            let (k, v) = recs.last().unwrap();
            let last = payload(generator, k).len() + payload(generator, v).len();
            assert!(total - last < 200_000);
        }
    }

    /// Maps draw their own records: no key of one map is a key of another (keys of 10 or
    /// more random bytes do not repeat by chance).
    #[test]
    fn maps_share_no_keys() {
        let p = plan(Generator::Bytes, &args(&["--size", "300000"])).unwrap();
        let words = random_text::words();
        let status = JobStatus::default();
        let mut seen = std::collections::HashSet::new();
        let mut total = 0;
        for map in 0..4 {
            write_records(&p, &words, &mut map_rng(42, map), &status, |k, _| {
                seen.insert(k.to_vec());
                total += 1;
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(seen.len(), total);
    }

    #[test]
    fn the_same_seed_gives_the_same_records() {
        for generator in [Generator::Bytes, Generator::Text] {
            let p = plan(generator, &args(&["--size", "100000"])).unwrap();
            let a = records(&p, 1);
            assert_eq!(a, records(&p, 1));
            assert_ne!(a, records(&p, 2));
        }
    }
}
