//! A job as data: what any process needs to rebuild the same job.
//!
//! A [`sluice_api::Job`] is a set of closures (mapper and reducer factories) and cannot leave
//! the process that made it. A [`JobSpec`] is the description it is made from: which built-in
//! job with which parameters, or a Hadoop Streaming command line with what it takes from where
//! it was submitted. It serialises (serde; byte strings as hex), and [`JobSpec::build`] turns it
//! into the job with the same functions the `sluice` command uses, so a job built from a spec
//! that crossed to another process is the job its submitter built.
//!
//! ```text
//!  sluice run / sluice streaming ─► JobSpec ─► build ─► Job (+ TeraSort, StreamingJob) ─► run_job
//!                                      │
//!                                      └─ JSON ─► another process ─► build ─► the same Job
//! ```
//!
//! It sits between the job builders ([`sluice_jobs`], [`sluice_streaming`]) and what runs jobs
//! (the command line; a cluster's workers). Decisions made once, at submission, are in the
//! spec and are not made again by a rebuild: TeraSort's sampled partition boundaries, a
//! streaming job's id, working directory and `PATH`.
//!
//! What a spec does not hold: how the job runs ([`sluice_api::JobConfig`]: inputs and output
//! of a built-in job, memory, threads; a streaming job's come from its command line), and the
//! files a job reads (inputs, a streaming job's `-files` and `-conf` files), which a rebuilding
//! process must see at the same paths.

mod hex;
mod streaming;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_api::{Job, JobStatus};
use sluice_io::seqfile::{CompressionKind, SeqCodec};
use sluice_io::{OutputCodec, Stores};
use sluice_jobs::{RowChecksums, TeraSort};
use sluice_streaming::{StreamingError, StreamingJob};

pub use streaming::StreamingSpec;

/// A job, described by what it is built from. Serialised (serde) with its kind under `"job"`:
/// `{"job":"grep","pattern":"a+","group":0,"reducers":2}`; unknown fields are refused, since a
/// process that ignored one would not build the same job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "job", deny_unknown_fields)]
#[non_exhaustive]
pub enum JobSpec {
    /// [`sluice_jobs::wordcount`].
    #[serde(rename = "wordcount")]
    WordCount {
        /// Reduce partitions (part files); at least 1.
        reducers: usize,
        /// The Java class of the codec the part files are compressed with, as Hadoop's
        /// `FileOutputFormat` compresses them (`-D mapreduce.output.fileoutputformat.compress`);
        /// `None`: not compressed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_codec: Option<String>,
        /// Whether the input is SequenceFiles of `Text` values, each value read as a line
        /// ([`sluice_jobs::reading_text_values`]; Hadoop's `SequenceFileInputFormat`).
        #[serde(default, skip_serializing_if = "is_false")]
        sequence_file_input: bool,
        /// SequenceFile part files instead of text
        /// ([`sluice_jobs::wordcount_to_sequence_files`]; Hadoop's `SequenceFileOutputFormat`);
        /// `output_codec` must then be `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence_file_output: Option<SequenceFileOutput>,
    },
    /// [`sluice_jobs::grep`].
    #[serde(rename = "grep")]
    Grep {
        /// The regular expression (Rust regex syntax, matched against bytes).
        pattern: String,
        /// Whether lines are matched as Java strings (bytes that are not UTF-8 become U+FFFD),
        /// as Hadoop's `grep` example matches them; else as bytes.
        #[serde(default, skip_serializing_if = "is_false")]
        java_lines: bool,
        /// The capture group counted; 0 for the whole match.
        group: usize,
        /// Partitions of the counting stage; at least 1.
        reducers: usize,
        /// The Java class of the codec the part files are compressed with, as Hadoop's
        /// `FileOutputFormat` compresses them (`-D mapreduce.output.fileoutputformat.compress`);
        /// `None`: not compressed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_codec: Option<String>,
        /// Whether the input is SequenceFiles of `Text` values, each value read as a line
        /// ([`sluice_jobs::reading_text_values`]; Hadoop's `SequenceFileInputFormat`).
        #[serde(default, skip_serializing_if = "is_false")]
        sequence_file_input: bool,
    },
    /// [`sluice_jobs::sort`].
    #[serde(rename = "sort")]
    Sort {
        /// Reduce partitions (part files); at least 1.
        reducers: usize,
        /// The Java class of the codec the part files are compressed with, as Hadoop's
        /// `FileOutputFormat` compresses them (`-D mapreduce.output.fileoutputformat.compress`);
        /// `None`: not compressed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_codec: Option<String>,
    },
    /// [`sluice_jobs::sort_sequence_files`]: Hadoop's `sort` example over SequenceFiles.
    #[serde(rename = "sort-sequencefile")]
    SortSequenceFile {
        /// Reduce partitions (part files); at least 1.
        reducers: usize,
        /// The key class (a `Writable` whose comparator sluice knows).
        key_class: String,
        /// The value class, written unchanged.
        value_class: String,
        /// How the part files are compressed, as Hadoop's `SequenceFileOutputFormat` does;
        /// `None`: not at all.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compression: Option<SeqCompression>,
    },
    /// [`sluice_jobs::inverted_index`].
    #[serde(rename = "invertedindex")]
    InvertedIndex {
        /// Reduce partitions (part files); at least 1.
        reducers: usize,
        /// The Java class of the codec the part files are compressed with, as Hadoop's
        /// `FileOutputFormat` compresses them (`-D mapreduce.output.fileoutputformat.compress`);
        /// `None`: not compressed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_codec: Option<String>,
        /// Whether the input is SequenceFiles of `Text` values, each value read as a line
        /// ([`sluice_jobs::reading_text_values`]; Hadoop's `SequenceFileInputFormat`).
        #[serde(default, skip_serializing_if = "is_false")]
        sequence_file_input: bool,
    },
    /// [`sluice_jobs::terasort_job`]: TeraSort with the boundaries its sampling step
    /// ([`sluice_jobs::sample_terasort`]) picked where the job was submitted.
    #[serde(rename = "terasort")]
    TeraSort {
        /// Reduce partitions (part files); at least 1.
        reducers: usize,
        /// The partition boundaries, fewer than `reducers` (whole rows; serialised as hex).
        #[serde(with = "hex::list")]
        boundaries: Vec<Vec<u8>>,
        /// The Java class of the codec the part files are compressed with, as Hadoop's
        /// `FileOutputFormat` compresses them (`-D mapreduce.output.fileoutputformat.compress`);
        /// `None`: not compressed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_codec: Option<String>,
    },
    /// A Hadoop Streaming job ([`sluice_streaming::build_with`]).
    #[serde(rename = "streaming")]
    Streaming(StreamingSpec),
}

/// A job built from a [`JobSpec`], with what running it needs alongside.
#[non_exhaustive]
pub enum BuiltJob {
    /// Word count, grep, sort or inverted index.
    Job(Job),
    /// TeraSort, with the checksum of the rows its map tasks read.
    TeraSort(TeraSort),
    /// A streaming job, with its run configuration and scratch directory.
    Streaming(Box<StreamingJob>),
}

impl BuiltJob {
    /// The job to hand to `sluice_exec::run_job`.
    pub fn job(&self) -> &Job {
        match self {
            BuiltJob::Job(job) => job,
            BuiltJob::TeraSort(terasort) => &terasort.job,
            BuiltJob::Streaming(streaming) => &streaming.job,
        }
    }
}

/// The compression of a SequenceFile job's output: Hadoop's
/// `mapreduce.output.fileoutputformat.compress.type` and `...compress.codec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeqCompression {
    /// `RECORD` (each value compressed) or `BLOCK` (runs of records compressed together).
    pub kind: String,
    /// The codec's Java class, e.g. `org.apache.hadoop.io.compress.DefaultCodec`.
    pub codec: String,
}

impl SeqCompression {
    /// The writer's compression type and codec.
    ///
    /// # Errors
    /// [`SpecError::Compression`] for a type other than `NONE`, `RECORD` and `BLOCK`, or a
    /// codec class sluice does not write.
    pub fn parse(&self) -> Result<(CompressionKind, SeqCodec), SpecError> {
        let kind = CompressionKind::parse(&self.kind).ok_or_else(|| {
            SpecError::Compression(format!(
                "{:?} is not a SequenceFile compression type (NONE, RECORD or BLOCK)",
                self.kind
            ))
        })?;
        let codec = SeqCodec::from_class_name(&self.codec).ok_or_else(|| {
            SpecError::Compression(format!(
                "{} is not a codec sluice writes SequenceFiles with",
                self.codec
            ))
        })?;
        Ok((kind, codec))
    }
}

/// How a job writes SequenceFile part files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceFileOutput {
    /// How they are compressed, as Hadoop's `SequenceFileOutputFormat` does; `None`: not at
    /// all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<SeqCompression>,
}

/// For serde: a `false` flag is left out of the JSON.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(flag: &bool) -> bool {
    !*flag
}

/// `job`, reading SequenceFiles of `Text` values if `sequence_files` says so.
fn reading(job: Job, sequence_files: bool) -> Job {
    if sequence_files {
        sluice_jobs::reading_text_values(job)
    } else {
        job
    }
}

/// The writer's compression type and codec of `compression` (`None`: uncompressed).
fn seq_compression(
    compression: &Option<SeqCompression>,
) -> Result<(CompressionKind, SeqCodec), SpecError> {
    match compression {
        None => Ok((CompressionKind::None, SeqCodec::Default)),
        Some(c) => c.parse(),
    }
}

/// The part-file codec of Hadoop's codec class `class` (`None`: uncompressed).
///
/// # Errors
/// [`SpecError::Compression`] for a class sluice does not write.
pub fn output_codec_of(class: &Option<String>) -> Result<OutputCodec, SpecError> {
    let Some(class) = class else {
        return Ok(OutputCodec::None);
    };
    OutputCodec::from_class_name(class).ok_or_else(|| {
        SpecError::Compression(format!(
            "{class} is not a codec sluice writes part files with (it writes {})",
            OutputCodec::class_names().join(", ")
        ))
    })
}

/// `job`, its part files compressed with the codec of class `class`.
fn compressed(mut job: Job, class: &Option<String>) -> Result<Job, SpecError> {
    job.output_codec = output_codec_of(class)?;
    Ok(job)
}

/// Why a spec does not build.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A job with no reduce partitions.
    #[error("{job}: the number of reducers must be at least 1")]
    NoReducers {
        /// The job's name.
        job: &'static str,
    },
    /// Grep's pattern is not a regular expression.
    #[error("grep: bad pattern {pattern:?}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why it does not compile.
        #[source]
        source: regex::Error,
    },
    /// Grep counts a capture group its pattern does not have.
    #[error("grep: capture group {group}, but the pattern has only {groups} capture group(s)")]
    Group {
        /// The group asked for.
        group: usize,
        /// The pattern's capture groups.
        groups: usize,
    },
    /// A SequenceFile sort of keys whose comparator sluice does not know.
    #[error(
        "sort: keys of class {0} cannot be sorted (sluice knows the comparators of Text, \
         BytesWritable, IntWritable, LongWritable, VIntWritable, VLongWritable and \
         BooleanWritable)"
    )]
    KeyClass(String),
    /// An output compression type or codec sluice does not write, or that does not fit the
    /// output.
    #[error("output compression: {0}")]
    Compression(String),
    /// TeraSort with more boundaries than its reducers can take.
    #[error(
        "terasort: {boundaries} partition boundaries for {reducers} reducer(s); at most {} fit",
        reducers.saturating_sub(1)
    )]
    Boundaries {
        /// Boundaries in the spec.
        boundaries: usize,
        /// Reducers in the spec.
        reducers: usize,
    },
    /// A streaming command line that asks for help (`-help`, `-info`) rather than a job.
    #[error("the streaming command line asks for help, not for a job")]
    NotAJob,
    /// A streaming job built in another directory than the one it was submitted from: its
    /// relative paths would name other files.
    #[error(
        "the streaming job was submitted in {}, but this process runs in {}: its relative paths \
         would name other files",
        submitted.display(), current.display()
    )]
    WorkingDir {
        /// The spec's working directory.
        submitted: std::path::PathBuf,
        /// This process's.
        current: std::path::PathBuf,
    },
    /// The streaming job does not build (its own message, as `sluice streaming` reports it).
    #[error(transparent)]
    Streaming(#[from] StreamingError),
}

impl JobSpec {
    /// The local files the job reads from the machine it is submitted from, besides its
    /// input, as its description names them: a streaming job's `-conf`, `-files` and `-file`
    /// paths (see [`StreamingSpec::local_files`]); none for the built-in jobs.
    ///
    /// # Errors
    /// [`SpecError::Streaming`] for a streaming command line that does not parse.
    pub fn local_files(&self) -> Result<Vec<String>, SpecError> {
        match self {
            JobSpec::Streaming(spec) => spec.local_files(),
            _ => Ok(Vec::new()),
        }
    }

    /// Builds the job. `status` is the job's live status: a streaming job's programs report
    /// counters and status lines there; the built-in jobs do not use it.
    ///
    /// # Errors
    /// A parameter out of range ([`SpecError::NoReducers`], [`SpecError::Group`],
    /// [`SpecError::Boundaries`]), a bad grep pattern, or a streaming job that does not build
    /// (see [`StreamingSpec::build`]).
    pub fn build(&self, status: Arc<JobStatus>) -> Result<BuiltJob, SpecError> {
        self.build_in(&Stores::local(), status)
    }

    /// [`JobSpec::build`] for a job whose data is on `stores` (local files, and the remote
    /// stores a caller connected): a streaming job checks its input and output there.
    ///
    /// # Errors
    /// As [`JobSpec::build`].
    pub fn build_in(&self, stores: &Stores, status: Arc<JobStatus>) -> Result<BuiltJob, SpecError> {
        self.build_with(stores, status, RowChecksums::Counted)
    }

    /// [`JobSpec::build_in`] for a cluster worker, which runs some of the job's tasks and
    /// reports their counters, not what else their job keeps: TeraSort's map tasks do not
    /// checksum their rows there ([`RowChecksums::Skipped`]).
    ///
    /// # Errors
    /// As [`JobSpec::build`].
    pub fn build_for_worker(
        &self,
        stores: &Stores,
        status: Arc<JobStatus>,
    ) -> Result<BuiltJob, SpecError> {
        self.build_with(stores, status, RowChecksums::Skipped)
    }

    fn build_with(
        &self,
        stores: &Stores,
        status: Arc<JobStatus>,
        checksums: RowChecksums,
    ) -> Result<BuiltJob, SpecError> {
        let reducers = |job: &'static str, reducers: usize| {
            if reducers == 0 {
                Err(SpecError::NoReducers { job })
            } else {
                Ok(reducers)
            }
        };
        Ok(match self {
            JobSpec::WordCount {
                reducers: r,
                output_codec,
                sequence_file_input,
                sequence_file_output,
            } => {
                let r = reducers("wordcount", *r)?;
                let job = match sequence_file_output {
                    None => compressed(sluice_jobs::wordcount(r), output_codec)?,
                    Some(_) if output_codec.is_some() => return Err(SpecError::Compression(
                        "wordcount: a text codec given for SequenceFile output (a SequenceFile \
                             compresses inside, as its compression says)"
                            .into(),
                    )),
                    Some(output) => {
                        let (kind, codec) = seq_compression(&output.compression)?;
                        sluice_jobs::wordcount_to_sequence_files(r, kind, codec)
                    }
                };
                BuiltJob::Job(reading(job, *sequence_file_input))
            }
            JobSpec::Grep {
                pattern,
                java_lines,
                group,
                reducers: r,
                output_codec,
                sequence_file_input,
            } => {
                let r = reducers("grep", *r)?;
                let regex =
                    regex::bytes::Regex::new(pattern).map_err(|source| SpecError::Pattern {
                        pattern: pattern.clone(),
                        source,
                    })?;
                let groups = regex.captures_len() - 1;
                if *group > groups {
                    return Err(SpecError::Group {
                        group: *group,
                        groups,
                    });
                }
                BuiltJob::Job(reading(
                    compressed(
                        sluice_jobs::grep_lines(
                            regex,
                            *group,
                            r,
                            if *java_lines {
                                sluice_jobs::GrepLines::JavaStrings
                            } else {
                                sluice_jobs::GrepLines::Bytes
                            },
                        ),
                        output_codec,
                    )?,
                    *sequence_file_input,
                ))
            }
            JobSpec::Sort {
                reducers: r,
                output_codec,
            } => BuiltJob::Job(compressed(
                sluice_jobs::sort(reducers("sort", *r)?),
                output_codec,
            )?),
            JobSpec::SortSequenceFile {
                reducers: r,
                key_class,
                value_class,
                compression,
            } => {
                let r = reducers("sort", *r)?;
                let (kind, codec) = seq_compression(compression)?;
                BuiltJob::Job(
                    sluice_jobs::sort_sequence_files(r, key_class, value_class, kind, codec)
                        .ok_or_else(|| SpecError::KeyClass(key_class.clone()))?,
                )
            }
            JobSpec::InvertedIndex {
                reducers: r,
                output_codec,
                sequence_file_input,
            } => BuiltJob::Job(reading(
                compressed(
                    sluice_jobs::inverted_index(reducers("invertedindex", *r)?),
                    output_codec,
                )?,
                *sequence_file_input,
            )),
            JobSpec::TeraSort {
                reducers: r,
                boundaries,
                output_codec,
            } => {
                let r = reducers("terasort", *r)?;
                if boundaries.len() >= r {
                    return Err(SpecError::Boundaries {
                        boundaries: boundaries.len(),
                        reducers: r,
                    });
                }
                let mut terasort = sluice_jobs::terasort_job(boundaries.clone(), r, checksums);
                terasort.job.output_codec = output_codec_of(output_codec)?;
                BuiltJob::TeraSort(terasort)
            }
            JobSpec::Streaming(spec) => {
                BuiltJob::Streaming(Box::new(spec.build_in(stores, status)?))
            }
        })
    }
}
