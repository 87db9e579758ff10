//! What the timing probes share: usage text, argument parsing and errors that name what went
//! wrong (a probe prints `NAME: what is wrong` and its usage, and exits 2; it never panics on
//! a bad argument or a bad file).
// Each probe uses only some of these helpers.
#![allow(dead_code)]

use std::fmt::Display;
use std::process::exit;

/// A probe's command line, as its usage text shows it.
pub struct Probe {
    /// The example's name (`cargo run -p treelog-dev --release --example NAME`).
    pub name: &'static str,
    /// The arguments after the name, e.g. `FILE [N]`.
    pub arguments: &'static str,
    /// What the probe measures, and what each argument means.
    pub about: &'static str,
}

impl Probe {
    /// The arguments after the program name; `-h`/`--help` prints the usage and exits 0, and
    /// more than `max` arguments is a usage error.
    pub fn args(&self, max: usize) -> Vec<String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if args.iter().any(|arg| arg == "-h" || arg == "--help") {
            println!("{}", self.usage());
            exit(0);
        }
        if args.len() > max {
            self.usage_error(format!("unexpected argument {:?}", args[max]));
        }
        args
    }

    fn usage(&self) -> String {
        format!(
            "usage: cargo run -p treelog-dev --release --example {} -- {}\n\n{}",
            self.name, self.arguments, self.about
        )
    }

    /// Prints `message` and the usage on stderr and exits 2 (bad usage).
    pub fn usage_error(&self, message: impl Display) -> ! {
        eprintln!("{}: {message}\n\n{}", self.name, self.usage());
        exit(2)
    }

    /// The required argument at `index`, named `what` in the error when it is missing.
    pub fn required(&self, args: &[String], index: usize, what: &str) -> String {
        match args.get(index) {
            Some(arg) => arg.clone(),
            None => self.usage_error(format!("missing {what}")),
        }
    }

    /// The required path at `index`, which must name an existing file (a probe timing a
    /// missing log would time an empty session).
    pub fn existing_file(&self, args: &[String], index: usize, what: &str) -> std::path::PathBuf {
        let path = std::path::PathBuf::from(self.required(args, index, what));
        if !path.is_file() {
            self.usage_error(format!("{}: no such file", path.display()));
        }
        path
    }

    /// The number at `index`, or `default` when absent; anything but a number is an error.
    pub fn number(&self, args: &[String], index: usize, what: &str, default: usize) -> usize {
        match args.get(index) {
            None => default,
            Some(arg) => arg.parse().unwrap_or_else(|_| {
                self.usage_error(format!("{what} must be a whole number, got {arg:?}"))
            }),
        }
    }

    /// The value of `result`, or an exit 2 with `doing` and the error (which names the file).
    pub fn check<T, E: Display>(&self, result: Result<T, E>, doing: &str) -> T {
        result.unwrap_or_else(|error| {
            eprintln!("{}: {doing}: {error}", self.name);
            exit(2)
        })
    }
}
