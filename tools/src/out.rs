//! Buffered standard output that turns a closed pipe into [`CliError::StdoutClosed`].

use std::io::{BufWriter, Stdout, Write};

use crate::exit::CliError;

/// Standard output for one command. Every write error becomes a [`CliError`]; callers flush
/// explicitly where a line must be seen before the next step (e.g. `append` ids).
pub struct Out {
    inner: BufWriter<Stdout>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            inner: BufWriter::with_capacity(64 * 1024, std::io::stdout()),
        }
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: &str) -> Result<(), CliError> {
        self.inner
            .write_all(text.as_bytes())
            .and_then(|()| self.inner.write_all(b"\n"))
            .map_err(CliError::stdout)
    }

    /// Writes `text` followed by a newline unless it already ends with one.
    pub fn text_block(&mut self, text: &str) -> Result<(), CliError> {
        if text.ends_with('\n') {
            self.inner
                .write_all(text.as_bytes())
                .map_err(CliError::stdout)
        } else {
            self.line(text)
        }
    }

    pub fn flush(&mut self) -> Result<(), CliError> {
        self.inner.flush().map_err(CliError::stdout)
    }
}
