//! A spec that cannot give the job its submitter meant does not build, and says why.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use sluice_api::JobStatus;
use sluice_spec::{JobSpec, SequenceFileOutput, SpecError, StreamingSpec};
use sluice_streaming::StreamingError;

fn error(spec: &JobSpec) -> SpecError {
    match spec.build(Arc::new(JobStatus::default())) {
        Ok(_) => panic!("{spec:?} built"),
        Err(e) => e,
    }
}

fn streaming(args: &[&str]) -> StreamingSpec {
    StreamingSpec::new(args.iter().map(|a| a.to_string()).collect())
}

#[test]
fn a_job_needs_a_reducer() {
    for spec in [
        JobSpec::WordCount {
            reducers: 0,
            output_codec: None,
            sequence_file_input: false,
            sequence_file_output: None,
        },
        JobSpec::Sort {
            reducers: 0,
            output_codec: None,
        },
        JobSpec::SortSequenceFile {
            reducers: 0,
            key_class: "org.apache.hadoop.io.Text".into(),
            value_class: "org.apache.hadoop.io.Text".into(),
            compression: None,
        },
        JobSpec::InvertedIndex {
            reducers: 0,
            output_codec: None,
            sequence_file_input: false,
        },
        JobSpec::Grep {
            java_lines: false,
            pattern: "a".into(),
            group: 0,
            reducers: 0,
            output_codec: None,
            sequence_file_input: false,
        },
        JobSpec::TeraSort {
            reducers: 0,
            output_codec: None,
            boundaries: Vec::new(),
        },
    ] {
        assert!(
            matches!(error(&spec), SpecError::NoReducers { .. }),
            "{spec:?}"
        );
    }
}

#[test]
fn grep_needs_a_pattern_with_its_group() {
    let bad = error(&JobSpec::Grep {
        java_lines: false,
        pattern: "a(".into(),
        group: 0,
        reducers: 1,
        output_codec: None,
        sequence_file_input: false,
    });
    assert!(matches!(bad, SpecError::Pattern { .. }), "{bad:?}");
    assert!(bad.to_string().contains("\"a(\""), "{bad}");
    let group = error(&JobSpec::Grep {
        java_lines: false,
        pattern: "(a)(b)".into(),
        group: 3,
        reducers: 1,
        output_codec: None,
        sequence_file_input: false,
    });
    assert_eq!(
        group.to_string(),
        "grep: capture group 3, but the pattern has only 2 capture group(s)"
    );
}

#[test]
fn a_sequence_file_sort_needs_a_key_class_with_a_known_comparator() {
    let spec = JobSpec::SortSequenceFile {
        reducers: 1,
        key_class: "org.apache.hadoop.io.DoubleWritable".into(),
        value_class: "org.apache.hadoop.io.Text".into(),
        compression: None,
    };
    let e = error(&spec);
    assert!(matches!(e, SpecError::KeyClass(_)), "{e:?}");
    assert!(e.to_string().contains("DoubleWritable"), "{e}");
}

#[test]
fn a_sequence_file_word_count_takes_no_text_codec() {
    let e = error(&JobSpec::WordCount {
        reducers: 1,
        output_codec: Some("org.apache.hadoop.io.compress.GzipCodec".into()),
        sequence_file_input: false,
        sequence_file_output: Some(SequenceFileOutput::default()),
    });
    assert!(matches!(e, SpecError::Compression(_)), "{e:?}");
    assert!(e.to_string().contains("SequenceFile output"), "{e}");
}

#[test]
fn terasort_takes_fewer_boundaries_than_reducers() {
    let spec = JobSpec::TeraSort {
        reducers: 2,
        output_codec: None,
        boundaries: vec![b"a".to_vec(), b"b".to_vec()],
    };
    assert_eq!(
        error(&spec).to_string(),
        "terasort: 2 partition boundaries for 2 reducer(s); at most 1 fit"
    );
}

#[test]
fn a_streaming_job_builds_where_it_was_submitted() {
    let elsewhere = tempfile::tempdir().unwrap();
    let mut spec = streaming(&["-input", "in", "-output", "out", "-mapper", "cat"]);
    spec.working_dir = elsewhere.path().to_path_buf();
    let e = error(&JobSpec::Streaming(spec));
    assert!(matches!(e, SpecError::WorkingDir { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains(&format!("submitted in {}", elsewhere.path().display())),
        "{e}"
    );
}

#[test]
fn a_streaming_spec_must_describe_a_job() {
    let e = error(&JobSpec::Streaming(streaming(&["-help"])));
    assert!(matches!(e, SpecError::NotAJob), "{e:?}");
}

#[test]
fn streaming_errors_keep_their_own_message() {
    let e = error(&JobSpec::Streaming(streaming(&["-output", "out"])));
    assert!(
        matches!(e, SpecError::Streaming(StreamingError::Usage(_))),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "Required argument: -input");
    let e = error(&JobSpec::Streaming(streaming(&["-bogus"])));
    assert_eq!(e.to_string(), "Unrecognized option: -bogus");
}

/// A job id names the scratch directory: anything but Hadoop's form is refused.
#[test]
fn a_streaming_job_id_has_hadoops_form() {
    let mut spec = streaming(&["-input", "in", "-output", "out", "-mapper", "cat"]);
    spec.job_id = "job_../../x_1".into();
    let e = error(&JobSpec::Streaming(spec));
    assert!(
        matches!(e, SpecError::Streaming(StreamingError::Usage(_))),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("expected job_<digits>_<digits>"),
        "{e}"
    );
}
