//! Why a `treelog-dev` command stopped: one line of text, printed by `main`.

use std::fmt;
use std::path::Path;

#[derive(Debug)]
pub struct Error(String);

impl Error {
    pub fn io(path: impl AsRef<Path>, operation: &str, source: std::io::Error) -> Error {
        Error(format!(
            "{}: cannot {operation}: {}",
            path.as_ref().display(),
            treelog::io_reason(&source)
        ))
    }

    pub fn input(location: impl fmt::Display, message: impl fmt::Display) -> Error {
        Error(format!("{location}: {message}"))
    }

    pub fn usage(message: impl Into<String>) -> Error {
        Error(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<treelog::Error> for Error {
    fn from(error: treelog::Error) -> Error {
        Error(error.to_string())
    }
}

impl From<treelog_synth::Error> for Error {
    fn from(error: treelog_synth::Error) -> Error {
        Error(error.to_string())
    }
}
