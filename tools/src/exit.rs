//! The one place where a command's outcome becomes an exit code and an error becomes a line on
//! stderr (`treelog: FILE:LINE: what is wrong`, or `treelog: FILE: ...` without a line).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (also when stdout was closed early, e.g. by `head`) |
//! | 1 | problems found (`verify`), messages at risk or dropped (`audit`), an append conflict (`append --on-conflict fail`), no hit (`search`, `secrets`) |
//! | 2 | usage error, unreadable input, I/O error: the command could not run |
//! | 3 | `redact`: after the redaction a file still holds the text |

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

/// Success.
pub const EXIT_OK: u8 = 0;
/// Problems found, or a conflict.
pub const EXIT_PROBLEMS: u8 = 1;
/// The command could not run.
pub const EXIT_FAILURE: u8 = 2;
/// A redaction's last check found the text in some file.
pub const EXIT_TEXT_REMAINS: u8 = 3;

/// The exit-code table, shown at the end of `treelog --help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success (also when stdout is closed early, e.g. `treelog tree FILE | head -1`)
  1  problems found (verify), messages at risk or dropped (audit), a conflict (append --on-conflict fail), or no hit (search, secrets)
  2  usage error, invalid input, or an I/O error: the command could not run
  3  redact: after the redaction a file still holds the text

Errors are printed to stderr as `treelog: FILE:LINE: what is wrong`.";

/// Why a command stopped.
#[derive(Debug)]
pub enum CliError {
    /// A library call failed; its message names the file.
    Library(treelog::Error),
    /// A file operation outside the library failed.
    Io {
        path: PathBuf,
        operation: &'static str,
        source: io::Error,
    },
    /// Input that cannot be used, at `location` (`FILE:LINE`, `FILE` or `<stdin>:LINE`).
    Input { location: String, message: String },
    /// Options that do not fit together.
    Usage(String),
    /// Problems were found and already reported on stdout or stderr.
    ProblemsFound { count: u64 },
    /// Some of several files failed; each was already reported.
    SomeFailed { count: u64 },
    /// Standard output was closed by its reader: not an error, the command just stops.
    StdoutClosed,
    /// `search` found no entry (exit 1, as grep's).
    NoMatch,
    /// `search` could not run: a bad query, an unreadable path, an index it could not use.
    Search(treelog::search::SearchError),
    /// A log could not be redacted (a refused match, a line that is not JSON, a busy log).
    Secrets(treelog::secrets::SecretsError),
    /// `redact`'s last check found the text in `count` files, already listed.
    TextRemains { count: u64 },
}

impl CliError {
    pub fn io(path: impl Into<PathBuf>, operation: &'static str, source: io::Error) -> CliError {
        CliError::Io {
            path: path.into(),
            operation,
            source,
        }
    }

    pub fn input(location: impl Into<String>, message: impl Into<String>) -> CliError {
        CliError::Input {
            location: location.into(),
            message: message.into(),
        }
    }

    /// An error writing to standard output: a closed pipe ends the command quietly.
    pub fn stdout(source: io::Error) -> CliError {
        if source.kind() == io::ErrorKind::BrokenPipe {
            CliError::StdoutClosed
        } else {
            CliError::io("<stdout>", "write to standard output", source)
        }
    }

    /// The file the error concerns, where it names one outside a message.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            CliError::Io { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The exit code for this outcome.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Library(treelog::Error::Conflict { .. }) => EXIT_PROBLEMS,
            CliError::ProblemsFound { .. } | CliError::NoMatch => EXIT_PROBLEMS,
            CliError::StdoutClosed => EXIT_OK,
            CliError::TextRemains { .. } => EXIT_TEXT_REMAINS,
            CliError::Library(_)
            | CliError::Secrets(_)
            | CliError::Io { .. }
            | CliError::Input { .. }
            | CliError::Usage(_)
            | CliError::SomeFailed { .. }
            | CliError::Search(_) => EXIT_FAILURE,
        }
    }

    /// Whether the error still needs a line on stderr (some were reported as they happened).
    fn needs_report(&self) -> bool {
        !matches!(
            self,
            CliError::StdoutClosed
                | CliError::ProblemsFound { .. }
                | CliError::SomeFailed { .. }
                | CliError::NoMatch
                | CliError::TextRemains { .. }
        )
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The library's advice (refresh the handle) is not the command line's.
            CliError::Library(treelog::Error::Conflict {
                path,
                leaf,
                their_id,
            }) => write!(
                f,
                "{}: another writer appended entry {their_id} after {}; nothing was written (run again with `--on-conflict follow` to append after the other writer's entries)",
                path.display(),
                match leaf {
                    Some(leaf) => format!("this session's leaf {leaf}"),
                    None => "the start of this session".into(),
                }
            ),
            CliError::Library(error) => write!(f, "{error}"),
            CliError::Io {
                path,
                operation,
                source,
            } => write!(
                f,
                "{}: cannot {operation}: {}",
                path.display(),
                treelog::io_reason(source)
            ),
            CliError::Input { location, message } => write!(f, "{location}: {message}"),
            CliError::Usage(message) => f.write_str(message),
            CliError::ProblemsFound { count } => write!(f, "{count} problem(s) found"),
            CliError::SomeFailed { count } => write!(f, "{count} file(s) failed"),
            CliError::StdoutClosed => f.write_str("standard output closed"),
            CliError::NoMatch => f.write_str("no entry matches"),
            CliError::Search(error) => write!(f, "{error}"),
            CliError::Secrets(error) => write!(f, "{error}"),
            CliError::TextRemains { count } => write!(f, "{count} file(s) still hold the text"),
        }
    }
}

impl From<treelog::search::SearchError> for CliError {
    fn from(error: treelog::search::SearchError) -> CliError {
        match error {
            treelog::search::SearchError::Log(error) => CliError::Library(error),
            error => CliError::Search(error),
        }
    }
}

impl From<treelog::secrets::SecretsError> for CliError {
    fn from(error: treelog::secrets::SecretsError) -> CliError {
        match error {
            treelog::secrets::SecretsError::Log(error) => CliError::Library(error),
            error => CliError::Secrets(error),
        }
    }
}

impl From<treelog_synth::Error> for CliError {
    fn from(error: treelog_synth::Error) -> CliError {
        match error {
            treelog_synth::Error::Library(error) => CliError::Library(error),
            treelog_synth::Error::Io {
                path,
                operation,
                source,
            } => CliError::Io {
                path,
                operation,
                source,
            },
            treelog_synth::Error::Exists(path) => {
                CliError::input(path.display().to_string(), treelog_synth::Error::EXISTS)
            }
            error @ treelog_synth::Error::InvalidJson(_) => CliError::Usage(error.to_string()),
        }
    }
}

impl From<treelog::Error> for CliError {
    fn from(error: treelog::Error) -> CliError {
        CliError::Library(error)
    }
}

/// Prints `error` to stderr in the tool's format (best effort: stderr may be closed too).
pub fn print_error(error: &impl fmt::Display) {
    crate::terminal::eprint_line(&error.to_string());
}

/// Turns a command's result into the process exit code, reporting the error if needed.
pub fn finish(result: Result<(), CliError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(error) => {
            if error.needs_report() {
                print_error(&error);
            }
            ExitCode::from(error.exit_code())
        }
    }
}

/// Exit for an argument-parsing outcome: `--help` and `--version` print to stdout and exit
/// 0; anything else is a usage error (2).
pub fn finish_parse(error: clap::Error) -> ExitCode {
    let code = if error.use_stderr() {
        EXIT_FAILURE
    } else {
        EXIT_OK
    };
    // A closed stdout while printing help is not an error either.
    let _ = error.print();
    ExitCode::from(code)
}

/// Installs the library's quiet panic hook (`treelog::quiet_panics`): a caught panic of redb
/// on a damaged sidecar must not print; a panic that reaches `main` is reported by
/// [`internal_error`].
pub fn quiet_panics() {
    treelog::quiet_panics::install();
}

/// A panic that no part of treelog caught: a bug. One line on stderr, exit 2.
pub fn internal_error() -> ExitCode {
    let what = treelog::quiet_panics::take_last().unwrap_or_else(|| "panic".into());
    crate::terminal::eprint_line(&format!(
        "internal error (a bug in treelog; please report it): {what}"
    ));
    ExitCode::from(EXIT_FAILURE)
}
