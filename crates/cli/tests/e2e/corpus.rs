//! Hand-made input corpora. The messy one gathers every input oddity the line reader, the
//! tokenizer, input discovery and the partitioner must get right; the boundary file places line
//! terminators exactly around 1 KiB split boundaries.

use std::fs;
use std::path::{Path, PathBuf};

/// A tiny deterministic generator (64-bit LCG), so corpora are the same on every run.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn write(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// Appends filler (words, digits, a tab, never a terminator) until `buf` is `len` bytes long.
fn fill_to(buf: &mut Vec<u8>, len: usize) {
    const FILLER: &[u8] = b"lorem ipsum  dolor\tsit amet testing 42 going dfs.data ";
    let mut i = 0;
    while buf.len() < len {
        buf.push(FILLER[i % FILLER.len()]);
        i += 1;
    }
}

/// Random lines of letters, digits, spaces, tabs and form feeds, ended by `\n`, `\r\n` or a
/// lone `\r` at random (and sometimes empty).
pub(crate) fn random_lines(rng: &mut Lcg, lines: usize) -> Vec<u8> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz   ing ing\t0123456789.\x0c";
    let mut out = Vec::new();
    for _ in 0..lines {
        let len = rng.below(90) as usize;
        for _ in 0..len {
            out.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]);
        }
        match rng.below(3) {
            0 => out.extend_from_slice(b"\n"),
            1 => out.extend_from_slice(b"\r\n"),
            _ => out.extend_from_slice(b"\r"),
        }
    }
    out
}

/// A file whose terminators sit exactly on and around multiples of 1024 (the split boundaries
/// of `--split-size 1KiB`): `\r\n` straddling a boundary, a lone `\r` as the last byte of a
/// split, a line starting exactly at a split start, a `\n` as the first byte of a split, empty
/// lines and `\r\r` across a boundary, a line spanning several splits; then random lines, and
/// no final terminator.
pub(crate) fn boundary_file() -> Vec<u8> {
    let mut b = Vec::new();
    fill_to(&mut b, 1023);
    b.extend_from_slice(b"\r\n"); // \r at 1023, \n at 1024
    fill_to(&mut b, 2047);
    b.extend_from_slice(b"\rnext starts at 2048"); // lone \r ends a split
    fill_to(&mut b, 3071);
    b.extend_from_slice(b"\nline at 3072"); // a line starting exactly at a split start
    fill_to(&mut b, 4096);
    b.extend_from_slice(b"\nafter 4096"); // \n as first byte of a split
    fill_to(&mut b, 6144);
    b.extend_from_slice(b"\r\nsplit 6"); // \r\n as the first two bytes of a split
    fill_to(&mut b, 7166);
    b.extend_from_slice(b"\n\n\n\nempties"); // empty lines across 7168
    fill_to(&mut b, 8191);
    b.extend_from_slice(b"\r\r\rcrs"); // \r\r across 8192
    fill_to(&mut b, 9000);
    b.push(b'\n');
    fill_to(&mut b, 12_500); // one line over several splits
    b.push(b'\r');
    b.extend(random_lines(&mut Lcg(7), 500));
    b.extend_from_slice(b"the end, without terminator");
    b
}

/// Words that only hidden files contain: they must never reach any output.
pub(crate) const HIDDEN_WORDS: [&str; 5] = [
    "HIDDENWORD",
    "DOTWORD",
    "HIDDENLOGS",
    "DOTGITWORD",
    "SUCCESSWORD",
];

/// Writes the messy corpus into `dir/corpus` and returns that directory. With `huge_line`,
/// it also holds a file with a 10 MiB line of words and a 1 MiB word (too slow to read with
/// tiny splits: every split inside the line scans to its end).
pub(crate) fn messy_corpus(dir: &Path, huge_line: bool) -> PathBuf {
    let root = dir.join("corpus");
    fs::create_dir_all(&root).unwrap();
    write(
        &root.join("a.txt"),
        b"hello world\r\nfoo  bar\rbaz\tqux\x0cquux\n\n   many    spaces   \x0c\x0cff  \n\
          singing and ringing 2024\nlast line no newline",
    );
    let mut crlf = Vec::new();
    for i in 0..300 {
        crlf.extend_from_slice(
            format!("key{}\tvalue {i} testing going\tmore\r\n", i % 17).as_bytes(),
        );
    }
    write(&root.join("crlf.txt"), &crlf);
    write(
        &root.join("cr.txt"),
        b"alpha beta\rgamma\r\rdelta sing\rkey3\tfrom cr file\r",
    );
    write(
        &root.join("nonutf8.txt"),
        b"\xff\xfe caf\xc3\xa9 \x80abc\x00def\tvalue\twith\ttabs\n\xc3\x28 \xa0\xa1 ring\xffing\n\
          vertical\x0btab word\n\xe9t\xe9 \xe9t\xe9 ZZ 99 \x7f\n",
    );
    write(
        &root.join("tabs.txt"),
        b"k1\tv1\tmore\tfields\nk1\tsecond\n\tleading tab\nk0\tx\nk1\nk1\tthird\n\n",
    );
    write(&root.join("empty.txt"), b"");
    write(&root.join("only_newlines.txt"), b"\n\n\r\n\r");
    write(
        &root.join("sub/deep/c.txt"),
        b"dfs.replication 3\ndfs.block.size 134217728 dfs.x\ndfsX 12.5 and 7.25\n",
    );
    write(
        &root.join("sub/deep/key.txt"),
        b"k1\tfrom sub\nk0\tfrom sub\n",
    );
    write(
        &root.join("Upper.txt"),
        b"Zebra apple Apple zebra k1\tupper\n",
    );
    fs::create_dir_all(root.join("emptydir")).unwrap();
    fs::create_dir_all(root.join("sub/empty_sub")).unwrap();
    write(&root.join("_hidden.txt"), b"HIDDENWORD k1\thidden\n");
    write(&root.join(".dotfile"), b"DOTWORD k1\tdot\n");
    write(&root.join("sub/_logs/x.txt"), b"HIDDENLOGS\n");
    write(&root.join("sub/.git/y.txt"), b"DOTGITWORD\n");
    write(&root.join("_SUCCESS"), b"SUCCESSWORD\n");
    write(&root.join("boundary.txt"), &boundary_file());
    if huge_line {
        let mut huge = b"before the huge line\n".to_vec();
        let mut i = 0u32;
        while huge.len() < 10 << 20 {
            huge.extend_from_slice(format!("w{} ", i % 5000).as_bytes());
            if i.is_multiple_of(997) {
                huge.extend_from_slice(b"ringing\t");
            }
            i += 1;
        }
        huge.extend_from_slice(b"\r\n");
        // Not letters or digits: Python's backtracking `[a-z]+ing` would be quadratic on it.
        huge.extend(std::iter::repeat_n(b'Q', 1 << 20));
        huge.extend_from_slice(b"\nafter huge\n");
        write(&root.join("huge.txt"), &huge);
    }
    root
}
