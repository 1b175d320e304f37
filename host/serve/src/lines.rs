//! Reading request lines with a bound: a line longer than the limit is consumed to its end
//! without being stored, and a large line's buffer is released afterwards.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Default of `serve --max-request-bytes`: 16 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 16 << 20;

/// A line above this size counts as large: its buffer is not kept for the next one.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// What reading one line found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// Input closed with nothing pending.
    End,
    /// A line (without its newline) is in the buffer.
    Complete,
    /// The line was longer than allowed; this many bytes were skipped (newline excluded).
    TooLong(usize),
}

/// Read one `\n`-terminated line into `buffer`, keeping at most `max` bytes. A longer line
/// is consumed to its end without being stored.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    buffer: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    let mut skipped: Option<usize> = None;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match skipped {
                Some(n) => Line::TooLong(n),
                None if buffer.is_empty() => Line::End,
                None => Line::Complete,
            });
        }
        let (chunk, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        let used = chunk.len() + usize::from(ends);
        match &mut skipped {
            Some(n) => *n += chunk.len(),
            None if buffer.len() + chunk.len() > max => {
                skipped = Some(buffer.len() + chunk.len());
                *buffer = Vec::new();
            }
            None => buffer.extend_from_slice(chunk),
        }
        input.consume(used);
        if ends {
            return Ok(match skipped {
                Some(n) => Line::TooLong(n),
                None => Line::Complete,
            });
        }
    }
}

/// Give freed heap pages back to the system after a large request (glibc keeps them).
/// Drop a large line's buffer and give freed heap pages back to the system.
pub fn release_large(buffer: &mut Vec<u8>) {
    if buffer.capacity() > KEEP_BUFFER_BYTES {
        *buffer = Vec::new();
        release_freed_memory();
    }
}

fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let mut buffer = Vec::new();
            let line = read_line(&mut reader, &mut buffer, max).await.unwrap();
            if line == Line::End {
                return out;
            }
            out.push((line, buffer));
        }
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_and_longer_ones_are_skipped() {
        let got = lines(b"short\n0123456789abc\nok\nlast", 10).await;
        assert_eq!(
            got,
            vec![
                (Line::Complete, b"short".to_vec()),
                (Line::TooLong(13), Vec::new()),
                (Line::Complete, b"ok".to_vec()),
                (Line::Complete, b"last".to_vec()),
            ]
        );
        assert_eq!(
            lines(b"0123456789", 10).await,
            vec![(Line::Complete, b"0123456789".to_vec())]
        );
        assert_eq!(
            lines(b"0123456789x", 10).await,
            vec![(Line::TooLong(11), Vec::new())]
        );
    }
}
