//! Compressed inputs (`.gz`, `.zst`/`.zstd`, `.lz4` frame, `.bz2`, chosen by case-sensitive
//! suffix) give exactly the output of their plain content: the engine reads the compressed
//! file, the reference the plain one. Multi-member/multi-frame files (cut mid-line) must be read
//! to the end, compressed files other than bzip2 must never be split (bzip2 files are split at
//! their blocks, each line read by one task), and empty ones read as empty.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::Path;

use crate::corpus::{boundary_file, random_lines, Lcg};
use crate::util::{gen_text, Case, JobRun};

/// A compressor: plain bytes in, one compressed stream out.
pub(crate) type Compress = fn(&[u8]) -> Vec<u8>;

/// The codecs: (suffix, compress function).
pub(crate) const CODECS: [(&str, Compress); 5] = [
    ("gz", gzip),
    ("zst", zstd),
    ("zstd", zstd),
    ("lz4", lz4),
    ("bz2", bzip2),
];

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub(crate) fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(data, 3).unwrap()
}

pub(crate) fn lz4(data: &[u8]) -> Vec<u8> {
    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub(crate) fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Plain content with generated text, CRLF / lone CR lines and no final terminator.
fn plain_content(scratch: &Path) -> Vec<u8> {
    let gen = scratch.join("gen");
    gen_text(&gen, "1MiB", 1, 9);
    let mut data = fs::read(gen.join("part-00000.txt")).unwrap();
    data.extend(boundary_file());
    data.extend(random_lines(&mut Lcg(11), 2000));
    data.extend_from_slice(b"\xff\xfe tail\tvalue without newline");
    data
}

/// Each codec, single and multi-member (members cut in the middle of a line), for word count,
/// sort and grep, with tiny splits and several threads (a compressed file must stay whole but
/// for a bzip2 one, whose 100 kB blocks fall in different splits).
#[test]
fn each_codec_matches_plain_content() {
    let dir = tempfile::tempdir().unwrap();
    let data = plain_content(dir.path());
    let plain = dir.path().join("plain.txt");
    fs::write(&plain, &data).unwrap();
    let cut = data.len() / 3 + 7;
    for (suffix, compress) in CODECS {
        let single = dir.path().join(format!("single.txt.{suffix}"));
        fs::write(&single, compress(&data)).unwrap();
        let mut members = compress(&data[..cut]);
        members.extend(compress(&data[cut..]));
        let multi = dir.path().join(format!("multi.txt.{suffix}"));
        fs::write(&multi, members).unwrap();
        let mut files = vec![("single", &single)];
        // Concatenated LZ4 frames: see `lz4_concatenated_frames_are_read_to_the_end`.
        if suffix != "lz4" {
            files.push(("multi", &multi));
        }
        for (kind, file) in files {
            for job in ["wordcount", "sort", "grep"] {
                Case::new(job, &[file.as_path()])
                    .reducers(2)
                    .engine(&["--threads", "2", "--split-size", "1KiB"])
                    .reference_inputs(&[&plain])
                    .check(dir.path(), &format!("{job}-{kind}-{suffix}"));
            }
        }
    }
}

/// A directory mixing every codec, plain files, empty compressed files (zero bytes but for
/// gzip, and a compressed empty stream) and an upper-case `.GZ` (plain by Hadoop's case-sensitive rule):
/// the inverted index must list each file under its own name, as if read decompressed. The
/// reference runs with `--raw` in a twin directory holding the plain contents under the same
/// relative names.
#[test]
fn mixed_codecs_in_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    let engine_root = dir.path().join("engine");
    let twin_root = dir.path().join("twin");
    let mut rng = Lcg(5);
    let mut files: Vec<(String, Vec<u8>, Vec<u8>)> = Vec::new(); // name, on disk, plain
    for (i, (suffix, compress)) in CODECS.iter().enumerate() {
        let text = random_lines(&mut rng, 300 + 50 * i);
        files.push((format!("f{i}.txt.{suffix}"), compress(&text), text));
        // A zero-byte .gz is no gzip stream and fails the job, as in Hadoop (tested in
        // `an_empty_gzip_file_fails_the_job_naming_it`); the gzip of nothing is empty.
        if *suffix != "gz" {
            files.push((format!("empty{i}.{suffix}"), Vec::new(), Vec::new()));
        }
        files.push((format!("nothing{i}.{suffix}"), compress(b""), Vec::new()));
    }
    // The suffix's case does not matter, as in Hadoop's CompressionCodecFactory.
    let shouting = b"upper case suffix is gzip too\n".to_vec();
    files.push(("LOUD.GZ".into(), gzip(&shouting), shouting));
    files.push((
        "sub/plain.txt".into(),
        b"plain ring\r\n".to_vec(),
        b"plain ring\r\n".to_vec(),
    ));
    for (name, on_disk, plain) in &files {
        for (root, bytes) in [(&engine_root, on_disk), (&twin_root, plain)] {
            let path = root.join("corpus").join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        }
    }
    let input: [OsString; 1] = ["corpus".into()];
    for job in ["invertedindex", "wordcount", "sort"] {
        let case = Case::new(job, &[Path::new("corpus")])
            .reducers(3)
            .engine(&["--threads", "2"])
            .cwd(&engine_root)
            .reference_cwd(&twin_root)
            .reference_inputs(&input)
            .raw_reference();
        case.check(dir.path(), &format!("mixed-{job}"));
    }
}

/// A `.lz4` file of two concatenated LZ4 frames (as `cat a.lz4 b.lz4` or a parallel compressor
/// makes; the frame format allows it and `lz4 -d` decodes both) must be read to the end, as
/// multi-member `.gz`, `.bz2` and `.zst` are.
#[test]

fn lz4_concatenated_frames_are_read_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.txt");
    let data = b"first frame line\nsecond line cut in the mid".to_vec();
    let rest = b"dle of a word\nthird line\n".to_vec();
    fs::write(&plain, [data.clone(), rest.clone()].concat()).unwrap();
    let multi = dir.path().join("multi.txt.lz4");
    fs::write(&multi, [lz4(&data), lz4(&rest)].concat()).unwrap();
    for job in ["wordcount", "sort"] {
        Case::new(job, &[multi.as_path()])
            .reference_inputs(&[&plain])
            .check(dir.path(), &format!("{job}-lz4-frames"));
    }
}

/// Decompresses a part file by its extension, with a decoder independent of the writer's
/// framing choices: `.deflate` is a zlib stream, as Hadoop's DefaultCodec writes.
fn decompress(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let bytes = fs::read(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::new();
    if name.ends_with(".gz") {
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
    } else if name.ends_with(".deflate") {
        flate2::read::ZlibDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
    } else if name.ends_with(".bz2") {
        bzip2::read::MultiBzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
    } else if name.ends_with(".zst") {
        out = zstd::stream::decode_all(&bytes[..]).unwrap();
    } else {
        panic!("{name}: not a compressed part file");
    }
    out
}

/// Every built-in job writes its part files compressed when Hadoop's keys ask for it (current
/// or old names; DefaultCodec when no codec is named), named with the codec's extension, each
/// holding exactly the uncompressed run's part file; a codec sluice does not write is refused
/// before anything is written.
#[test]
fn native_jobs_compress_their_part_files_as_hadoops_keys_ask() {
    let scratch = tempfile::tempdir().unwrap();
    let input = scratch.path().join("in");
    gen_text(&input, "256KiB", 3, 11);
    let rows = scratch.path().join("rows");
    let teragen = ["run", "teragen", "--quiet", "--rows", "3000", "--output"];
    let mut args: Vec<OsString> = teragen.iter().map(OsString::from).collect();
    args.push(rows.clone().into_os_string());
    crate::util::sluice(&args, None).assert_code(0, "teragen");
    let new = |codec: &str| {
        vec![
            "-D".to_string(),
            "mapreduce.output.fileoutputformat.compress=true".to_string(),
            "-D".to_string(),
            format!("mapreduce.output.fileoutputformat.compress.codec=org.apache.hadoop.io.compress.{codec}"),
        ]
    };
    // (job, its arguments, input, -D settings, the part files' extension)
    type Run<'a> = (&'a str, Vec<String>, &'a Path, Vec<String>, &'a str);
    let cases: Vec<Run> = vec![
        ("wordcount", vec![], &input, new("GzipCodec"), ".gz"),
        (
            "grep",
            vec!["--pattern".into(), "[aeiou]+".into()],
            &input,
            vec![
                "-D".into(),
                "mapred.output.compress=true".into(),
                "-D".into(),
                "mapred.output.compression.codec=org.apache.hadoop.io.compress.BZip2Codec".into(),
            ],
            ".bz2",
        ),
        ("sort", vec![], &input, new("ZStandardCodec"), ".zst"),
        (
            "invertedindex",
            vec![],
            &input,
            vec![
                "-D".into(),
                "mapreduce.output.fileoutputformat.compress=TRUE".into(),
            ],
            ".deflate",
        ),
        ("terasort", vec![], &rows, new("DeflateCodec"), ".deflate"),
    ];
    for (job, extra, from, defines, extension) in cases {
        let plain = scratch.path().join(format!("{job}-plain"));
        let packed = scratch.path().join(format!("{job}-compressed"));
        let run = |out: &Path, defines: &[String]| {
            JobRun::new(job)
                .input(from)
                .output(out)
                .args(&["--reducers", "2"])
                .args(&extra)
                .args(defines)
                .run_ok();
        };
        run(&plain, &[]);
        run(&packed, &defines);
        let parts = |dir: &Path| {
            let mut names: Vec<String> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("part-"))
                .collect();
            names.sort();
            names
        };
        let plain_parts = parts(&plain);
        let packed_parts = parts(&packed);
        let expected: Vec<String> = plain_parts
            .iter()
            .map(|n| format!("{n}{extension}"))
            .collect();
        assert_eq!(packed_parts, expected, "{job}");
        for (p, c) in plain_parts.iter().zip(&packed_parts) {
            let want = fs::read(plain.join(p)).unwrap();
            assert_eq!(decompress(&packed.join(c)), want, "{job}: {c}");
        }
        assert!(packed.join("_SUCCESS").exists(), "{job}");
    }

    let refused = scratch.path().join("refused");
    let out = JobRun::new("wordcount")
        .input(&input)
        .output(&refused)
        .args(&new("NoSuchCodec"))
        .run();
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr
            .contains("compress.codec=org.apache.hadoop.io.compress.NoSuchCodec")
            && out.stderr.contains("GzipCodec"),
        "{}",
        out.stderr
    );
    assert!(!refused.exists());
}

/// A zero-byte `.gz` among good files fails the job (Hadoop's task fails on it with
/// `EOFException`), naming the file, and leaves no output.
#[test]
fn an_empty_gzip_file_fails_the_job_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    fs::create_dir(&corpus).unwrap();
    fs::write(corpus.join("good.txt.gz"), gzip(b"some words\n")).unwrap();
    fs::write(corpus.join("cut.gz"), b"").unwrap();
    let out = dir.path().join("out");
    let run = crate::util::sluice(
        &[
            "run",
            "wordcount",
            "-q",
            "--input",
            corpus.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        None,
    );
    run.assert_code(1, "an empty .gz");
    assert!(
        run.stderr.contains("cut.gz") && run.stderr.contains("the file is empty"),
        "{}",
        run.stderr
    );
    assert!(!out.exists(), "output left behind");
}
