//! Child processes of the CLI tests: a command run with its standard input given.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `command` with `stdin` written to its standard input (then closed) and its output
/// captured.
pub fn output_with_stdin(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn treelog");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("wait for treelog")
}
