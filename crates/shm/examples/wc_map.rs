//! Word count's map side as an external program written in Rust: `word<TAB>1` for every word
//! of every line, words split as Hadoop's WordCount splits them (space, tab, newline, carriage
//! return, form feed). Over shared memory under `sluice streaming -io shm`; over stdin and
//! stdout anywhere else.
//!
//! ```text
//! cargo build --release -p sluice-shm --example wc_map
//! sluice streaming -io shm -input corpus/ -output out/ \
//!     -mapper target/release/examples/wc_map -reducer clients/c/build/wc_reduce
//! ```

use std::io::{BufRead, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut channel = match sluice_shm::Channel::open() {
        Ok(channel) => channel,
        Err(e) => {
            // The protocol's status for a client that cannot attach.
            eprintln!("wc_map: cannot attach to the shared memory: {e}");
            return ExitCode::from(2);
        }
    };
    match count(&mut channel).and_then(|()| channel.close()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wc_map: {e}");
            ExitCode::FAILURE
        }
    }
}

fn count(channel: &mut sluice_shm::Channel) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut out = Vec::new();
    while channel.read_until(b'\n', &mut line)? > 0 {
        let words = line
            .split(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'))
            .filter(|w| !w.is_empty());
        for word in words {
            out.extend_from_slice(word);
            out.extend_from_slice(b"\t1\n");
        }
        channel.write_all(&out)?;
        out.clear();
        line.clear();
    }
    Ok(())
}
