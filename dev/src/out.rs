//! Buffered standard output for the commands.

use std::io::{BufWriter, Stdout, Write};

use crate::error::Error;

/// Buffered standard output; a write error stops the command.
pub struct Out {
    inner: BufWriter<Stdout>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            inner: BufWriter::new(std::io::stdout()),
        }
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: &str) -> Result<(), Error> {
        writeln!(self.inner, "{text}").map_err(|e| Error::io("<stdout>", "write to stdout", e))
    }

    pub fn flush(&mut self) -> Result<(), Error> {
        self.inner
            .flush()
            .map_err(|e| Error::io("<stdout>", "write to stdout", e))
    }
}
