//! A spec survives JSON exactly: every variant, byte strings that are not UTF-8 included.

#![allow(clippy::unwrap_used)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use sluice_spec::{JobSpec, SeqCompression, SequenceFileOutput, StreamingSpec};

fn round_trip(spec: &JobSpec) -> JobSpec {
    let json = serde_json::to_string(spec).unwrap();
    let back: JobSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, spec, "{json}");
    // And once more from the pretty form, which a person might edit.
    let pretty = serde_json::to_string_pretty(spec).unwrap();
    assert_eq!(&serde_json::from_str::<JobSpec>(&pretty).unwrap(), spec);
    back
}

fn streaming(args: &[&str]) -> StreamingSpec {
    StreamingSpec::new(args.iter().map(|a| a.to_string()).collect())
}

#[test]
fn every_variant_survives_a_round_trip() {
    let all = [
        JobSpec::WordCount {
            reducers: 3,
            output_codec: None,
            sequence_file_input: false,
            sequence_file_output: None,
        },
        JobSpec::Grep {
            java_lines: false,
            pattern: r"(\w+)é\t[^\x00-\x1f]*".to_string(),
            group: 1,
            reducers: 2,
            output_codec: None,
            sequence_file_input: false,
        },
        JobSpec::WordCount {
            reducers: 1,
            output_codec: None,
            sequence_file_input: true,
            sequence_file_output: Some(SequenceFileOutput {
                compression: Some(SeqCompression {
                    kind: "BLOCK".into(),
                    codec: "org.apache.hadoop.io.compress.GzipCodec".into(),
                }),
            }),
        },
        JobSpec::Sort {
            reducers: 1,
            output_codec: None,
        },
        JobSpec::SortSequenceFile {
            reducers: 2,
            key_class: "org.apache.hadoop.io.BytesWritable".into(),
            value_class: "org.apache.hadoop.io.Text".into(),
            compression: None,
        },
        JobSpec::InvertedIndex {
            reducers: 4,
            output_codec: None,
            sequence_file_input: false,
        },
        JobSpec::TeraSort {
            reducers: 4,
            output_codec: None,
            boundaries: vec![
                vec![0x00, 0xff, 0xfe, b'\n', b'"', b'\\'],
                (0..=255).collect(),
                vec![0xc3, 0x28], // not UTF-8
            ],
        },
        JobSpec::TeraSort {
            reducers: 1,
            output_codec: None,
            boundaries: Vec::new(),
        },
        JobSpec::Streaming(streaming(&[
            "-D",
            "mapreduce.job.reduces=2",
            "-input",
            "in dir/a b.txt",
            "-output",
            "out",
            "-mapper",
            "cat",
            "-reducer",
            "wc -l",
            "-cmdenv",
            "LANG=C \"quoted\" ü",
        ])),
        JobSpec::Streaming(streaming(&[])),
    ];
    for spec in &all {
        round_trip(spec);
    }
}

#[test]
fn a_streaming_spec_holds_the_submission() {
    let spec = streaming(&["-input", "a", "-output", "b", "-mapper", "cat"]);
    assert_eq!(spec.working_dir, std::env::current_dir().unwrap());
    assert_eq!(spec.path, std::env::var("PATH").ok());
    assert!(spec.job_id.starts_with("job_"), "{}", spec.job_id);
    assert_eq!(spec.submission().job_id, spec.job_id);
}

#[test]
fn a_working_directory_that_is_not_utf8_survives() {
    let mut spec = streaming(&["-input", "a"]);
    spec.working_dir = PathBuf::from(OsString::from_vec(b"/tmp/caf\xe9/\xff".to_vec()));
    spec.path = None;
    let json = serde_json::to_string(&JobSpec::Streaming(spec.clone())).unwrap();
    assert!(
        json.contains(r#""working_dir":{"hex":"2f746d702f636166e92fff"}"#),
        "{json}"
    );
    assert_eq!(
        round_trip(&JobSpec::Streaming(spec.clone())),
        JobSpec::Streaming(spec)
    );
}

/// The format is stable: what one version writes, another reads.
#[test]
fn the_json_is_plain() {
    let json = |spec: &JobSpec| serde_json::to_string(spec).unwrap();
    assert_eq!(
        json(&JobSpec::WordCount {
            reducers: 2,
            output_codec: None,
            sequence_file_input: false,
            sequence_file_output: None,
        }),
        r#"{"job":"wordcount","reducers":2}"#
    );
    assert_eq!(
        json(&JobSpec::Grep {
            java_lines: false,
            pattern: "a(b)".into(),
            group: 1,
            reducers: 1,
            output_codec: None,
            sequence_file_input: false,
        }),
        r#"{"job":"grep","pattern":"a(b)","group":1,"reducers":1}"#
    );
    assert_eq!(
        json(&JobSpec::InvertedIndex {
            reducers: 1,
            output_codec: None,
            sequence_file_input: false,
        }),
        r#"{"job":"invertedindex","reducers":1}"#
    );
    assert_eq!(
        json(&JobSpec::WordCount {
            reducers: 1,
            output_codec: None,
            sequence_file_input: true,
            sequence_file_output: Some(SequenceFileOutput::default()),
        }),
        r#"{"job":"wordcount","reducers":1,"sequence_file_input":true,"sequence_file_output":{}}"#
    );
    assert_eq!(
        json(&JobSpec::TeraSort {
            reducers: 3,
            output_codec: None,
            boundaries: vec![vec![0x00, 0xab], vec![0xff]]
        }),
        r#"{"job":"terasort","reducers":3,"boundaries":["00ab","ff"]}"#
    );
    let mut spec = streaming(&["-mapper", "cat"]);
    spec.working_dir = "/home/me".into();
    spec.path = Some("/usr/bin:/bin".into());
    spec.job_id = "job_1_0001".into();
    assert_eq!(
        json(&JobSpec::Streaming(spec)),
        r#"{"job":"streaming","args":["-mapper","cat"],"working_dir":"/home/me","path":"/usr/bin:/bin","job_id":"job_1_0001"}"#
    );
}

#[test]
fn malformed_specs_are_refused() {
    let error = |json: &str| {
        serde_json::from_str::<JobSpec>(json)
            .unwrap_err()
            .to_string()
    };
    assert!(error(r#"{"job":"wordcount"}"#).contains("reducers"));
    assert!(error(r#"{"job":"wordcount","reducers":1,"combiner":true}"#).contains("combiner"));
    assert!(error(r#"{"job":"bigrams","reducers":1}"#).contains("bigrams"));
    assert!(error(r#"{"job":"terasort","reducers":2,"boundaries":["abc"]}"#).contains("odd"));
    assert!(error(r#"{"job":"terasort","reducers":2,"boundaries":["zz"]}"#).contains("hex"));
    assert!(error(
        r#"{"job":"streaming","args":[],"working_dir":"/","path":null,"job_id":"job_1_1","env":{}}"#
    )
    .contains("env"));
    assert!(error(
        r#"{"job":"streaming","args":[],"working_dir":{"hex":"2f","x":1},"path":null,"job_id":"job_1_1"}"#
    )
    .contains("expected a path"));
}
