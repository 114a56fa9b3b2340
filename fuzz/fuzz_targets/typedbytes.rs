//! Typed bytes (`-io typedbytes` output of a program): `scan` over a buffer and `read_raw`
//! over a reader must agree on every input, and `to_text` depends only on the first value.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use sluice_hadoop::typedbytes::{read_raw, scan, to_text, Next, Scan, TypedBytesError};

fuzz_target!(|data: &[u8]| {
    // The first byte sets the reader's buffer size, so that values cross buffer boundaries.
    let Some((&cap, data)) = data.split_first() else {
        return;
    };
    let scanned = scan(data);
    let mut reader = BufReader::with_capacity(usize::from(cap % 16) + 1, data);
    let mut out = b"prefix".to_vec();
    let read = read_raw(&mut reader, &mut out);
    match (&scanned, &read) {
        (Ok(Scan::Value(n)), Ok(Next::Value)) => {
            assert!(*n > 0 && *n <= data.len());
            // read_raw appends exactly the value's bytes and consumes nothing beyond it.
            assert_eq!(&out[6..], &data[..*n]);
            assert_eq!(
                reader.buffer().len() + reader.into_inner().len(),
                data.len() - n
            );
        }
        (Ok(Scan::Marker), Ok(Next::Marker)) => {
            assert_eq!(data[0], 255);
            assert_eq!(out, b"prefix");
        }
        (Ok(Scan::Incomplete), Ok(Next::Eof)) => assert!(data.is_empty()),
        (Ok(Scan::Incomplete), Err(TypedBytesError::Truncated { .. })) => {
            assert!(!data.is_empty())
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("scan says {scanned:?}, read_raw says {read:?}"),
    }
    // Rendering follows Java's `toString`, which is more lenient than reading a program's
    // output (a marker inside a vector is a null there); it reads only the first value, so
    // bytes after a complete value change nothing.
    let mut text = Vec::new();
    let whole = to_text(data, &mut text).map(|()| text);
    if let Ok(Scan::Value(n)) = scanned {
        let mut alone = Vec::new();
        let first = to_text(&data[..n], &mut alone).map(|()| alone);
        match (&whole, &first) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            _ => panic!("{whole:?} but the first value alone gives {first:?}"),
        }
    }
});
